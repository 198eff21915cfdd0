"""The intake: a submission is copied by content; links, FIFOs, sockets, devices, hard links
to outside files and the student's timestamp.txt are left out and flagged; sizes are bounded.

No notebook is executed here (milliseconds each); the same attacks go through the whole
autograder in tests/adversarial/test_intake_attacks.py.
"""

import os
import signal
import socket
import stat
from datetime import UTC, datetime
from pathlib import Path

import nbformat
import pytest
from nbgrader.utils import parse_utc

from grader import intake as intake_module
from grader.files import write_atomic
from grader.intake import IntakeError, SubmissionLimits, find_submissions, read_regular, take_in

_FLAGS: dict = {}  # (course, student) -> the flags admit returned last


def admit(course, assignment, student, folder, *limits):
    """intake.admit's refusal (None: admitted), its flags kept for `details`."""
    try:
        flags, error = intake_module.admit(course, assignment, student, folder, *limits), None
    except IntakeError as e:
        flags, error = e.flags, str(e)
    _FLAGS[(course.root, student)] = flags
    return error


@pytest.fixture
def sub(tmp_path) -> Path:
    """submissions/alice/hw/ with a notebook and a helper in a subfolder."""
    folder = tmp_path / "submissions" / "alice" / "hw"
    (folder / "data").mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), folder / "hw.ipynb")
    (folder / "data" / "table.csv").write_text("a,b\n1,2\n")
    return folder


@pytest.fixture
def secret(tmp_path) -> Path:
    path = tmp_path / "outside" / "secret.txt"
    path.parent.mkdir()
    path.write_text("TOP-SECRET-4711")
    return path


def links_under(root: Path) -> list[Path]:
    return [Path(d, n) for d, dirs, files in os.walk(root) for n in dirs + files
            if Path(d, n).is_symlink()]


def details(course, student="alice"):
    return [f["detail"] for f in _FLAGS.get((course.root, student), []) if f["kind"] == "intake"]


@pytest.fixture
def no_hang():
    """Fail (instead of hanging the test run) if the intake blocks, e.g. opening a FIFO."""
    def hung(*_):
        raise TimeoutError("the intake blocked")
    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def test_regular_files_and_folders_are_copied_by_content(course, sub):
    assert admit(course, "hw", "alice", sub) is None
    copy = course.submitted / "alice" / "hw"
    assert (copy / "data" / "table.csv").read_text() == "a,b\n1,2\n"
    assert (copy / "hw.ipynb").read_bytes() == (sub / "hw.ipynb").read_bytes()
    # a copy, not the same file: the student's later changes cannot reach the course
    assert os.stat(copy / "hw.ipynb").st_ino != os.stat(sub / "hw.ipynb").st_ino
    assert stat.S_IMODE(os.stat(copy / "hw.ipynb").st_mode) == 0o644
    assert details(course) == []


def test_symlinks_beside_the_notebook_are_left_out_and_named(course, sub, secret):
    (sub / "notes.txt").symlink_to(secret)
    (sub / "data" / "etc").symlink_to("/etc", target_is_directory=True)
    (sub / "gone.py").symlink_to(sub / "does-not-exist.py")  # dangling: must not matter
    assert admit(course, "hw", "alice", sub) is None, "the student is still graded"
    copy = course.submitted / "alice" / "hw"
    assert links_under(copy) == []
    assert not (copy / "notes.txt").exists() and not (copy / "gone.py").exists()
    flags = details(course)
    assert f"notes.txt is a symbolic link to {secret}: not graded" in flags
    assert "data/etc is a symbolic link to /etc: not graded" in flags
    assert any(f.startswith("gone.py is a symbolic link to") for f in flags)


def test_a_notebook_that_is_a_symlink_is_an_error_naming_it(course, sub, tmp_path):
    classmate = tmp_path / "submissions" / "bob" / "hw"
    classmate.mkdir(parents=True)
    (sub / "hw.ipynb").rename(classmate / "hw.ipynb")
    (sub / "hw.ipynb").symlink_to("../../bob/hw/hw.ipynb")
    error = admit(course, "hw", "alice", sub)
    assert error == ("hw.ipynb is a symbolic link to ../../bob/hw/hw.ipynb: not graded; "
                     "hand in the notebook file itself")
    assert not (course.submitted / "alice" / "hw" / "hw.ipynb").exists()


def test_fifo_socket_and_device_are_left_out_without_blocking(course, sub, no_hang):
    os.mkfifo(sub / "pipe")  # opening it for reading would wait for a writer forever
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sub / "sock"))
    try:
        assert admit(course, "hw", "alice", sub) is None
    finally:
        server.close()
    flags = details(course)
    assert "pipe is a FIFO (named pipe): not graded" in flags
    assert "sock is a socket: not graded" in flags
    assert sorted(os.listdir(course.submitted / "alice" / "hw")) == [
        "data", "hw.ipynb", "timestamp.txt"]


def test_a_notebook_that_is_a_fifo_is_an_error(course, sub, no_hang):
    (sub / "hw.ipynb").unlink()
    os.mkfifo(sub / "hw.ipynb")
    assert admit(course, "hw", "alice", sub) == (
        "hw.ipynb is a FIFO (named pipe): not graded; hand in the notebook file itself")


def test_hard_links_to_outside_files_are_left_out(course, sub, secret):
    os.link(secret, sub / "copy_of_secret.txt")
    os.link(sub / "data" / "table.csv", sub / "table_again.csv")  # both names inside: fine
    assert admit(course, "hw", "alice", sub) is None
    copy = course.submitted / "alice" / "hw"
    assert not (copy / "copy_of_secret.txt").exists()
    assert (copy / "table_again.csv").read_text() == "a,b\n1,2\n"
    assert details(course) == ["copy_of_secret.txt is a hard link to a file outside the "
                               "submission (2 names, 1 of them in it): not graded"]


def test_the_submission_time_is_the_intake_time(course, sub):
    (sub / "timestamp.txt").write_text("2000-01-01 00:00:00.000000 UTC")
    monday = datetime(2031, 3, 3, 9, 30, tzinfo=UTC)
    take_in(course, "hw", "alice", sub, now=monday)
    recorded = (course.submitted / "alice" / "hw" / "timestamp.txt").read_text()
    assert parse_utc(recorded) == monday.replace(tzinfo=None), "nbgrader must read it back"
    assert details(course) == []  # take_in alone flags nothing; admit does
    # unchanged content taken in again (a re-grade): the time stays
    take_in(course, "hw", "alice", sub, now=datetime(2031, 3, 9, tzinfo=UTC))
    assert (course.submitted / "alice" / "hw" / "timestamp.txt").read_text() == recorded
    # changed content: a new intake time
    (sub / "data" / "table.csv").write_text("changed")
    later = datetime(2031, 3, 10, tzinfo=UTC)
    take_in(course, "hw", "alice", sub, now=later)
    assert parse_utc((course.submitted / "alice" / "hw" / "timestamp.txt").read_text()) == \
        later.replace(tzinfo=None)


def test_the_students_timestamp_is_flagged(course, sub):
    (sub / "timestamp.txt").write_text("2000-01-01 00:00:00.000000 UTC")
    assert admit(course, "hw", "alice", sub) is None
    assert details(course) == ["timestamp.txt was written by the student; the submission time "
                               "is when the grader took it in: not graded"]


def test_a_file_named_like_the_feedback_page_is_left_out(course, sub):
    (sub / "hw.html").write_text("<p>you got full marks</p>")
    assert admit(course, "hw", "alice", sub) is None
    assert not (course.submitted / "alice" / "hw" / "hw.html").exists()
    assert details(course) == ["hw.html has the name of the feedback page the grader writes: "
                               "not graded"]


@pytest.mark.parametrize("limits, make, words", [
    (SubmissionLimits(max_files=5),
     lambda f: [(f / f"x{i}.txt").write_text("x") for i in range(10)], "more than 5 files"),
    (SubmissionLimits(max_bytes=1000), lambda f: (f / "big.bin").write_bytes(b"0" * 5000),
     "holds more than 1000 bytes"),
    (SubmissionLimits(max_depth=3), lambda f: (f / "a/b/c/d/e").mkdir(parents=True),
     "nests folders"),
])
def test_limits_give_an_error_naming_the_student(course, sub, limits, make, words):
    make(sub)
    found = find_submissions(sub.parent.parent, "hw", limits)
    assert words in found["alice"] and "alice's submission" in found["alice"]
    # the copy enforces the same limits (the folder may have grown since it was found)
    error = admit(course, "hw", "alice", sub, limits)
    assert words in error
    assert not (course.submitted / "alice" / "hw").exists(), "no half-copied submission"
    assert [p.name for p in (course.submitted / "alice").iterdir()] == []


def test_a_failed_intake_removes_the_earlier_copy(course, sub):
    assert admit(course, "hw", "alice", sub) is None
    for i in range(10):
        (sub / f"x{i}").write_text("x")
    assert "more than 5 files" in admit(course, "hw", "alice", sub, SubmissionLimits(max_files=5))
    assert not (course.submitted / "alice" / "hw").exists(), "a stale copy would be graded"


def test_find_submissions_never_follows_a_link(tmp_path, sub):
    subs = sub.parent.parent
    instructor = tmp_path / "src" / "hw"
    instructor.mkdir(parents=True)
    (subs / "carol").mkdir()
    (subs / "carol" / "hw").symlink_to(instructor, target_is_directory=True)
    (subs / "dave").symlink_to(subs / "alice", target_is_directory=True)
    (subs / "notes.txt").write_text("not a student")
    (subs / "stray").symlink_to(tmp_path / "nowhere")  # dangling, not a folder: ignored
    found = find_submissions(subs, "hw")
    assert found["alice"] == sub
    assert found["carol"] == (f"hw/ in carol's folder is a symbolic link to {instructor}: "
                              "not graded (a submission must be a real folder)")
    assert found["dave"] == (f"student folder dave is a symbolic link to {subs / 'alice'}: "
                             "not graded (a submission must be a real folder)")
    assert set(found) == {"alice", "carol", "dave"}


def test_take_in_refuses_a_folder_that_became_a_link(course, sub, tmp_path):
    real = tmp_path / "elsewhere"
    sub.rename(real)
    sub.symlink_to(real, target_is_directory=True)
    with pytest.raises(IntakeError, match="is a symbolic link or not a folder"):
        take_in(course, "hw", "alice", sub)


def test_read_regular_follows_no_link(tmp_path, secret):
    (tmp_path / "pages" / "alice").mkdir(parents=True)
    (tmp_path / "pages" / "alice" / "ok.html").write_text("<p>ok</p>")
    (tmp_path / "pages" / "alice" / "link.html").symlink_to(secret)
    (tmp_path / "pages" / "bob").symlink_to(secret.parent, target_is_directory=True)
    os.link(secret, tmp_path / "pages" / "alice" / "hard.html")
    assert read_regular(tmp_path / "pages", "alice/ok.html") == b"<p>ok</p>"
    with pytest.raises(IntakeError):
        read_regular(tmp_path / "pages", "alice/link.html")
    with pytest.raises(IntakeError):
        read_regular(tmp_path / "pages", "bob/secret.txt")
    with pytest.raises(IntakeError, match="single name"):
        read_regular(tmp_path / "pages", "alice/hard.html")
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "pages", "alice/missing.html")


def test_delivering_a_page_replaces_a_link_instead_of_writing_through_it(tmp_path, secret):
    target = tmp_path / "to" / "alice.html"
    target.parent.mkdir()
    target.symlink_to(secret)
    write_atomic(target, b"<p>page</p>")
    assert not target.is_symlink() and target.read_bytes() == b"<p>page</p>"
    assert secret.read_text() == "TOP-SECRET-4711"


def test_intake_module_reads_nothing_through_paths(monkeypatch, course, sub):
    """Belt and braces: the copy never calls open()/shutil on the student's folder by path."""
    opened = []
    real_open = open

    def spy(path, *a, **k):
        opened.append(str(path))
        return real_open(path, *a, **k)
    monkeypatch.setattr("builtins.open", spy)
    intake_module.admit(course, "hw", "alice", sub)  # admitted (IntakeError otherwise)
    assert not [p for p in opened if p.startswith(str(sub))], opened


@pytest.mark.parametrize("name", ["alice\n", "alice\r", "al\x1bice", "-alice", "=1+1", "_alice",
                                  "al ice", "al,ice", "alïce", "a" * 129, "b" * 255,
                                  "al\udcffice"])
def test_a_folder_name_that_is_not_a_whole_valid_id_is_an_error(tmp_path, sub, name):
    subs = sub.parent.parent
    try:
        os.mkdir(subs / name)
    except (OSError, ValueError):
        pytest.skip(f"the file system takes no folder named {name!r}")
    (subs / name / "hw").mkdir()
    found = find_submissions(subs, "hw")
    assert found["alice"] == sub
    assert isinstance(found[name], str) and "is not a valid student id" in found[name]
    assert "\x1b" not in found[name] and "\n" not in found[name], "the reason shows it escaped"
    if len(name) > intake_module.MAX_ID_LENGTH:
        assert f"at most {intake_module.MAX_ID_LENGTH} characters" in found[name]


def test_the_longest_id_is_accepted_and_its_file_names_fit(tmp_path, sub):
    longest = "a" * intake_module.MAX_ID_LENGTH
    assert intake_module.is_student_id(longest)
    assert not intake_module.is_student_id(longest + "a")
    # the longest name made from an id: the feedback page and its temporary, and the exchange's
    # STUDENT+ASSIGNMENT+TIME+RANDOM for an assignment name of 60 characters
    names = [f"{longest}.html", f"{longest}+{'x' * 60}+2026-01-01 00:00:00.000000 UTC+abcdef12"]
    assert all(len(n.encode()) < 255 for n in names)
    target = tmp_path / "to" / f"{longest}.html"
    target.parent.mkdir()
    write_atomic(target, b"<p>page</p>")
    assert target.read_bytes() == b"<p>page</p>"
    assert os.listdir(target.parent) == [target.name], "no temporary left behind"
