"""Files the grader reads and writes: one walker that never follows links, one hash of a
folder, one atomic write.

A submission's folder is written by the student: a link in it may point at a classmate's
notebook or at the instructor's files, so no walk here follows one or lists one. A file the
grader keeps (the run's status, the collect's manifest, a feedback page, the late rule) is
written whole and then renamed into place: a reader never sees half of it, a crash leaves the
old one, and a link already at the target is replaced, never written through.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections.abc import Collection, Iterator
from pathlib import Path


def tree(folder: Path) -> Iterator[tuple[Path, list[Path], list[Path]]]:
    """(folder, its sub-folders, its regular files) for `folder` and every folder below it,
    sorted by name; links (to folders or files) are neither followed nor listed, and neither
    is anything that is not a regular file or a folder (a FIFO, a device)."""
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if _is(here / d, stat.S_ISDIR))
        yield here, [here / d for d in dirnames], \
            [here / f for f in sorted(filenames) if is_regular(here / f)]


def regular_files(folder: Path) -> list[Path]:
    """Every regular file under `folder`, in a stable order (tree's)."""
    return [f for _, _, files in tree(Path(folder)) for f in files]


def folder_hash(folder: Path, leave_out: Collection[str] = ()) -> str:
    """A hash of the names (relative to `folder`) and the bytes of its regular files; those
    whose relative name is in `leave_out` do not count."""
    folder, h = Path(folder), hashlib.sha256()
    for path in regular_files(folder):
        name = path.relative_to(folder).as_posix()
        if name in leave_out:
            continue
        with open(path, "rb") as f:
            h.update(name.encode() + b"\0" + hashlib.file_digest(f, "sha256").digest())
    return h.hexdigest()


def write_atomic(target: Path, data: bytes | str, mode: int = 0o644) -> Path:
    """Write `data` to a new file beside `target` and rename it over `target`. The new file's
    name is the grader's own, never made from the target's (which may hold a student id): it
    cannot pass the file-name limit, whatever the name."""
    target = Path(target)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".grader-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def is_regular(path: Path) -> bool:
    """Whether `path` is a regular file itself (a link to one is not)."""
    return _is(path, stat.S_ISREG)


def _is(path: Path, kind) -> bool:
    try:
        return kind(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False
