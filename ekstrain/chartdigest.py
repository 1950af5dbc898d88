"""A chart's identity by its content: the files helm reads, not the archive's bytes.

A chart archive is a gzip'd tar of ``<chart>/Chart.yaml``, ``values*.yaml``, ``templates/``, ``crds/``, ... Two
packagings of the same source (``helm package`` on another machine, a release pipeline, an OCI push) differ in
tar metadata (mtime, uid/gid, owner names, member order) and gzip level, so their sha256 differ although helm
renders the same objects. What helm renders from is the regular files' paths and bytes
(https://github.com/helm/helm/blob/v4.1.4/pkg/chart/loader/archive.go: it reads each regular file's name and
content, drops the first path component and ignores everything else), so that is what is digested here:

- :func:`chart_files`: path relative to the chart root (``templates/deployment.yaml``) -> sha256 of its bytes;
- :func:`files_digest`: sha256 of those pairs as sorted ``<sha256>  <path>`` lines (the ``sha256sum`` format).

``scripts/chart-pins.tsv`` pins :func:`files_digest` of every reference archive and ``scripts/chart-files.tsv``
every file's sha256, so a refused archive names the file that differs.
"""

from __future__ import annotations

import hashlib
import tarfile
from collections.abc import Mapping
from os import PathLike


class NotAChart(ValueError):
    """An archive whose members do not all lie under one chart directory."""


def chart_files(archive: str | PathLike[str]) -> dict[str, str]:
    """Path relative to the chart root -> sha256, for every regular file of the chart archive ``archive``."""
    out: dict[str, str] = {}
    roots: set[str] = set()
    with tarfile.open(archive) as tgz:
        for member in tgz:
            if not member.isfile():
                continue
            name = member.name.replace("\\", "/").lstrip("./")
            root, _, rel = name.partition("/")
            if not rel:
                raise NotAChart(f"{archive}: {member.name} is not inside the chart directory")
            roots.add(root)
            data = tgz.extractfile(member)
            out[rel] = hashlib.sha256(data.read() if data else b"").hexdigest()
    if len(roots) > 1:
        raise NotAChart(f"{archive}: more than one top-level directory ({sorted(roots)})")
    return out


def files_digest(files: Mapping[str, str]) -> str:
    """The one digest of a chart's files (independent of packaging)."""
    body = "".join(f"{files[path]}  {path}\n" for path in sorted(files))
    return hashlib.sha256(body.encode()).hexdigest()


def differences(want: Mapping[str, str], got: Mapping[str, str]) -> list[str]:
    """Each file that differs, is missing or is extra, as ``<path> (changed|missing|not in the pinned chart)``."""
    out = []
    for path in sorted(set(want) | set(got)):
        if path not in got:
            out.append(f"{path} (missing)")
        elif path not in want:
            out.append(f"{path} (not in the pinned chart)")
        elif want[path] != got[path]:
            out.append(f"{path} (changed: sha256 {got[path][:12]}, pinned {want[path][:12]})")
    return out
