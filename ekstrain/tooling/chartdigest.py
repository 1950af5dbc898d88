"""A chart's identity by its content: the files helm reads, not the archive's bytes.

A chart archive is a gzip'd tar of ``<chart>/Chart.yaml``, ``values*.yaml``, ``templates/``, ``crds/``, ... Two
packagings of the same source (``helm package`` on another machine, a release pipeline, an OCI push) differ in
tar metadata (mtime, uid/gid, owner names, member order) and gzip level, so their sha256 differ although helm
renders the same objects. What helm renders from is the regular files' paths and bytes
(https://github.com/helm/helm/blob/v4.1.4/pkg/chart/loader/archive.go: it reads each regular file's name and
content, drops the first path component and skips only directories and pax headers), so that is what is
digested here, and an archive with any other member type is refused (:func:`member_problem`):

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
    """An archive whose members do not all lie under one chart directory, or that carries a member this digest
    does not account for (a link, a device, a sparse or unknown type, a duplicate, an oversized file)."""


# What helm's loader skips (https://github.com/helm/helm/blob/v4.1.4/pkg/chart/loader/archive/archive.go
# LoadArchiveFiles): directories and the pax extension headers (which Python's tarfile folds into the next member
# and never yields). Every other member, whatever its type flag (a symlink, a hard link, a FIFO, GNU 'D', 'S', an
# unknown '9' or 'Q'), helm reads as a file with the bytes that follow its header, so a digest that skips it
# would pin a chart helm renders differently: only regular files and directories are accepted here.
_REGULAR = {tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.CONTTYPE}
# helm's own limits (the same file, MaxDecompressedChartSize and MaxDecompressedFileSize; helm 3.17+'s
# --max-chart-size / --max-file-size defaults): a member or a chart past them is refused before it is read.
MAX_FILE_BYTES = 5 * 1024 * 1024
MAX_CHART_BYTES = 100 * 1024 * 1024
_TYPE_NAMES = {
    tarfile.SYMTYPE: "symbolic link",
    tarfile.LNKTYPE: "hard link",
    tarfile.CHRTYPE: "character device",
    tarfile.BLKTYPE: "block device",
    tarfile.FIFOTYPE: "FIFO",
    tarfile.GNUTYPE_SPARSE: "GNU sparse file",
}


class _Refused(ValueError):
    pass


class _CheckedInfo(tarfile.TarInfo):
    """Python's tarfile folds a Solaris extended header (type ``X``) into the next member as pax records, while
    Go's archive/tar (https://github.com/golang/go/blob/go1.24.0/src/archive/tar/common.go: only ``x`` and ``g``
    are pax headers) hands it to helm as a file: such a member is refused before it is folded away."""

    def _proc_member(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        if self.type == tarfile.SOLARIS_XHDTYPE:
            raise _Refused(
                f"member {self.name!r} is a Solaris extended header (tar type 'X'), which helm reads as a file"
            )
        return super()._proc_member(tarfile_)  # type: ignore[misc]


def member_problem(member: tarfile.TarInfo) -> str | None:
    """Why ``member`` cannot be accounted for by the digest (None: a directory or a regular file helm reads as is)."""
    if member.type == tarfile.DIRTYPE:
        return None
    if member.type not in _REGULAR:
        what = _TYPE_NAMES.get(member.type, f"tar type {member.type.decode('latin-1')!r}")
        return f"member {member.name!r} is a {what}, which helm reads as a file but a chart never holds"
    name = member.name.replace("\\", "/")
    parts = name.split("/")
    if name.startswith("/") or ".." in parts:
        return f"member {member.name!r} lies outside the chart directory"
    if member.size > MAX_FILE_BYTES:
        return f"member {member.name!r} has {member.size} bytes, past helm's {MAX_FILE_BYTES} per file"
    return None


def chart_files(archive: str | PathLike[str]) -> dict[str, str]:
    """Path relative to the chart root -> sha256, for every file of the chart archive ``archive``; NotAChart
    (naming the archive and the member) for a member it cannot account for (:func:`member_problem`)."""
    try:
        return _chart_files(archive)
    except _Refused as exc:
        raise NotAChart(f"{archive}: {exc}") from None


def _chart_files(archive: str | PathLike[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    roots: set[str] = set()
    total = 0
    with tarfile.open(archive, tarinfo=_CheckedInfo) as tgz:
        for member in tgz:
            problem = member_problem(member)
            if problem:
                raise NotAChart(f"{archive}: {problem}")
            if member.isdir():
                continue
            name = member.name.replace("\\", "/")
            while name.startswith("./"):
                name = name[2:]
            root, _, rel = name.partition("/")
            if not rel:
                raise NotAChart(f"{archive}: {member.name} is not inside the chart directory")
            total += member.size
            if total > MAX_CHART_BYTES:
                raise NotAChart(f"{archive}: more than helm's {MAX_CHART_BYTES} bytes of files")
            if roots and root not in roots:
                raise NotAChart(
                    f"{archive}: member {member.name!r} lies outside the chart directory {sorted(roots)[0]}/ (more "
                    "than one top-level directory)"
                )
            roots.add(root)
            data = tgz.extractfile(member)
            digest = hashlib.sha256(data.read() if data else b"").hexdigest()
            # helm keeps both copies and the later one wins; a published chart may carry a subchart twice
            # (nvidia-device-plugin 0.20.0): the same bytes are one file, different bytes are refused.
            if out.get(rel, digest) != digest:
                raise NotAChart(f"{archive}: member {member.name!r} appears twice with different content")
            out[rel] = digest
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
