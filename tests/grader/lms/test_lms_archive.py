"""`grader collect NAME --from ARCHIVE --lms canvas|moodle --roster FILE`: a class taken in from
the zip Canvas's "Download Submissions" or Moodle's "Download all submissions" gives, named as
those LMSes name its files (grader/lms/canvas.py, grader/lms/moodle.py say where from), then
graded by `autograde NAME` with no --submissions; and archives that try to write outside, hide
links, bombs and terminal escapes in their names, or map two people to one student.
"""

from __future__ import annotations

import csv
import json
import stat
import warnings
import zipfile
from pathlib import Path

import nbformat
import pytest

from grader.course import REPO
from grader.demo.sample_class import make_submission
from grader.lms import archive
from grader.shown import shown
from tests.support.classes import released_class, sample_students
from tests.support.cli import grader
from tests.support.lms import canvas_gradebook

ALICE = ["Liddell, Alice", "101", "S0001", "alice", "Section A"]  # a Canvas gradebook's row
CAROL = ["Danvers, Carol", "103", "S0003", "carol", "Section A"]


def canvas_roster(path: Path, rows) -> Path:
    """Canvas's gradebook export of soft_select, not graded yet."""
    return canvas_gradebook(path, rows, assignment="Soft select (2201)", points="15",
                            scores=("", ""))


def moodle_worksheet(path: Path, rows, username: bool = False) -> Path:
    """Moodle's grading worksheet: Identifier "Participant N", Full name, Email address (and
    Username where the site shows it), then Moodle's grading columns."""
    with open(path, "w", newline="", encoding="utf-8-sig") as f:
        out = csv.writer(f)
        out.writerow(["Identifier", "Full name", *(["Username"] if username else []),
                      "Email address", "Status", "Grade", "Maximum Grade",
                      "Grade can be changed", "Last modified (submission)",
                      "Last modified (grade)", "Feedback comments"])
        for number, name, email, *login in rows:
            out.writerow([f"Participant {number}", name, *login, email,
                          "Submitted for grading", "", "15.00", "Yes",
                          "Monday, 2 March 2026, 9:15 AM", "-", ""])
    return path


def write_zip(path: Path, members) -> Path:
    """members: (name, bytes) or a ready ZipInfo with its bytes, deflated as the LMSes do."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of a duplicate name: wanted here
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for name, data in members:
                z.writestr(name, data)
    return path


def files_under(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if not p.is_dir()}


def collect(course, zipped, lms, roster, cwd, assignment="tiny"):
    """`collect ASSIGNMENT --from ZIPPED --lms LMS --roster ROSTER --course COURSE`."""
    return grader("collect", assignment, "--from", str(zipped), "--lms", lms, "--roster",
                  str(roster), "--course", str(course), cwd=cwd)


# ----- a class, taken in and graded ----------------------------------------------------------

@pytest.fixture
def released(tmp_path) -> tuple[Path, Path]:
    """A course with soft_select released by the CLI; (the course, its released notebook)."""
    mine = released_class(tmp_path, "soft_select", through_cli=True)
    return mine.course.root, mine.released


def notebook_of(student: str, released_nb: Path) -> bytes:
    source = REPO / "assignments" / "soft_select" / "soft_select.ipynb"
    [who] = sample_students("soft_select", student)
    return nbformat.writes(make_submission(source, released_nb, who)).encode()


def autograded_scores(course: Path, tmp_path: Path) -> dict[str, str]:
    """`autograde soft_select` of what was collected; then {student: score}, from `export` as
    the instructor would read it."""
    done = grader("autograde", "soft_select", "--course", str(course), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    to = tmp_path / "grades.csv"
    done = grader("export", "--course", str(course), "--to", str(to), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with open(to) as f:
        return {r["student_id"]: r["score"] for r in csv.DictReader(f)
                if r["assignment"] == "soft_select"}


@pytest.mark.slow
def test_a_canvas_class_is_taken_in_and_graded(released, tmp_path):
    course, release = released
    roster = canvas_roster(tmp_path / "gradebook.csv", [
        ALICE,
        CAROL,
        ["Dropped, Dave", "104", "S0004", "dave", "Section B"],  # submitted nothing
    ])
    # Carol handed in twice, late: Canvas renamed her second upload soft_select-2.ipynb. Her
    # first (soft_select-1) is a perfect copy: grading it would give her 15.
    zipped = write_zip(tmp_path / "submissions.zip", [
        ("liddellalice_101_5001_soft_select.ipynb", notebook_of("alice", release)),
        ("danverscarol_late_103_5002_soft_select-1.ipynb", notebook_of("alice", release)),
        ("danverscarol_late_103_5003_soft_select-2.ipynb", notebook_of("carol", release)),
    ])
    done = collect(course, zipped, "canvas", roster, cwd=tmp_path, assignment="soft_select")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "  alice        soft_select.ipynb" in lines
    assert "  carol        soft_select.ipynb  [Canvas marked it LATE]" in lines
    assert ("  OLDER COPY   danverscarol_late_103_5002_soft_select-1.ipynb: not taken in, "
            "danverscarol_late_103_5003_soft_select-2.ipynb is the later upload") in lines
    assert "  no submission in the archive: dave (Dropped, Dave), 999 (Student, Test)" in lines
    assert files_under(course / "submitted") == {"alice/soft_select/soft_select.ipynb",
                                                 "carol/soft_select/soft_select.ipynb"}, \
        "the notebook alone, under the student's login; no timestamp the LMS did not give"

    scores = autograded_scores(course, tmp_path)
    assert set(scores) == {"alice", "carol"}
    assert float(scores["alice"]) == 15.0
    assert 0 < float(scores["carol"]) < 15.0, "her later upload, not the perfect first one"


@pytest.mark.slow
def test_a_moodle_class_is_taken_in_and_graded(released, tmp_path):
    course, release = released
    worksheet = moodle_worksheet(tmp_path / "worksheet.csv", [
        ("730001", "Alice Liddell", "alice@uni.example"),
        ("730002", "Bob O'Neil", "bob@uni.example"),  # submitted nothing
        ("730003", "Carol Danvers", "carol@uni.example"),
    ])
    # Moodle 4.1 and later: a folder per student; 3.1 to 4.0 end the folder's name with "_".
    zipped = write_zip(tmp_path / "PHY101-Soft select-77.zip", [
        ("Alice Liddell_730001_assignsubmission_file/soft_select.ipynb",
         notebook_of("alice", release)),
        ("Carol Danvers_730003_assignsubmission_file_/soft_select.ipynb",
         notebook_of("carol", release)),
    ])
    done = collect(course, zipped, "moodle", worksheet, cwd=tmp_path, assignment="soft_select")
    assert done.returncode == 0, done.stdout + done.stderr
    assert ("  alice@uni.example soft_select.ipynb  [last modified Monday, 2 March 2026, "
            "9:15 AM (Moodle's worksheet)]") in done.stdout.splitlines()
    assert "no submission in the archive: bob@uni.example (Bob O'Neil)" in done.stdout

    scores = autograded_scores(course, tmp_path)
    assert set(scores) == {"alice@uni.example", "carol@uni.example"}
    assert float(scores["alice@uni.example"]) == 15.0
    assert 0 < float(scores["carol@uni.example"]) < 15.0


# ----- what is refused, and said -----------------------------------------------------------

def released_tiny(course) -> bytes:
    """The tiny assignment's released notebook, as a student hands it in unanswered."""
    return (course.release / "tiny" / "tiny.ipynb").read_bytes()


def not_taken_in(done) -> dict[str, str]:
    """{member as shown: why} from the NOT TAKEN IN lines."""
    prefix = "  NOT TAKEN IN "
    return dict(line[len(prefix):].split(": it ", 1) for line in done.stdout.splitlines()
                if line.startswith(prefix))


def test_hostile_members_are_named_and_nothing_is_written_outside(tiny_course, tmp_path):
    nb = released_tiny(tiny_course)
    roster = canvas_roster(tmp_path / "gradebook.csv", [
        ALICE, CAROL])
    link = zipfile.ZipInfo("liddellalice_101_6003_tiny.ipynb")
    link.create_system, link.external_attr = 3, (stat.S_IFLNK | 0o777) << 16
    bomb = zipfile.ZipInfo("danverscarol_103_6004_tiny.ipynb")
    bomb.compress_type = zipfile.ZIP_DEFLATED
    escape = "liddellalice_101_6005_\x1b]0;owned\x07\x1b[2J.ipynb"
    hostile = {
        "../../outside.ipynb": "'..' part",
        str(tmp_path / "absolute.ipynb"): "absolute path",
        "liddellalice_101_6002_x/../../../../outside2.ipynb": "'..' part",
        "liddellalice_101_6003_tiny.ipynb": "is a symbolic link",
        "danverscarol_103_6004_tiny.ipynb": "a zip bomb?",
        escape: "not printable",
        '=HYPERLINK("evil.example","x")_101_6006_tiny.ipynb': "not named as Canvas names",
        "danverscarol_103_6007_dup.ipynb": "appears 2 times",
        "danverscarol_103_6008_empty.ipynb": "is empty (0 bytes)",
        "danverscarol_103_6009_notes.pdf": "is not a notebook",
        "liddellalice_101_" + "6" * 300 + "_tiny.ipynb": "longer than 255 bytes",
    }
    zipped = write_zip(tmp_path / "submissions.zip", [
        ("liddellalice_101_6001_tiny.ipynb", nb),  # the one honest file
        ("../../outside.ipynb", nb),
        (str(tmp_path / "absolute.ipynb"), nb),
        ("liddellalice_101_6002_x/../../../../outside2.ipynb", nb),
        (link, "../../../../etc/passwd"),
        (bomb, b"\0" * 8 * 2**20),
        (escape, nb),
        ('=HYPERLINK("evil.example","x")_101_6006_tiny.ipynb', nb),
        ("danverscarol_103_6007_dup.ipynb", nb),
        ("danverscarol_103_6007_dup.ipynb", b"{}"),
        ("danverscarol_103_6008_empty.ipynb", b""),
        ("danverscarol_103_6009_notes.pdf", b"%PDF-1.4"),
        ("liddellalice_101_" + "6" * 300 + "_tiny.ipynb", nb),
    ])
    before = files_under(tmp_path)
    done = collect(tiny_course.root, zipped, "canvas", roster, cwd=tmp_path / "course")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "\x1b" not in done.stdout + done.stderr and "\x07" not in done.stdout
    said = not_taken_in(done)
    for member, why in hostile.items():
        assert why in said.get(shown(member), ""), f"{member!r} not named with why: {said}"
    assert "  alice        tiny.ipynb" in done.stdout.splitlines()
    assert "carol" in done.stdout and "no notebook of theirs could be taken in" in done.stdout
    assert done.stderr.endswith("(exit status 1)\n")
    # Written: alice's notebook and the manifest, nothing else, nowhere else.
    written = files_under(tmp_path) - before
    assert written == {"course/submitted/alice/tiny/tiny.ipynb",
                       "course/collected/tiny.json"}, written
    assert not (tmp_path / "absolute.ipynb").exists()
    assert not any(p.name.startswith(".archive-") for p in tiny_course.root.iterdir())


def test_a_roster_id_that_is_no_student_id_takes_nothing_in_for_them(tiny_course, tmp_path):
    nb = released_tiny(tiny_course)
    roster = canvas_roster(tmp_path / "gradebook.csv", [
        ALICE,
        ["Tables, Bobby", "102", "S0002", "=cmd|' /C calc'!A0", "Section A"],
        ["Smith, Bob", "103", "S0003", "bob smith", "Section A"],
        ["Nobody, Ann", "104", "", "", "Section A"]])  # the ID (Canvas's number) is the id
    zipped = write_zip(tmp_path / "submissions.zip", [
        ("liddellalice_101_7001_tiny.ipynb", nb),
        ("tablesbobby_102_7002_tiny.ipynb", nb),
        ("smithbob_103_7003_tiny.ipynb", nb),
        ("nobodyann_104_7004_tiny.ipynb", nb)])
    done = collect(tiny_course.root, zipped, "canvas", roster, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    said = not_taken_in(done)
    assert said["tablesbobby_102_7002_tiny.ipynb"].startswith(
        "is the file of 'Tables, Bobby', whose SIS Login ID \"=cmd|' /C calc'!A0\" is not a "
        "valid student id")
    assert said["smithbob_103_7003_tiny.ipynb"].startswith(
        "is the file of 'Smith, Bob', whose SIS Login ID 'bob smith' is not a valid student id")
    assert files_under(tiny_course.submitted) == {"alice/tiny/tiny.ipynb",
                                                  "104/tiny/tiny.ipynb"}


def test_a_roster_giving_two_people_one_id_stops_before_any_work(tiny_course, tmp_path):
    nb = released_tiny(tiny_course)
    zipped = write_zip(tmp_path / "s.zip", [("liddellalice_101_1_tiny.ipynb", nb)])
    roster = canvas_roster(tmp_path / "gradebook.csv", [
        ALICE,
        ["Other, Alice", "102", "S0002", "alice", "Section B"]])
    done = collect(tiny_course.root, zipped, "canvas", roster, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (f"error: roster {roster}: the rows of 'Liddell, Alice' and 'Other, "
                           "Alice' would both be student 'alice'; give each their own in "
                           "Canvas, or correct the roster\n")
    worksheet = moodle_worksheet(tmp_path / "worksheet.csv", [
        ("1", "Alice Liddell", "alice@uni.example"), ("2", "Alice L.", "alice@uni.example")])
    done = collect(tiny_course.root, zipped, "moodle", worksheet, cwd=tmp_path)
    assert done.returncode == 2
    assert "the rows of 'Alice Liddell' and 'Alice L.' would both be student " \
           "'alice@uni.example'" in done.stderr
    assert not tiny_course.submitted.exists() and not (tiny_course.root / "collected").exists()


def test_without_a_roster_it_says_which_export_to_download(tiny_course, tmp_path):
    zipped = write_zip(tmp_path / "s.zip", [("liddellalice_101_1_tiny.ipynb", b"{}")])
    for lms, export in (("canvas", "Export Entire Gradebook"),
                        ("moodle", "Download grading worksheet")):
        done = grader("collect", "tiny", "--from", str(zipped), "--lms", lms, "--course",
                      str(tiny_course.root), cwd=tmp_path)
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.startswith("error: --from needs --roster: the names in ")
        assert export in done.stderr and "not the student's login" in done.stderr
    done = grader("collect", "tiny", "--from", str(zipped), "--course", str(tiny_course.root),
                  cwd=tmp_path)
    assert done.returncode == 2 and "--from needs --lms canvas or --lms moodle" in done.stderr
    assert not tiny_course.submitted.exists()


def test_an_archive_that_is_no_zip_stops_before_any_work(tiny_course, tmp_path):
    roster = canvas_roster(tmp_path / "gradebook.csv", [["Liddell, Alice", "101", "", "alice",
                                                         "A"]])
    (tmp_path / "s.zip").write_text("<html>Session expired</html>")
    done = collect(tiny_course.root, tmp_path / "s.zip", "canvas", roster, cwd=tmp_path)
    assert done.returncode == 2
    assert f"error: {tmp_path / 's.zip'} is not a zip archive that can be read" in done.stderr
    assert not tiny_course.submitted.exists()


def test_moodle_files_of_another_assignments_worksheet_are_refused(tiny_course, tmp_path):
    nb = released_tiny(tiny_course)
    # Participant numbers are per assignment: 41 is Alice here, Carol in the worksheet given.
    worksheet = moodle_worksheet(tmp_path / "worksheet.csv", [
        ("41", "Carol Danvers", "carol@uni.example", "carol"),
        ("42", "Dave Example", "dave@uni.example", "dave")], username=True)
    zipped = write_zip(tmp_path / "s.zip", [
        ("Alice Liddell_41_assignsubmission_file/tiny.ipynb", nb),
        ("Dave Example_42_assignsubmission_file_tiny.ipynb", nb),  # before Moodle 3.1: flat
        ("Dave Example_42_assignsubmission_onlinetext/onlinetext.html", b"<p>hi</p>")])
    done = collect(tiny_course.root, zipped, "moodle", worksheet, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    said = not_taken_in(done)
    assert said["Alice Liddell_41_assignsubmission_file/tiny.ipynb"] == (
        "is in the folder of 'Alice Liddell', but participant 41 of the worksheet is 'Carol "
        "Danvers': is the worksheet of another assignment? Download the grading worksheet of "
        "this assignment")
    assert said["Dave Example_42_assignsubmission_onlinetext/onlinetext.html"] == (
        "is not an uploaded file (Moodle's assignsubmission_onlinetext)")
    assert files_under(tiny_course.submitted) == {"dave/tiny/tiny.ipynb"}, "by Username"


def test_a_member_over_the_size_limit_is_refused_unread(tmp_path):
    zipped = write_zip(tmp_path / "s.zip", [("a_1_2_big.ipynb", b"x" * 5000),
                                            ("a_1_3_small.ipynb", b"{}")])
    with zipfile.ZipFile(zipped) as zf:
        safe, refused = archive.screen(zf, archive.ArchiveLimits(max_member_bytes=4096))
    assert [i.filename for i in safe] == ["a_1_3_small.ipynb"]
    assert refused == [("a_1_2_big.ipynb", "unpacks to 5000 bytes, more than 4096 bytes for "
                                           "one file")]


def test_a_new_archive_replaces_what_an_earlier_one_took_in(tiny_course, tmp_path):
    nb = released_tiny(tiny_course)
    roster = canvas_roster(tmp_path / "gradebook.csv", [
        ALICE, CAROL])
    first = write_zip(tmp_path / "first.zip", [("liddellalice_101_1_tiny.ipynb", nb),
                                               ("danverscarol_103_2_tiny.ipynb", nb)])
    assert collect(tiny_course.root, first, "canvas", roster, cwd=tmp_path).returncode == 0
    # Carol's submission was deleted on Canvas: the new download no longer has it.
    second = write_zip(tmp_path / "second.zip", [("liddellalice_101_1_tiny.ipynb", nb)])
    done = collect(tiny_course.root, second, "canvas", roster, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ("  carol        no longer in the archive: taken out of what autograde grades"
            in done.stdout.splitlines())
    record = json.loads((tiny_course.root / "collected" / "tiny.json").read_text())
    assert set(record["students"]) == {"alice"}
    assert record["students"]["alice"]["time"] is None, "no time the LMS did not give"
