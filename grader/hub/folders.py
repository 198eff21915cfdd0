"""The hub's folders with their owners and modes (see grader.hub.layout), the instructor's copy
of the course, and the ACL that keeps students out of the repository."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from pathlib import Path

from grader.course import REPO
from grader.hub.layout import GROUP_STUDENTS, Hub

log = logging.getLogger(__name__)

# What the instructor's server imports from hub.lib (it comes first on their PYTHONPATH): the
# whole grader, the reference solutions, and the source notebooks (grader.course finds them
# beside the grader, as in the repository).
INSTRUCTOR_LIB = ("grader", "solutions", "assignments")


def make_dir(path: Path, uid: int, gid: int, mode: int) -> None:
    """path as a real folder (never through a link) owned by uid:gid with `mode`."""
    if path.is_symlink():
        raise RuntimeError(f"{path} is a symbolic link; the hub's folders must be real ones")
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, uid, gid)
    os.chmod(path, mode)  # after chown, which clears the set-id bits


def exchange(hub: Hub, instructor) -> None:
    """nbgrader's exchange, laid out before the instructor's first release, so the modes are
    ours: inbound gets the sticky bit too (no student can rename or delete another's folder,
    even one whose name they guessed)."""
    make_dir(hub.exchange, 0, 0, 0o1777)
    uid, gid = instructor.pw_uid, instructor.pw_gid
    make_dir(hub.course_exchange, uid, gid, 0o755)
    make_dir(hub.course_exchange / "outbound", uid, gid, 0o755)
    make_dir(hub.course_exchange / "inbound", uid, gid, 0o1733)
    make_dir(hub.course_exchange / "feedback", uid, gid, 0o711)
    # Whatever a student creates in inbound carries an ACL entry for the instructor (a default
    # ACL is inherited at creation), so submissions need no permission for anyone else.
    _setfacl("-d", "-m", f"u:{instructor.pw_name}:rwX", hub.course_exchange / "inbound")


def instructor_area(hub: Hub, instructor) -> None:
    """hub.instructor_root (0700): lib/ copied fresh from the repository, course/ kept."""
    uid, gid = instructor.pw_uid, instructor.pw_gid
    make_dir(hub.instructor_root, uid, gid, 0o700)
    staging = hub.instructor_root / ".lib-new"
    shutil.rmtree(staging, ignore_errors=True)
    for name in INSTRUCTOR_LIB:
        shutil.copytree(REPO / name, staging / name, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
    _chown_tree(staging, uid, gid)
    old = hub.instructor_root / ".lib-old"
    if hub.lib.exists():
        hub.lib.rename(old)
    staging.rename(hub.lib)
    shutil.rmtree(old, ignore_errors=True)
    make_dir(hub.course, uid, gid, 0o700)
    source = hub.course / "source"
    if not source.is_symlink():
        source.symlink_to(hub.lib / "assignments", target_is_directory=True)
        os.lchown(source, uid, gid)


def _chown_tree(top: Path, uid: int, gid: int) -> None:
    for dirpath, dirnames, filenames in os.walk(top):
        os.chown(dirpath, uid, gid)
        for name in filenames + dirnames:
            os.lchown(os.path.join(dirpath, name), uid, gid)


def deny_students_the_repository(repo: Path = REPO) -> None:
    """An ACL entry on the checkout: members of GROUP_STUDENTS may not enter it. (POSIX ACLs
    check a matching named group before "other": a student gets none of the read and execute
    that everyone else gets.)"""
    _setfacl("-m", f"g:{GROUP_STUDENTS}:---", repo)
    log.info("students denied %s (ACL)", repo)


def _setfacl(*args) -> None:
    if shutil.which("setfacl") is None:
        raise RuntimeError("setfacl is missing (apt-get install acl): the hub's permissions "
                           "use POSIX ACLs")
    subprocess.run(["setfacl", *map(str, args)], check=True)
