"""The workdir packer (t9k_operator/integrations/workdir/pack.py): what is packed, what is left
out by .gitignore and .t9kignore, modes and links, and the size check."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from pathlib import Path

import pytest

from t9k_operator.integrations.workdir.pack import LIMIT, WorkdirError, check_size, pack


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def members(archive: bytes) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        return {m.name: m for m in tar.getmembers()}


def files_of(archive: bytes) -> list[str]:
    return sorted(n for n, m in members(archive).items() if not m.isdir())


def test_a_tree_is_packed_with_its_modes_and_contents(tmp_path: Path) -> None:
    tree(tmp_path, {"train.py": "print(1)\n", "lib/helper.sh": "#!/bin/sh\necho hi\n"})
    (tmp_path / "lib" / "helper.sh").chmod(0o755)
    (tmp_path / "train.py").chmod(0o640)
    packed = pack(tmp_path)
    got = members(packed.archive)
    assert sorted(got) == ["lib", "lib/helper.sh", "train.py"]
    assert got["lib/helper.sh"].mode == 0o755
    assert got["train.py"].mode == 0o640
    assert got["lib"].isdir()
    assert all(m.uid == 0 and m.gid == 0 and m.uname == "" for m in got.values())
    with tarfile.open(fileobj=io.BytesIO(packed.archive), mode="r:gz") as tar:
        f = tar.extractfile("lib/helper.sh")
        assert f is not None and f.read() == b"#!/bin/sh\necho hi\n"
    assert sorted(packed.files) == [("lib/helper.sh", 18), ("train.py", 9)]
    gzip.decompress(packed.archive)  # one gzip stream


GITIGNORE = """\
# comments and blank lines are skipped

*.log
!keep.log
build/
/top-only.txt
docs/*.md
data/**
**/cache/x
a/**/z
\\#hash
sec[0-9].txt
"""


def test_gitignore_patterns_as_git_reads_them(tmp_path: Path) -> None:
    tree(
        tmp_path,
        {
            ".gitignore": GITIGNORE,
            "train.py": "",
            "run.log": "",
            "sub/deep/run.log": "",
            "keep.log": "",
            "sub/keep.log": "",
            "build/out.bin": "",
            "sub/build/out.bin": "",
            "build.txt": "",
            "top-only.txt": "",
            "sub/top-only.txt": "",
            "docs/a.md": "",
            "docs/sub/b.md": "",
            "data/x/y.bin": "",
            "cache/x": "",
            "m/cache/x": "",
            "a/z": "",
            "a/b/c/z": "",
            "#hash": "",
            "sec1.txt": "",
            "secA.txt": "",
            ".git/HEAD": "ref: x\n",
        },
    )
    # data/** leaves the directory data (empty) and nothing in it; docs/*.md
    # is anchored, one level only; /top-only.txt is anchored at the root.
    assert files_of(pack(tmp_path).archive) == [
        ".gitignore",
        "build.txt",
        "docs/sub/b.md",
        "keep.log",
        "secA.txt",
        "sub/keep.log",
        "sub/top-only.txt",
        "train.py",
    ]


def test_t9kignore_has_the_last_word_and_nested_files_apply_below_them(tmp_path: Path) -> None:
    tree(
        tmp_path,
        {
            ".gitignore": "*.ckpt\n",
            ".t9kignore": "!model.ckpt\ndatasets/\n",
            "model.ckpt": "",
            "other.ckpt": "",
            "datasets/big.bin": "",
            "sub/.gitignore": "*.tmp\n/local.txt\n",
            "sub/x.tmp": "",
            "sub/local.txt": "",
            "sub/inner/local.txt": "",
            "y.tmp": "",
        },
    )
    assert files_of(pack(tmp_path).archive) == [
        ".gitignore",
        ".t9kignore",
        "model.ckpt",
        "sub/.gitignore",
        "sub/inner/local.txt",
        "y.tmp",
    ]


def test_a_file_in_an_excluded_directory_cannot_be_re_included(tmp_path: Path) -> None:
    tree(tmp_path, {".gitignore": "out/\n!out/keep.txt\n", "out/keep.txt": "", "a.py": ""})
    assert files_of(pack(tmp_path).archive) == [".gitignore", "a.py"]


def test_links_inside_are_kept_and_links_leaving_are_refused(tmp_path: Path) -> None:
    tree(tmp_path / "w", {"lib/real.py": "x = 1\n", "train.py": ""})
    os.symlink("lib/real.py", tmp_path / "w" / "alias.py")
    os.symlink("lib", tmp_path / "w" / "libdir")
    got = members(pack(tmp_path / "w").archive)
    assert got["alias.py"].issym() and got["alias.py"].linkname == "lib/real.py"
    assert got["libdir"].issym() and got["libdir"].linkname == "lib"

    tree(tmp_path, {"secret.txt": "s"})
    os.symlink("../secret.txt", tmp_path / "w" / "up")
    os.symlink("/etc/passwd", tmp_path / "w" / "lib" / "abs")
    with pytest.raises(WorkdirError) as err:
        pack(tmp_path / "w")
    message = str(err.value)
    assert "symbolic links leave the directory" in message
    assert "lib/abs -> /etc/passwd" in message and "up -> ../secret.txt" in message
    # Ignored, they are no longer refused.
    (tmp_path / "w" / ".t9kignore").write_text("up\nabs\n")
    assert "lib/real.py" in files_of(pack(tmp_path / "w").archive)


def test_not_a_directory(tmp_path: Path) -> None:
    with pytest.raises(WorkdirError, match="not a directory"):
        pack(tmp_path / "missing")


def test_a_fifo_is_refused_by_name(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(WorkdirError, match="not a file, directory or symbolic link: pipe"):
        pack(tmp_path)


def test_too_large_names_its_size_the_limit_and_the_largest_files(tmp_path: Path) -> None:
    for i, size in enumerate((300_000, 200_000, 100_000, 50_000, 40_000, 30_000)):
        (tmp_path / f"f{i}.bin").write_bytes(os.urandom(size))  # random: gzip cannot shrink it
    packed = pack(tmp_path)
    check_size(packed, limit=len(packed.archive))  # at the limit: accepted
    with pytest.raises(WorkdirError) as err:
        check_size(packed, limit=len(packed.archive) - 1)
    message = str(err.value)
    assert f"({len(packed.archive)} bytes)" in message
    assert f"({len(packed.archive) - 1} bytes)" in message
    assert (
        "its largest files: f0.bin (293.0 KiB), f1.bin (195.3 KiB), f2.bin (97.7 KiB), "
        "f3.bin (48.8 KiB), f4.bin (39.1 KiB);"
    ) in message
    assert "f5.bin" not in message
    assert LIMIT == 1048576
