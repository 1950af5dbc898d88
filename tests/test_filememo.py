"""ekstrain/files/filememo.py: one memo per file version, shared by the content digests and helm's version."""

from __future__ import annotations

import os
import pathlib

from ekstrain.files import filememo


def test_a_file_is_read_once_per_version_whatever_path_names_it(tmp_path: pathlib.Path) -> None:
    reads: list[str] = []

    @filememo.per_file
    def size_of(path: str) -> int:
        reads.append(path)
        return len(pathlib.Path(path).read_bytes())

    # GIVEN a file and a symlink to it
    target = tmp_path / "helm"
    target.write_bytes(b"v1")
    link = tmp_path / "link"
    link.symlink_to(target)
    # WHEN asked through either name THEN it is read once, by its resolved path
    assert size_of(target) == size_of(str(link)) == 2
    assert reads == [str(target.resolve())]
    # AND a rewrite in place (another size and mtime) is read again
    target.write_bytes(b"v1.1")
    os.utime(target, ns=(1, 1))
    assert size_of(link) == 4 and len(reads) == 2


def test_recent_keeps_the_latest_used_and_drops_the_least_recently_used():
    from ekstrain.files.filememo import Recent

    memo: Recent[int] = Recent(2)
    assert memo.put("a", 1) == 1 and memo.get("b") is None
    memo.put("b", 2)
    assert memo.get("a") == 1  # a is now the latest used
    memo.put("c", 3)
    assert memo.keys() == ["a", "c"] and len(memo) == 2 and memo.get("b") is None
    memo.clear()
    assert len(memo) == 0
