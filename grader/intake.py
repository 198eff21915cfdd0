"""Taking in submissions: untrusted data, copied by content, never a path to follow.

A submission folder is written by the student. Anything in it that is not a regular file or a
folder is a way to make the grader read (and hand back, or grade) something else: a symbolic link
to a classmate's notebook or to the instructor's source, a hard link to a file outside the
submission, a FIFO that blocks whoever opens it, a device. So the intake walks the folder with
directory file descriptors (`os.scandir(fd)`, `os.open(..., O_NOFOLLOW, dir_fd=fd)`), copies the
bytes of regular files and the folders that hold them into course.submitted/STUDENT/ASSIGNMENT,
and leaves everything else out with an "intake" flag that names it. It also bounds what it takes
(bytes, files, nesting depth), and writes the course's own timestamp.txt: a submission's time is
when the grader took it in, never a date the student wrote.
"""

from __future__ import annotations

import errno
import logging
import os
import pwd
import re
import shutil
import stat
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from grader.course import Course
from grader.files import folder_hash, is_regular
from grader.notebooks import unreadable_notebooks
from grader.shown import shown
from grader.submission import Flag, flag

log = logging.getLogger(__name__)

# A student id: a folder name, a gradebook key, a part of file names (STUDENT.html, the
# exchange's STUDENT+ASSIGNMENT+TIME+RANDOM) and a CSV cell. ASCII letters, digits and _ . @ -,
# starting with a letter or digit (so never with a formula character in a spreadsheet, nor a
# dot), at most MAX_ID_LENGTH characters: nbgrader's gradebook keeps 128 (Student.id is a
# String(128), enforced by PostgreSQL), which keeps every file name made from an id far below
# the 255 bytes a file name may have. Checked whole (fullmatch: "alice\n" is not "alice").
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]*")
MAX_ID_LENGTH = 128


def id_problem(name: str) -> str | None:
    """Why `name` is not a valid student id (the message shows it escaped), or None."""
    if len(name) > MAX_ID_LENGTH:
        return (f"{shown(name[:40])}... ({len(name)} characters) is not a valid student id: "
                f"at most {MAX_ID_LENGTH} characters")
    if not STUDENT_ID.fullmatch(name):
        return (f"{name!r} is not a valid student id (ASCII letters, digits, "
                "_ . @ -, starting with a letter or a digit)")
    return None


def is_student_id(name: str) -> bool:
    return id_problem(name) is None

# nbgrader's own format for timestamp.txt (its exchange's `timestamp_format`, in UTC).
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f %Z"
TIMESTAMP = "timestamp.txt"

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: should a FIFO slip in between the check and the open, open() does not wait for
# a writer (the fstat that follows then rejects it).
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1 << 20


@dataclass(frozen=True)
class SubmissionLimits:
    """The most one submission may hold; a bigger one is an error row, not graded."""

    max_bytes: int = 100 * 2**20
    max_files: int = 2000
    max_depth: int = 8  # folders inside the assignment folder, one inside the other


LIMITS = SubmissionLimits()


class IntakeError(Exception):
    """The submission cannot be taken in or graded (the message names the file and the
    problem); `flags`: what the intake flagged before it stopped."""

    def __init__(self, message: str, flags: list[Flag] | None = None):
        super().__init__(message)
        self.flags = list(flags or [])


@dataclass
class Intake:
    """What the intake took into the course, and what it left out (as flags)."""

    folder: Path  # course.submitted/STUDENT/ASSIGNMENT
    left_out: dict[str, str] = field(default_factory=dict)  # path in the submission -> why
    files: int = 0
    bytes: int = 0
    timestamp: str = ""

    @property
    def flags(self) -> list[Flag]:
        return [flag("intake", f"{rel} {why}: not graded")
                for rel, why in self.left_out.items()]


# ----- finding the students ---------------------------------------------------------------

def find_submissions(submissions: Path, assignment: str,
                     limits: SubmissionLimits = LIMITS) -> dict[str, Path | str]:
    """{student: their assignment folder, or why it cannot be graded}, from
    submissions/STUDENT/ASSIGNMENT/. Student and assignment folders that are symbolic links
    (to a classmate, to the instructor's source) are reasons, never followed; so is a
    submission over the limits (found by lstat alone, before anything reads it)."""
    submissions = Path(submissions)
    if not submissions.is_dir():
        raise FileNotFoundError(f"submissions folder {submissions} does not exist")
    found: dict[str, Path | str] = {}
    with os.scandir(submissions) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.name.startswith("."):
                continue
            reason = _student_folder_problem(entry, assignment)
            if reason is False:
                continue  # a stray file beside the student folders, as before
            if reason is None:
                folder = Path(entry.path) / assignment
                reason = _over_limits(folder, entry.name, limits)
                found[entry.name] = reason or folder
            else:
                found[entry.name] = reason
    if not found:
        raise FileNotFoundError(f"no student folders in {submissions} "
                                f"(expected {submissions}/STUDENT/{assignment}/*.ipynb)")
    return found


def _student_folder_problem(entry: os.DirEntry, assignment: str) -> str | None | bool:
    """None: a usable student folder; a str: why not; False: not a student folder at all."""
    name = entry.name
    if entry.is_symlink():
        if not entry.is_dir():  # a link to a file, or dangling: not a student folder
            log.info("ignoring %s: a symbolic link that is not to a folder", entry.path)
            return False
        return (f"student folder {name} is a symbolic link to {os.readlink(entry.path)}: "
                "not graded (a submission must be a real folder)")
    if not entry.is_dir(follow_symlinks=False):
        return False
    problem = id_problem(name)
    if problem:
        return f"folder name {problem}: not graded"
    folder = os.path.join(entry.path, assignment)
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        with os.scandir(entry.path) as inside:
            others = ", ".join(sorted(e.name for e in inside)) or "nothing"
        return f"no folder {assignment}/ in {entry.path} (found: {others})"
    if stat.S_ISLNK(st.st_mode):
        return (f"{assignment}/ in {name}'s folder is a symbolic link to "
                f"{os.readlink(folder)}: not graded (a submission must be a real folder)")
    if not stat.S_ISDIR(st.st_mode):
        return f"{assignment} in {name}'s folder is not a folder: not graded"
    return None


def _over_limits(folder: Path, student: str, limits: SubmissionLimits) -> str | None:
    """Why `folder` is too big to take in (a walk by lstat, following nothing), or None."""
    files = size = 0
    stack = [(str(folder), 0)]
    while stack:
        path, depth = stack.pop()
        if depth > limits.max_depth:
            return _too_deep(student, os.path.relpath(path, folder), limits)
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, depth + 1))
                elif entry.is_file(follow_symlinks=False):
                    files += 1
                    size += entry.stat(follow_symlinks=False).st_size
        if files > limits.max_files:
            return _too_many(student, files, limits)
        if size > limits.max_bytes:
            return _too_big(student, size, limits)
    return None


def _too_many(student, files, limits) -> str:
    return (f"{student}'s submission has more than {limits.max_files} files ({files} at "
            "least): not graded; remove what is not part of the assignment")


def _too_big(student, size, limits) -> str:
    return (f"{student}'s submission holds more than {_size(limits.max_bytes)} "
            f"({_size(size)} at least): not graded; remove what is not part of the assignment")


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{n} bytes"


def _too_deep(student, rel, limits) -> str:
    return (f"{student}'s submission nests folders more than {limits.max_depth} deep ({rel}): "
            "not graded")


# ----- copying one submission ---------------------------------------------------------------

def take_in(course: Course, assignment: str, student: str, folder: Path,
            limits: SubmissionLimits = LIMITS, now: datetime | None = None,
            owner: int | None = None) -> Intake:
    """Copy `folder` (submissions/STUDENT/ASSIGNMENT) into the course by content.

    now: the submission's time (default: this moment). owner: the uid every file must belong
    to (a submission collected from a shared exchange); anything else is left out.

    Raises IntakeError when the submission breaks the limits or its folders are links; the
    copy from an earlier run is then removed (the original submission is never touched).
    The copy is built beside the old one and swapped in whole, so a failure midway never
    leaves half a submission in the course.
    """
    folder = Path(folder)
    target = course.submitted / student / assignment
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.parent / f".{assignment}.intake-{uuid.uuid4().hex[:8]}"
    intake = Intake(folder=target)
    try:
        staging.mkdir()
        src = _open_submission(folder, student)
        pages = {f"{name}.html" for name in course.notebooks(assignment)}
        copier = _Copier(student, limits, intake, pages, owner)
        try:
            copier.copy_tree(src, staging, "", 0)
        finally:
            os.close(src)
        copier.drop_outside_hard_links(staging)
        intake.timestamp = _timestamp(target, staging, now)
        (staging / TIMESTAMP).write_text(intake.timestamp)
        _swap_in(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(target, ignore_errors=True)  # no stale copy graded in its place
        raise
    return intake


def _open_submission(folder: Path, student: str) -> int:
    """An fd on submissions/STUDENT/ASSIGNMENT; neither of the last two may be a link."""
    try:
        top = os.open(folder.parent.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            mid = os.open(folder.parent.name, _DIR, dir_fd=top)
        finally:
            os.close(top)
        try:
            return os.open(folder.name, _DIR, dir_fd=mid)
        finally:
            os.close(mid)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            raise IntakeError(f"{student}'s submission folder {folder} is a symbolic link or "
                              "not a folder: not graded") from None
        raise IntakeError(f"{student}'s submission folder {folder} cannot be opened: "
                          f"{e.strerror}") from None


class _Copier:
    """Copies a folder tree by content through directory fds, within the limits."""

    def __init__(self, student: str, limits: SubmissionLimits, intake: Intake, pages: set[str],
                 owner: int | None = None):
        self.student, self.limits, self.intake, self.owner = student, limits, intake, owner
        self.pages = pages  # names of the feedback pages the grader writes (NOTEBOOK.html)
        self.names: dict[tuple[int, int], list[str]] = {}  # inode -> its names in the copy
        self.nlink: dict[tuple[int, int], int] = {}

    def leave_out(self, rel: str, why: str) -> None:
        log.info("%s: left out %s (%s)", self.student, rel, why)
        self.intake.left_out[rel] = why

    def copy_tree(self, dir_fd: int, dest: Path, rel: str, depth: int) -> None:
        if depth > self.limits.max_depth:
            raise IntakeError(_too_deep(self.student, rel, self.limits))
        with os.scandir(dir_fd) as entries:
            listed = sorted(entries, key=lambda e: e.name)
        for entry in listed:
            name = entry.name
            path = f"{rel}{name}"
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError as e:  # removed (or made unreadable) since it was listed
                raise _changed(self.student, path, e) from None
            if self.owner is not None and st.st_uid != self.owner:
                self.leave_out(path, f"belongs to {user_name(st.st_uid)}, not to the student")
            elif stat.S_ISLNK(st.st_mode):
                try:
                    target = os.readlink(name, dir_fd=dir_fd)
                except OSError as e:  # replaced by something else since it was listed
                    raise _changed(self.student, path, e) from None
                self.leave_out(path, f"is a symbolic link to {target}")
            elif stat.S_ISDIR(st.st_mode):
                sub = self.open_at(dir_fd, name, _DIR, path)
                if sub is None:
                    continue
                try:
                    (dest / name).mkdir(mode=0o755)
                    self.copy_tree(sub, dest / name, path + "/", depth + 1)
                finally:
                    os.close(sub)
            elif stat.S_ISREG(st.st_mode):
                if not rel and name == TIMESTAMP:
                    self.leave_out(path, "was written by the student; the submission time is "
                                         "when the grader took it in")
                elif not rel and name in self.pages:
                    # nbgrader carries other files into the feedback folder, where this one
                    # could pass for the page the grader generates
                    self.leave_out(path, "has the name of the feedback page the grader writes")
                else:
                    self.copy_file(dir_fd, name, st, dest / name, path)
            else:
                self.leave_out(path, f"is {_kind(st.st_mode)}")

    def copy_file(self, dir_fd: int, name: str, st: os.stat_result, dest: Path,
                  rel: str) -> None:
        self.intake.files += 1
        if self.intake.files > self.limits.max_files:
            raise IntakeError(_too_many(self.student, self.intake.files, self.limits))
        fd = self.open_at(dir_fd, name, _FILE, rel)
        if fd is None:
            return
        try:
            now = os.fstat(fd)
            if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (st.st_dev,
                                                                             st.st_ino):
                self.leave_out(rel, "changed while it was read")
                return
            key = (now.st_dev, now.st_ino)
            self.names.setdefault(key, []).append(rel)
            self.nlink[key] = now.st_nlink
            out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            try:
                while chunk := os.read(fd, _CHUNK):
                    self.intake.bytes += len(chunk)
                    if self.intake.bytes > self.limits.max_bytes:
                        raise IntakeError(_too_big(self.student, self.intake.bytes,
                                                   self.limits))
                    os.write(out, chunk)
            finally:
                os.close(out)
        finally:
            os.close(fd)


    def open_at(self, dir_fd: int, name: str, flags: int, rel: str) -> int | None:
        """Open name without following a link; None (and left out) if that fails."""
        try:
            return os.open(name, flags, dir_fd=dir_fd)
        except OSError as e:
            why = ("became a symbolic link while it was read" if e.errno == errno.ELOOP
                   else f"could not be read ({e.strerror})")
            self.leave_out(rel, why)
            return None

    def drop_outside_hard_links(self, staging: Path) -> None:
        """A file with more names than the submission gives it shares its content with a file
        elsewhere (a hard link to the instructor's source, say): not the student's to hand in."""
        for key, rels in self.names.items():
            if self.nlink[key] > len(rels):
                for rel in rels:
                    (staging / rel).unlink()
                    self.leave_out(rel, f"is a hard link to a file outside the submission "
                                        f"({self.nlink[key]} names, {len(rels)} of them in it)")


def _changed(student: str, rel: str, e: OSError) -> IntakeError:
    """The error of a submission whose owner changed it while it was copied (a file removed
    or replaced between the listing and the read): that student's, never the batch's."""
    return IntakeError(f"{student}'s submission changed while it was taken in ({rel}: "
                       f"{e.strerror}): not graded; take it in again once it is left alone")


def user_name(uid: int) -> str:
    """The login name of `uid`, or "uid N" when it has none."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    return "not a regular file"


def _timestamp(target: Path, staging: Path, now: datetime | None) -> str:
    """The intake time in nbgrader's format; the earlier intake's time when the content is the
    same as then (grading again must not make a submission late)."""
    old = target / TIMESTAMP
    if is_regular(old) and folder_hash(target, {TIMESTAMP}) == folder_hash(staging, {TIMESTAMP}):
        return old.read_text()
    return (now or datetime.now(UTC)).strftime(TIMESTAMP_FORMAT)


def _swap_in(staging: Path, target: Path) -> None:
    """Replace target by staging: the old copy goes only once the new one is complete."""
    if not os.path.lexists(target):
        staging.rename(target)
        return
    old = target.parent / f"{staging.name}.old"
    target.rename(old)
    staging.rename(target)
    if old.is_symlink() or not old.is_dir():
        old.unlink()
    else:
        shutil.rmtree(old)


# ----- the check the autograder runs on each student ------------------------------------------

def admit(course: Course, assignment: str, student: str, folder: Path,
          limits: SubmissionLimits = LIMITS) -> list[Flag]:
    """Take in one submission and check its notebooks; the flags of what was left out, or
    IntakeError when it cannot be graded (its flags: those of what was left out)."""
    try:
        intake = take_in(course, assignment, student, folder, limits)
    except IntakeError as e:
        log.warning("%s: %s", student, e)
        raise
    flags = list(intake.flags) if intake.left_out else []
    try:
        more = check_notebooks(course, assignment, folder, intake.folder, intake.left_out)
    except IntakeError as e:
        raise IntakeError(str(e), flags) from None
    return flags + more


def check_notebooks(course: Course, assignment: str, folder: Path, copy: Path,
                    left_out: dict[str, str]) -> list[Flag]:
    """Check the notebooks of a submission taken in at `copy` (from `folder`): flags for
    notebooks the assignment does not have, or IntakeError saying why it cannot be graded."""
    expected = course.notebooks(assignment)
    for name in (f"{n}.ipynb" for n in expected):
        if name in left_out:  # the notebook itself was a link, a FIFO, ...
            raise IntakeError(f"{name} {left_out[name]}: not graded; hand in the notebook file "
                              "itself")
    error = unreadable_notebooks(copy, expected)
    if error:
        raise IntakeError(error)
    present = {p.stem for p in copy.glob("*.ipynb")}
    missing = [n for n in expected if n not in present]
    if missing:
        raise IntakeError(f"no {', '.join(n + '.ipynb' for n in missing)} in {folder} (found: "
                          f"{', '.join(sorted(p + '.ipynb' for p in present))}); was it "
                          "renamed?")
    return [flag("extra", f"extra notebook {n}.ipynb was not graded")
            for n in sorted(present - set(expected))]


# ----- reading the grader's own files back ---------------------------------------------------

def open_regular(root: Path, rel: str) -> int:
    """An fd on root/rel, a regular file with one name, reached without following a link at
    any step below root. FileNotFoundError when it is not there; IntakeError when it is a link
    (or goes through one) or not such a file."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:  # on any failure, the fd held at that moment is closed
        parts = Path(rel).parts
        for i, part in enumerate(parts):
            try:
                sub = os.open(part, _DIR if i < len(parts) - 1 else _FILE, dir_fd=fd)
            except OSError as e:
                if e.errno == errno.ENOENT:
                    raise FileNotFoundError(f"{root / rel}: no such file") from None
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise IntakeError(f"{root / rel}: {part} is a symbolic link or not a "
                                      "folder") from None
                raise
            os.close(fd)
            fd = sub
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            raise IntakeError(f"{root / rel} is not a regular file with a single name")
        return fd
    except BaseException:
        os.close(fd)
        raise


def read_regular(root: Path, rel: str, max_bytes: int = 50 * 2**20) -> bytes:
    """The bytes of root/rel, checked as `open_regular` does; at most max_bytes."""
    with os.fdopen(open_regular(root, rel), "rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise IntakeError(f"{root / rel} is larger than {max_bytes} bytes")
    return data
