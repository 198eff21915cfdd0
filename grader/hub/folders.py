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
    even one whose name they guessed).

    Whatever a student creates in the exchange (a submission, a folder made by hand, copied,
    unpacked or moved in: the exchange is a file system of its own, so a move is a copy)
    inherits a default ACL that gives no one but its creator (and, in inbound, the instructor)
    any access: its group and "other" get nothing, and the group of all students is denied by
    an entry of its own, which a chmod by the owner does not change (POSIX ACLs check a
    matching named group before "other"). The sticky bit only guards a folder's name; these
    guard what is inside it."""
    bounded_exchange(hub)
    make_dir(hub.exchange, 0, 0, 0o1777)
    private = ("u::rwx", "g::---", "o::---", f"g:{GROUP_STUDENTS}:---", "m::rwx")
    _setfacl("-d", "-m", ",".join(private), hub.exchange)
    uid, gid = instructor.pw_uid, instructor.pw_gid
    course = hub.course_exchange
    for path, mode in ((course, 0o755), (course / "outbound", 0o755),
                       (course / "inbound", 0o1733), (course / "feedback", 0o711)):
        make_dir(path, uid, gid, mode)
        _setfacl("-b", "-k", path)  # not the private default inherited from the exchange
    # Submissions carry an entry for the instructor, so they need no permission for anyone
    # else (grader.nbgrader.submit.PrivateSubmit).
    _setfacl("-d", "-m", ",".join((*private, f"u:{instructor.pw_name}:rwX")), course / "inbound")


def bounded_exchange(hub: Hub) -> None:
    """hub.exchange as a file system of hub.exchange_size (an ext4 image, loop-mounted): all
    that students write into the exchange together cannot fill the machine's disk. Mounted
    again by each `make hub` (after a reboot); an exchange that was a plain folder is moved in.
    Where loop devices are not available, the exchange stays a plain folder (logged)."""
    if hub.exchange_size in ("", "0") or os.path.ismount(hub.exchange):
        return
    image = hub.exchange_image
    try:
        if not image.exists():  # made aside, so a failure never leaves half an image
            new = image.with_suffix(".new")
            new.unlink(missing_ok=True)
            os.close(os.open(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            subprocess.run(["truncate", "--size", hub.exchange_size, new], check=True)
            subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", "-L", "course-exchange", new],
                           check=True)
            new.rename(image)
        mount = ["mount", "-o", "loop,nosuid,nodev,noexec", image]
        if hub.exchange.is_dir() and any(hub.exchange.iterdir()):
            staging = hub.state / "exchange-new"
            staging.mkdir(mode=0o700, exist_ok=True)
            subprocess.run([*mount, staging], check=True)
            subprocess.run(["cp", "-a", f"{hub.exchange}/.", staging], check=True)
            subprocess.run(["umount", staging], check=True)
            staging.rmdir()
            shutil.rmtree(hub.exchange)
        hub.exchange.mkdir(parents=True, exist_ok=True)
        subprocess.run([*mount, hub.exchange], check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as e:
        detail = getattr(e, "stderr", None) or e
        log.warning("the exchange is a plain folder, NOT bounded in size (its file system "
                    "could not be made or mounted: %s)", str(detail).strip())
        return
    log.info("the exchange: %s, a file system of %s", hub.exchange, hub.exchange_size)


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
