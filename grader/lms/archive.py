"""A class's submissions as an LMS hands them out: the zip of Canvas's "Download Submissions"
or Moodle's "Download all submissions", read safely and sorted per student.

Such an archive is not the instructor's data. The names inside it end with the names students
gave their files (Canvas keeps each uploaded file's name after its own prefix; Moodle keeps the
students' file names and folders), and an archive re-zipped or forged can hold anything a zip
can: '../' and absolute names, symbolic links, two members of one name, control characters in
a name, members that unpack to gigabytes (a zip bomb). So zipfile's extract() is never called.
Every member is screened by its name, its type and its declared sizes before a byte of it is
read (`screen`); only the notebooks of students found in the roster are written, by this module,
under a folder it made, to a path built from name parts it checked, reading at most the size
the member declares (`extract`). Nothing in the archive is followed, executed or unpacked
further (a zip inside the zip stays a file, and is not a notebook).

Who a file belongs to is the LMS's number in its name (Canvas's user ID, Moodle's participant
number), looked up in the roster the LMS exports; never the name a student typed. The rules of
each LMS's names and roster are in grader.lms.canvas and grader.lms.moodle; what they share
(`Person`, `Named`) is here. Every file of the archive that is not taken in is in the `Plan`,
with why: nothing is dropped without a word.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Protocol

from grader.intake import id_problem

NOTEBOOK = ".ipynb"


@dataclass(frozen=True)
class ArchiveLimits:
    """The most an archive may make the grader read. A member over them is not taken in."""

    max_members: int = 20_000  # files in the archive (a class of 500 with 40 files each)
    max_member_bytes: int = 100 * 2**20  # one file, unpacked: the intake's limit per submission
    max_total_bytes: int = 2 * 2**30  # every notebook taken in, unpacked
    # A member that unpacks to more than `max_ratio` times its compressed size (and to more
    # than `ratio_from` bytes) is a zip bomb, or close enough: deflate reaches about 1000:1 on
    # repeated bytes, a notebook's JSON 3:1 to 20:1.
    max_ratio: int = 100
    ratio_from: int = 2**20
    max_name_bytes: int = 255  # one part of a member's name (a file name's limit on Linux)


LIMITS = ArchiveLimits()


@dataclass(frozen=True)
class Person:
    """A student of the roster the LMS exported."""

    lms_id: str  # the LMS's number for them: Canvas's user ID, Moodle's participant number
    id: str  # the course's student id, from the roster (see `problem`)
    name: str  # as the roster writes it, for messages
    problem: str | None = None  # why `id` cannot be a student id; their files are not taken in
    submitted: str | None = None  # the LMS's own words on when they submitted, never parsed


@dataclass(frozen=True)
class Named:
    """What the LMS's name of an archive member says about it."""

    lms_id: str
    path: tuple[str, ...]  # where it goes in the student's submission folder
    name: str = ""  # the student's name as the LMS wrote it into the member's name
    late: bool | None = None  # Canvas's LATE marker; None where the LMS's names do not say
    order: int = 0  # a number that grows with each upload (Canvas's file ID), else 0
    leave_out: str | None = None  # why it is no uploaded file (a text entry, a URL)


class Rules(Protocol):
    """What grader.lms.canvas and grader.lms.moodle provide for their archives."""

    LMS: str  # "Canvas", "Moodle"
    NUMBER: str  # what the number in a member's name is ("user ID", "participant number")
    RENAMES_COPIES: bool  # the LMS names a second upload of FILE.ipynb FILE-1.ipynb

    def archive_member(self, name: str) -> Named | str: ...

    def people(self, roster: Path) -> list[Person]: ...

    def other_person(self, named: Named, person: Person) -> str | None: ...


class LeftOut(NamedTuple):
    """A file of a known student that is not taken in."""

    member: str
    path: tuple[str, ...]  # where it would have gone in the student's folder
    why: str


@dataclass(frozen=True)
class Taken:
    """One member to take in: where it goes in the student's folder."""

    info: zipfile.ZipInfo
    path: tuple[str, ...]
    named: Named

    @property
    def member(self) -> str:
        return self.info.filename


@dataclass
class Plan:
    """Every file of the archive, and every student of the roster, and what becomes of each."""

    students: dict[str, list[Taken]] = field(default_factory=dict)  # student id -> to take in
    people: dict[str, Person] = field(default_factory=dict)  # student id -> who, for each
    # student id -> their files not taken in (they become that student's flags)
    left_out: dict[str, list[LeftOut]] = field(default_factory=dict)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (member, why): nobody's
    superseded: list[tuple[str, str]] = field(default_factory=list)  # (member, member kept)
    absent: list[Person] = field(default_factory=list)  # in the roster, nothing in the archive
    # student id -> the LMS marked them late (Canvas's LATE, on any of their files); None:
    # the LMS's names do not say
    late: dict[str, bool | None] = field(default_factory=dict)

    @property
    def not_taken_in(self) -> list[tuple[str, str]]:
        """(member, why) for every file of the archive that is not taken in, superseded
        copies aside (the LMS's own older uploads, replaced by design)."""
        return sorted(self.refused + [(left.member, left.why) for found in self.left_out.values()
                                      for left in found])


def open_archive(path: Path) -> zipfile.ZipFile:
    """The zip at `path`, or ValueError saying it is none."""
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, UnicodeDecodeError, EOFError, ValueError) as e:
        raise ValueError(f"{path} is not a zip archive that can be read ({e}); download it "
                         "again from the LMS, and give the .zip file as it came") from None


def index_people(people: list[Person], rules: Rules, roster: Path) -> dict[str, Person]:
    """{LMS number: person}. ValueError when two rows share a number, or would be one student:
    the files of one could then be graded as the other's."""
    by_number: dict[str, Person] = {}
    by_id: dict[str, Person] = {}
    for person in people:
        if person.lms_id in by_number:
            raise ValueError(f"roster {roster}: the rows of {by_number[person.lms_id].name!r} "
                             f"and {person.name!r} both have {rules.LMS} {rules.NUMBER} "
                             f"{person.lms_id}; download the roster again from {rules.LMS}")
        by_number[person.lms_id] = person
        if person.problem is None:
            other = by_id.get(person.id)
            if other is not None:
                raise ValueError(f"roster {roster}: the rows of {other.name!r} and "
                                 f"{person.name!r} would both be student {person.id!r}; give "
                                 f"each their own in {rules.LMS}, or correct the roster")
            by_id[person.id] = person
    return by_number


def screen(zf: zipfile.ZipFile, limits: ArchiveLimits = LIMITS
           ) -> tuple[list[zipfile.ZipInfo], list[tuple[str, str]]]:
    """(the members that are regular files with safe names and sizes, (member, why) for the
    others), from the archive's directory alone: nothing is read yet. Folders are left aside
    (their files are members of their own)."""
    infos = zf.infolist()
    if len(infos) > limits.max_members:
        raise ValueError(f"{zf.filename} holds {len(infos)} files, more than "
                         f"{limits.max_members}: not an archive of one assignment")
    counts = Counter(info.filename for info in infos)
    safe, refused = [], []
    for info in infos:
        if info.is_dir() and _name_problem(info.filename.rstrip("/"), limits) is None:
            continue
        why = _member_problem(info, counts[info.filename], limits)
        if why:
            refused.append((info.filename, why))
        else:
            safe.append(info)
    return safe, refused


def _member_problem(info: zipfile.ZipInfo, count: int, limits: ArchiveLimits) -> str | None:
    why = _name_problem(info.filename, limits)
    if why:
        return why
    if count > 1:
        return f"appears {count} times in the archive (which one is the submission?)"
    kind = stat.S_IFMT(info.external_attr >> 16)
    if stat.S_ISLNK(kind):
        return "is a symbolic link"
    if kind not in (0, stat.S_IFREG):
        return "is not a regular file"
    if info.flag_bits & 0x1:
        return "is encrypted"
    if info.file_size > limits.max_member_bytes:
        return (f"unpacks to {_size(info.file_size)}, more than "
                f"{_size(limits.max_member_bytes)} for one file")
    if info.file_size > limits.ratio_from and \
            info.file_size > limits.max_ratio * max(info.compress_size, 1):
        return (f"unpacks to {_size(info.file_size)} from {_size(info.compress_size)}, more "
                f"than {limits.max_ratio} times: a zip bomb?")
    return None


def _name_problem(name: str, limits: ArchiveLimits) -> str | None:
    """Why a member's name cannot be a path under the grader's folder, or None."""
    if not name.isprintable():
        return "has characters in its name that are not printable (control characters)"
    if "\\" in name:
        return "has a backslash in its name"
    if name.startswith("/") or re.match(r"[A-Za-z]:", name):
        return "has an absolute path as its name"
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "has an empty, '.' or '..' part in its name (it would leave its folder)"
    if any(len(part.encode("utf-8", "surrogatepass")) > limits.max_name_bytes
           for part in parts):
        return f"has a name longer than {limits.max_name_bytes} bytes"
    return None


def plan(zf: zipfile.ZipFile, rules: Rules, people: dict[str, Person], expected: set[str],
         limits: ArchiveLimits = LIMITS) -> Plan:
    """What to take in for whom. `people`: index_people's; `expected`: the assignment's
    notebook file names (a Canvas copy FILE-N.ipynb is a copy of FILE.ipynb when that is one)."""
    infos, refused = screen(zf, limits)
    result = Plan(refused=refused)
    found: dict[str, list[Taken]] = {}
    seen: set[str] = set()  # the LMS numbers with a file in the archive
    for info in infos:
        named = rules.archive_member(info.filename)
        if isinstance(named, str):
            result.refused.append((info.filename, named))
            continue
        seen.add(named.lms_id)
        person = people.get(named.lms_id)
        why = _whose_problem(rules, named, person)
        if why:
            result.refused.append((info.filename, why))
            continue
        result.people[person.id] = person
        result.late[person.id] = result.late.get(person.id) or named.late
        why = named.leave_out or _not_a_notebook(named.path, info)
        if why:
            result.left_out.setdefault(person.id, []).append(
                LeftOut(info.filename, named.path, why))
        else:
            found.setdefault(person.id, []).append(Taken(info, named.path, named))
    for student, taken in found.items():
        if rules.RENAMES_COPIES:
            taken, older = _latest_copies(taken, expected)
            result.superseded += older
        result.students[student] = taken
    total = sum(t.info.file_size for taken in result.students.values() for t in taken)
    if total > limits.max_total_bytes:
        raise ValueError(f"the notebooks of {zf.filename} unpack to {_size(total)}, more than "
                         f"{_size(limits.max_total_bytes)}: not the archive of one assignment")
    result.absent = [p for number, p in people.items() if number not in seen]
    return result


def _whose_problem(rules: Rules, named: Named, person: Person | None) -> str | None:
    if person is None:
        return (f"is the file of {rules.LMS} {rules.NUMBER} {named.lms_id}, in no row of the "
                f"roster: a student who joined after the roster was downloaded? Download it "
                f"again from {rules.LMS}")
    if why := rules.other_person(named, person):
        return why
    if person.problem:
        return f"is the file of {person.name!r}, whose {person.problem}"
    return None


def _not_a_notebook(path: tuple[str, ...], info: zipfile.ZipInfo) -> str | None:
    if not path[-1].endswith(NOTEBOOK):
        return f"is not a notebook ({NOTEBOOK})"
    if info.file_size == 0:
        return "is empty (0 bytes)"
    return None


COPY = re.compile(r"(?P<stem>.+)-(?P<n>\d+)(?P<suffix>\.[^.]+)")


def _latest_copies(taken: list[Taken], expected: set[str]
                   ) -> tuple[list[Taken], list[tuple[str, str]]]:
    """One file per name: of FILE.ipynb, FILE-1.ipynb, FILE-2.ipynb (the names Canvas gives a
    file uploaded again under the same name), the highest-numbered one, as FILE.ipynb; the
    others are (member, member kept). Only for FILE.ipynb of the assignment: a notebook of its
    own named x-1.ipynb keeps its name."""
    by_path: dict[tuple[str, ...], list[tuple[int, Taken]]] = {}
    for t in taken:
        *folder, name = t.path
        n, m = 0, COPY.fullmatch(name)
        if m and name not in expected and f"{m['stem']}{m['suffix']}" in expected:
            name, n = f"{m['stem']}{m['suffix']}", int(m["n"])
        by_path.setdefault((*folder, name), []).append((n, t))
    kept, older = [], []
    for path, copies in by_path.items():
        copies.sort(key=lambda c: (c[0], c[1].named.order))
        latest = copies[-1][1]
        kept.append(Taken(latest.info, path, latest.named))
        older += [(t.member, latest.member) for _, t in copies[:-1]]
    return kept, older


def extract(zf: zipfile.ZipFile, taken: list[Taken], to: Path) -> list[LeftOut]:
    """Write each member to `to`/PATH (`to` a new folder of the grader's); returns those that
    could not be (their file is then not there), with why."""
    to.mkdir(parents=True)
    root = os.path.realpath(to)
    left_out = []
    for t in taken:
        dest = os.path.join(root, *t.path)
        # the parts were checked (no '..', no '/', none empty); a second look all the same
        if os.path.commonpath([root, os.path.normpath(dest)]) != root:
            left_out.append(LeftOut(t.member, t.path, "would be written outside the "
                                                      "submission's folder"))
            continue
        try:
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            _copy_member(zf, t.info, dest)
        except (OSError, zipfile.BadZipFile, zlib.error, NotImplementedError,
                RuntimeError, ValueError) as e:
            with contextlib.suppress(OSError):
                os.unlink(dest)
            left_out.append(LeftOut(t.member, t.path, f"could not be unpacked ({e})"))
    return left_out


def _copy_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, dest: str) -> None:
    """The member's bytes, at most as many as it declares (zipfile checks its CRC at the end),
    into a new file that is no link."""
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o644)
    written = 0
    with open(fd, "wb") as out, zf.open(info) as src:
        while chunk := src.read(1 << 20):
            written += len(chunk)
            if written > info.file_size:
                raise ValueError(f"it holds more than the {info.file_size} bytes it declares")
            out.write(chunk)


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{n} bytes"


def student_id_problem(column: str, value: str) -> str | None:
    """Why the roster's `column` cell `value` cannot be a student id (for Person.problem)."""
    if not value:
        return f"{column} is empty"
    problem = id_problem(value)
    return f"{column} {problem}" if problem else None
