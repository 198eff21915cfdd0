"""`python -m grader`, as an instructor runs it: release, autograde, feedback, report, export;
its exit statuses, its errors before any work, its options' defaults and positions."""

import argparse
import csv
from pathlib import Path

import nbformat
import pytest

from grader.course import REPO
from grader.demo.sample_class import SAMPLE_CLASSES
from grader.submission import Result
from tests.support.classes import write_assignment, write_sample_class, write_submission
from tests.support.cli import grader


@pytest.mark.slow
def test_instructor_workflow_through_the_cli(tmp_path):
    course = tmp_path / "course"
    done = grader("release", "soft_select", "--course", str(course), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    released = course / "release" / "soft_select" / "soft_select.ipynb"
    assert released.exists()
    assert str(course / "release" / "soft_select") in done.stdout, "where the release is"

    # Every submission graded: exit status 0; the command ends by saying where the grades are.
    write_sample_class(tmp_path / "subs", course, "alice", "carol")
    done = grader("autograde", "soft_select", "--course", str(course),
                  "--submissions", str(tmp_path / "subs"), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "alice        15 / 15 autograded" in done.stdout
    assert done.stdout.rstrip().splitlines()[-1].startswith("Grades in the gradebook ("
                                                            f"{course / 'gradebook.db'})")
    assert done.stderr.strip() == "", f"noise on stderr: {done.stderr}"

    # A submission that cannot be graded (a broken file): the class is graded, status 1.
    (tmp_path / "subs" / "mallory" / "soft_select").mkdir(parents=True)
    (tmp_path / "subs" / "mallory" / "soft_select" / "soft_select.ipynb").write_bytes(b"\xff\xfe")
    done = grader("--course", str(course), "autograde", "soft_select",
                  "--submissions", str(tmp_path / "subs"), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    mallory = next(line for line in done.stdout.splitlines() if "mallory" in line)
    assert "ERROR" in mallory and "soft_select.ipynb" in mallory
    assert "Summary: 0 graded, 2 unchanged and skipped, 1 could not be graded" in done.stdout
    assert done.stderr.strip() == ("1 submission(s) could not be graded: see their ERROR rows "
                                   "above (exit status 1)")

    done = grader("feedback", "soft_select", "--to", str(tmp_path / "feedback"),
                  "--course", str(course), cwd=tmp_path)
    assert (tmp_path / "feedback" / "carol.html").exists(), done.stdout + done.stderr
    assert done.stdout.rstrip().splitlines()[-1] == (
        f"Feedback pages for 2 of 2 student(s) in {course / 'feedback'}/STUDENT/soft_select/; "
        f"copies in {tmp_path / 'feedback'}")

    # report and export write into the course (never the current folder), and say where.
    work = tmp_path / "elsewhere"
    work.mkdir()
    done = grader("report", "soft_select", "--course", str(course), cwd=work)
    assert done.returncode == 0, done.stderr
    page = course / "reports" / "soft_select.html"
    assert done.stdout.strip() == f"class report written to {page}" and page.is_file()
    done = grader("export", "--course", str(course), cwd=work)
    assert done.returncode == 0, done.stderr
    grades = course / "exports" / "grades.csv"
    assert done.stdout.strip() == f"grades written to {grades} (nbgrader format)"
    assert list(work.iterdir()) == [], "nothing is written into the current folder"
    rows = {r["student_id"]: r for r in csv.DictReader(open(grades))}
    assert set(rows) == {"alice", "carol", "mallory"}
    assert float(rows["alice"]["score"]) == 15.0 and float(rows["mallory"]["score"]) == 0.0

    # A relative --to is relative to the current folder, and printed whole.
    done = grader("--course", str(course), "export", "--format", "moodle", "--to", "m.csv",
                  cwd=work)
    assert done.returncode == 0 and f"grades written to {work / 'm.csv'} " in done.stdout


def test_cli_errors_are_clear(tmp_path):
    done = grader("--course", str(tmp_path / "c"), "release", "no_such_assignment", cwd=tmp_path)
    assert done.returncode == 2 and "no assignment 'no_such_assignment'" in done.stderr
    done = grader("--course", str(tmp_path / "c"), "autograde", "soft_select", "--submissions",
                  str(tmp_path / "missing"), cwd=tmp_path)
    assert done.returncode == 2 and "does not exist" in done.stderr
    assert done.stdout == "" and not (tmp_path / "c").exists(), "an error before any work"
    done = grader("check", str(tmp_path / "nope.ipynb"), cwd=tmp_path)
    assert done.returncode == 2 and "no such notebook" in done.stderr


@pytest.mark.parametrize("command", [["release"], ["collect"], ["autograde"], ["feedback"],
                                     ["report"], ["autograde", "--submissions", "SUBS"]])
def test_a_typo_in_the_assignment_stops_before_any_work(tmp_path, command):
    (tmp_path / "subs" / "alice" / "self_atention").mkdir(parents=True)
    course = tmp_path / "course"
    command = [str(tmp_path / "subs") if word == "SUBS" else word for word in command]
    done = grader(command[0], "self_atention", *command[1:], "--course", str(course),
                  cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("error: no assignment 'self_atention' in "), done.stderr
    assert "did you mean 'self_attention'?" in done.stderr
    assert done.stdout == "", "no banner, no progress before the error"
    assert not course.exists(), "nothing released, collected or graded"


def test_feedback_and_report_of_an_ungraded_assignment_are_errors(tmp_path):
    for command in ("feedback", "report"):
        done = grader(command, "soft_select", "--course", str(tmp_path / "c"), cwd=tmp_path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr == (f"error: nothing of soft_select was autograded in {tmp_path / 'c'}"
                               ": run `python -m grader autograde soft_select` first\n")
        assert done.stdout == ""
    assert list(tmp_path.iterdir()) == [], "no course, gradebook or page made"


def test_bad_option_values_stop_before_any_work(tmp_path):
    for option in (["--workers", "0"], ["--cell-timeout", "-5"], ["--memory", "0"],
                   ["--notebook-timeout", "soon"]):
        done = grader("autograde", "soft_select", *option, "--course", str(tmp_path / "c"),
                      cwd=tmp_path)
        assert done.returncode == 2, option
        assert f"argument {option[0]}: '{option[1]}'" in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_course_options_are_accepted_before_and_after_the_command(tmp_path):
    from grader.cli import parser
    from grader.cli.common import course_of

    # As typed: --course after the command is the course the command works on.
    before = grader("--course", str(tmp_path / "a"), "export", cwd=tmp_path)
    after = grader("export", "--course", str(tmp_path / "a"), cwd=tmp_path)
    for done in (before, after):
        assert done.returncode == 2
        assert done.stderr == (f"error: no gradebook in {tmp_path / 'a'}: autograde something "
                               "first\n")
    # Every command that works on a course takes all three options in either place; given in
    # both, the one after the command wins; not given after it, the one before it stays.
    # (every command of the parser that has them, its positionals given as "x")
    sub = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    commands = {name: ["x" for a in p._actions if not a.option_strings and a.nargs != "*"
                       and a.dest != "help"]
                for name, p in sub.choices.items()
                if any("--course" in a.option_strings for a in p._actions)}
    assert {"release", "collect", "autograde", "roster", "export"} <= set(commands), commands
    for command, rest in commands.items():
        for argv in (["--course", "C", "--db", "D", "--exchange", "E", command, *rest],
                     [command, *rest, "--course", "C", "--db", "D", "--exchange", "E"],
                     ["--course", "old", "--db", "D", command, *rest, "--course", "C",
                      "--exchange", "E"]):
            args = parser().parse_args(argv)
            assert (args.course, args.db, args.exchange) == ("C", "D", "E"), argv
            assert course_of(args).root == Path("C").resolve()


def test_help_shows_every_default_and_the_exit_statuses():
    from grader.cli import parser
    from grader.submission import Limits

    done = grader("autograde", "--help", cwd=REPO)
    assert done.returncode == 0
    text = " ".join(done.stdout.split())  # argparse wraps the lines
    limits = Limits()
    assert f"(default: {limits.cell_timeout:g};" in text  # --cell-timeout
    assert f"(default: {limits.notebook_timeout:g})" in text
    assert f"(default: {limits.memory_bytes // 2**30}G)" in text
    assert "3 times that in wall-clock time" in text
    for status in ("0", "1", "2", "3"):
        assert f"\n  {status}  " in done.stdout, f"exit status {status} is not explained"
    top = parser()
    subparsers = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    missing = [f"{name} {action.option_strings or action.dest}"
               for name, sub in [("", top), *subparsers.choices.items()]
               for action in sub._actions
               if action.nargs != 0 and not isinstance(action, argparse._SubParsersAction)
               and (action.option_strings or action.nargs == "*")
               and "default" not in (action.help or "")]
    assert not missing, f"options whose help does not say their default: {missing}"


def test_demo_and_lab_work_on_one_course_folder(tmp_path, monkeypatch, capsys):
    import grader.demo.run
    import grader.servers.lab
    from grader.cli import main
    from grader.course import DEFAULT_COURSE

    seen = {}

    def fake_run_demo(course, **options):
        seen["demo"] = course.root
        return {}

    monkeypatch.setattr(grader.demo.run, "run_demo", fake_run_demo)
    monkeypatch.setattr(grader.demo.run, "next_steps", lambda course, rows: [])
    monkeypatch.setattr(grader.servers.lab, "lab", lambda course, extra: seen.setdefault("lab",
                                                                                  course.root))
    monkeypatch.delenv("GRADER_COURSE", raising=False)
    main(["demo"])  # `make demo`
    main(["lab"])  # `make lab`
    assert seen == {"demo": DEFAULT_COURSE.root, "lab": DEFAULT_COURSE.root}
    assert DEFAULT_COURSE.root == REPO / "build" / "course"
    seen.clear()
    main(["demo", "--course", str(tmp_path / "mine")])
    main(["lab", "--course", str(tmp_path / "mine")])
    assert seen == {"demo": tmp_path / "mine", "lab": tmp_path / "mine"}


def test_the_demo_refuses_a_course_with_other_students(tmp_path, monkeypatch, capsys):
    import grader.demo.run
    from grader.cli import main
    from grader.course import Course
    from grader.nbgrader.config import setup_process

    course = Course(tmp_path / "real")
    course.root.mkdir()
    setup_process()  # nbgrader makes a gradebook with the `alembic` command
    with course.gradebook() as gb:
        gb.add_student("ann")

    def no_work(*args, **kwargs):
        raise AssertionError("the demo started its work in a course it should refuse")

    monkeypatch.setattr(grader.demo.run, "grade_sample_class", no_work)
    monkeypatch.setattr(grader.demo.run.shutil, "rmtree", no_work)
    assert main(["demo", "--course", str(course.root)]) == 2
    err = capsys.readouterr().err
    assert f"error: the course {course.root} holds the grades of 1 student(s)" in err
    assert sorted(p.name for p in course.root.iterdir()) == ["gradebook.db"]


def test_autograde_exit_status_says_what_was_done(tmp_path, monkeypatch, capsys):
    """0 every submission graded, 1 some could not be (the student's), 3 the grader failed
    some (retry): from the results autograde returns, whatever grading did."""
    import grader.pipeline.autograde
    from grader.cli import main

    (tmp_path / "subs" / "alice" / "soft_select").mkdir(parents=True)

    def row(student, error=None, infrastructure=False):
        return Result(student, 1.0, 1.0, 1.0, 1.0, error=error, infrastructure=infrastructure)

    graded, theirs = row("alice"), row("bob", "could not be read")
    ours = row("carol", "not graded: the worker pool failed", infrastructure=True)
    for results, status in (([graded], 0), ([graded, theirs], 1), ([graded, ours], 3),
                            ([theirs, ours], 3)):
        monkeypatch.setattr(grader.pipeline.autograde, "autograde", lambda *a, r=results, **k: r)
        code = main(["autograde", "soft_select", "--submissions", str(tmp_path / "subs"),
                     "--course", str(tmp_path / "c"), "--unconfined", "--workers", "1"])
        assert code == status, [r.student for r in results]
        out, err = capsys.readouterr()
        assert out.splitlines()[-1].startswith("Grades in the gradebook (")
        assert ("run the same command again" in err) == (status == 3)
        assert ("see their ERROR rows" in err) == (status == 1)


def test_the_pool_is_started_early_only_for_a_class(tmp_path):
    # One submission is graded in the command's own process: no fork server for it.
    from grader.cli.autograde import _a_class

    def args(submissions=None, workers=None, scheduler=None):
        return argparse.Namespace(submissions=submissions, workers=workers, scheduler=scheduler)

    (tmp_path / "alice").mkdir()
    assert not _a_class(args(tmp_path, workers=2))
    (tmp_path / "bob").mkdir()
    (tmp_path / "notes.txt").write_text("not a student")
    assert _a_class(args(tmp_path, workers=2))
    assert not _a_class(args(tmp_path, workers=1))
    assert not _a_class(args(tmp_path, workers=2, scheduler="tcp://127.0.0.1:8786"))
    assert not _a_class(args(tmp_path / "missing", workers=2))
    assert _a_class(args(None, workers=2))  # what was collected from the exchange


def test_the_demo_ends_by_saying_what_to_open_next(tmp_path):
    from grader.course import DEFAULT_COURSE, Course
    from grader.demo.run import next_steps

    rows = {a: [(s, Result(s.id, 0, 1, 0, 1)) for s in SAMPLE_CLASSES[a]]
            for a in ("soft_select", "self_attention")}
    lines = next_steps(DEFAULT_COURSE, rows, out=tmp_path)
    assert lines[1] == "Open next:"
    assert lines[2].endswith(f"{tmp_path / 'reports' / 'self_attention.html'}")
    first_partial = next(s for s in SAMPLE_CLASSES["self_attention"] if s.expect == "partial")
    assert f"({first_partial.id}: {first_partial.story})" in lines[3]
    assert lines[3].endswith(f"{tmp_path / 'feedback' / 'self_attention' / first_partial.id}"
                             ".html")
    assert lines[-1].endswith(":  make lab, then Nbgrader > Formgrader")
    mine = next_steps(Course(tmp_path / "mine"), rows, out=tmp_path)
    assert f"python -m grader --course {tmp_path / 'mine'} lab" in mine[-1]


@pytest.mark.slow
def test_what_the_demo_says_to_open_exists(sample_classes):
    from grader.demo.run import next_steps

    rows = {a: [(s, table[s.id]) for s in SAMPLE_CLASSES[a]]
            for a, table in sample_classes.rows.items()}
    lines = next_steps(sample_classes.course, rows, out=sample_classes.out)
    paths = [Path(line.rsplit("  ", 1)[1]) for line in lines[2:-1]]
    assert len(paths) == 3 and all(p.is_file() for p in paths), lines


def sleepy_course(root: Path) -> None:
    """A course whose one assignment has a solution cell that sleeps (the student's code)."""
    from tests.support.notebooks import grade_cell, nbgrader_notebook, solution_cell

    write_assignment(root / "source", "sleepy", nbgrader_notebook([
        solution_cell(
            "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION",
            "double"),
        grade_cell("assert double(2) == 4", "test_double", points=1)]))


@pytest.mark.slow
def test_a_stopped_cell_is_worded_as_the_option_that_set_its_limit(tmp_path):
    """One wording for one limit: the flag of a cell that slept past its wall-clock cap names
    the CPU seconds allowed per cell, as --cell-timeout's help does, and how the cap follows."""
    import json

    course = tmp_path / "course"
    sleepy_course(course)
    assert grader("release", "sleepy", "--course", str(course), cwd=tmp_path).returncode == 0
    released = nbformat.read(course / "release" / "sleepy" / "sleepy.ipynb", as_version=4)
    released.cells[0].source = "import time\ntime.sleep(30)\n\ndef double(x):\n    return 2 * x"
    write_submission(tmp_path / "subs", "ann", "sleepy", released)
    done = grader("autograde", "sleepy", "--cell-timeout", "1", "--course", str(course),
                  "--submissions", str(tmp_path / "subs"), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr  # graded: stopped is not an error
    row = json.loads((course / "status" / "sleepy.json").read_text())["ann"]
    details = [f["detail"] for f in row["flags"] if f["kind"] == "timeout"]
    assert details == ["cell 1: stopped: it waited or slept longer than 3 s, 3 times the 1 s of "
                       "CPU time allowed per cell"], row["flags"]
    help_text = " ".join(grader("autograde", "--help", cwd=tmp_path).stdout.split())
    assert "seconds of CPU time allowed per cell" in help_text
    assert "stopped at 3 times that in wall-clock time" in help_text


@pytest.mark.slow
def test_quiet_and_verbose_say_less_and_more(tmp_path):
    # Progress lines are the pipeline's log (INFO), shown by default; --quiet leaves the
    # command's own result; -v adds every module's diagnostics (the intake's "left out").
    course = tmp_path / "course"
    assert grader("release", "soft_select", "--course", str(course), cwd=tmp_path).returncode == 0
    write_sample_class(tmp_path / "subs", course, "alice")
    (tmp_path / "subs" / "alice" / "soft_select" / "passwd").symlink_to("/etc/passwd")
    run = ["autograde", "soft_select", "--course", str(course), "--force",
           "--submissions", str(tmp_path / "subs")]
    default, quiet, verbose = (grader(*talk, *run, cwd=tmp_path)
                               for talk in ((), ("-q",), ("--verbose",)))
    for done in (default, quiet, verbose):
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Summary: 1 graded" in done.stdout  # the command's result, always
    progress = "[1/1 100%] alice        15 / 15 autograded"
    assert progress in default.stdout and progress in verbose.stdout
    assert "executing 1 submission(s)" in default.stdout
    assert "[1/1" not in quiet.stdout and "executing" not in quiet.stdout
    left_out = "alice: left out passwd (is a symbolic link to /etc/passwd)"
    assert left_out in verbose.stdout, verbose.stdout
    assert left_out not in default.stdout + default.stderr
    assert default.stderr.strip() == quiet.stderr.strip() == ""
