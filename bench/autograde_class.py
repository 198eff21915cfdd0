"""Benchmark: grading a class of N self-attention submissions, plain nbgrader against ours.

In one run, on the same N synthetic submissions (the sample class's stories, repeated):

  plain      stock `nbgrader autograde`, one student after another (its default pipeline:
             every notebook in a fresh kernel that imports torch);
  ours       `grader.autograde` with one worker per core (workers forked from a pre-imported
             process, tests judged outside the student's process); run again on half the
             class, so that CPU per notebook is measured apart from the start-up paid once;
  test work  the notebook's cells alone, executed in this interpreter, which has already
             imported torch: the work no grader can avoid.

Prints both wall times and their ratio, and our CPU time per notebook against the test work.
Targets (issue "Grade a whole class fast"): ours at least 3x faster than plain nbgrader on 2
cores; our CPU time per notebook within 1.5x of the test work alone.

    .venv/bin/python bench/autograde_class.py [N]          (default N = 30)
    .venv/bin/python bench/autograde_class.py --stress 500  (soft_select; nothing may be lost)
"""

from __future__ import annotations

import contextlib
import io
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from traitlets.config import Config

from grader.course import COURSE_ID, KERNEL_ARGS, REPO, Course, setup_process
from grader.demo.sample_class import SAMPLE_CLASSES, Student, make_submission
from grader.release import release

ASSIGNMENT = "self_attention"


def make_class(course: Course, assignment: str, n: int, to: Path) -> list[Student]:
    """n submissions cycling through the sample class (perfect, blank, each mistake)."""
    released = release(course, assignment) / f"{assignment}.ipynb"
    source = course.source / assignment / f"{assignment}.ipynb"
    stories = SAMPLE_CLASSES[assignment]
    students = []
    for i in range(n):
        story = stories[i % len(stories)]
        student = Student(f"s{i:04d}", story.story, story.expect, story.edits, story.blank)
        folder = to / student.id / assignment
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(make_submission(source, released, story), folder / f"{assignment}.ipynb")
        students.append(student)
    return students


def cpu_seconds() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def plain_nbgrader(course: Course, assignment: str, students, submissions: Path) -> float:
    """Stock nbgrader: its own pipeline, in-kernel tests, one student at a time."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    c = Config()
    c.CourseDirectory.root = str(course.root)
    c.CourseDirectory.course_id = COURSE_ID
    c.CourseDirectory.db_url = course.db_url
    c.Exchange.root = str(course.exchange)
    c.Execute.timeout = 300
    c.Execute.extra_arguments = KERNEL_ARGS
    c.NbGraderAPI.log_level = "ERROR"
    api = NbGraderAPI(CourseDirectory(config=c), config=c)
    for s in students:
        shutil.copytree(submissions / s.id, course.submitted / s.id)
    start = time.perf_counter()
    for s in students:
        result = api.autograde(assignment, s.id, force=True, create=True)
        if not result.get("success"):
            raise SystemExit(f"plain nbgrader failed on {s.id}: {result.get('error')}")
    return time.perf_counter() - start


def test_work(course: Course, assignment: str, students, submissions: Path) -> float:
    """CPU seconds per notebook to run its cells (hidden tests restored) in this process."""
    source = nbformat.read(course.source / assignment / f"{assignment}.ipynb", as_version=4)
    stories = {s.story: s for s in students}.values()  # each distinct notebook once
    total = 0.0
    for s in stories:
        nb = nbformat.read(submissions / s.id / assignment / f"{assignment}.ipynb", 4)
        _restore_locked(nb, source)
        ns = {"__name__": "__main__"}
        start = time.process_time()
        for cell in nb.cells:
            if cell.cell_type == "code":
                with contextlib.suppress(BaseException), contextlib.redirect_stdout(
                        io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    exec(compile(cell.source, "<cell>", "exec"), ns)
        total += time.process_time() - start
    return total / len(stories)


def _restore_locked(nb, source) -> None:
    """Read-only cells (hidden tests included) get the instructor's source, as in grading."""
    by_id = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in source.cells}
    for cell in nb.cells:
        ref = by_id.get(cell.metadata.get("nbgrader", {}).get("grade_id"))
        if ref is not None and ref.metadata["nbgrader"].get("locked"):
            cell.source = ref.source


def sandbox_costs(k: int = 20) -> None:
    """What the isolation costs: starting the sandbox (once per grading process) and one
    student's turn in it (fork, cgroup, files, sweep), against the same without the sandbox."""
    from grader.sandbox import session

    for unconfined in (False, True):
        confined = session.Confinement(sandboxed=not unconfined,
                                       cgroups=session.cgroup.available() is None)
        start = time.perf_counter()
        z = session.Zygote(confined)
        up = time.perf_counter() - start
        session._zygotes[(confined, __import__("threading").get_ident())] = z
        turns = []
        for _ in range(k):
            t = time.perf_counter()
            s = session.Session({"helper.txt": b"x" * 1000}, session.Limits(), True, confined)
            s.start()
            s.request({"op": "ping"})
            s.close()
            turns.append(time.perf_counter() - t)
        z.stop()
        turns.sort()
        label = "without the sandbox" if unconfined else "in the sandbox     "
        print(f"start-up {label}    {up:6.2f} s wall, {z.start_cpu:5.2f} s CPU in the "
              f"zygote (once per grading process)")
        print(f"one student's turn {label} {1000 * turns[k // 2]:6.1f} ms median, "
              f"{1000 * turns[0]:.1f}-{1000 * turns[-1]:.1f} ms over {k} turns")


def main(argv: list[str]) -> int:
    setup_process()
    if argv[:1] == ["--stress"]:
        return stress(int(argv[1]) if len(argv) > 1 else 500)
    n = int(argv[0]) if argv else 30
    from grader.autograde import autograde

    print(f"{n} submissions of {ASSIGNMENT} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        plain_course, ours_course = Course(tmp / "plain"), Course(tmp / "ours")
        students = make_class(plain_course, ASSIGNMENT, n, tmp / "submissions")
        release(ours_course, ASSIGNMENT)
        import torch  # noqa: F401 - the test work is measured with torch already imported

        test_work(plain_course, ASSIGNMENT, students, tmp / "submissions")  # warm-up: first
        # use of an operator or of the meta device costs extra once, in any interpreter
        work = test_work(plain_course, ASSIGNMENT, students, tmp / "submissions")
        plain = plain_nbgrader(plain_course, ASSIGNMENT, students, tmp / "submissions")
        cpu0, start = cpu_seconds(), time.perf_counter()
        results = autograde(ours_course, ASSIGNMENT, tmp / "submissions",
                            progress=lambda line: None)
        ours = time.perf_counter() - start
        cpu_all = cpu_seconds() - cpu0
        lost = [r.student for r in results if r.error]
        # The same grader on half the class: the difference is what each notebook costs once
        # the start-up (pool processes, zygotes: torch imported once each) is paid.
        half = tmp / "half"
        for s in students[: n // 2]:  # copies: the intake refuses a linked folder
            shutil.copytree(tmp / "submissions" / s.id, half / s.id)
        cpu1 = cpu_seconds()
        autograde(Course(tmp / "ours-half"), ASSIGNMENT, half, progress=lambda line: None)
        cpu_half = cpu_seconds() - cpu1
        cpu = (cpu_all - cpu_half) / (n - n // 2)
        startup = cpu_all - n * cpu
    print(f"plain nbgrader, sequential  {plain:8.1f} s   {plain / n:6.2f} s per notebook")
    label = f"ours, {os.cpu_count()} workers"
    print(f"{label:<27} {ours:8.1f} s   {ours / n:6.2f} s per notebook")
    print(f"speed-up                    {plain / ours:8.2f} x   (target >= 3)")
    print(f"test work alone             {work:8.2f} s CPU per notebook")
    print(f"ours, CPU per notebook      {cpu:8.2f} s   {cpu / work:6.2f} x the test work "
          "(target <= 1.5)")
    print(f"ours, start-up paid once    {startup:8.2f} s CPU   (all of ours: {cpu_all / n:.2f} s "
          "CPU per notebook)")
    if lost:
        print(f"NOT GRADED: {lost}")
    sandbox_costs()
    ok = plain / ours >= 3 and cpu / work <= 1.5 and not lost
    print("targets met" if ok else "targets NOT met")
    return 0 if ok else 1


def stress(n: int) -> int:
    """n submissions of soft_select in one run: every one must come back graded."""
    from grader.autograde import autograde

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        course = Course(tmp / "course")
        students = make_class(course, "soft_select", n, tmp / "submissions")
        start = time.perf_counter()
        results = autograde(course, "soft_select", tmp / "submissions",
                            progress=lambda line: None)
        took = time.perf_counter() - start
        expected = {s.id: s.expect for s in students}
        graded = [r for r in results if not r.error]
        wrong = [r.student for r in graded if (expected[r.student] == "full")
                 != (r.auto_score == r.auto_max)]
    print(f"stress: {n} submissions, {len(graded)} graded, {n - len(graded)} lost, "
          f"{len(wrong)} with an unexpected score, in {took:.0f} s "
          f"({took / n:.2f} s per notebook on {os.cpu_count()} cores)")
    return 0 if len(graded) == n and not wrong else 1


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main(sys.argv[1:]))
