"""Benchmark: grading a class of N self-attention submissions, plain nbgrader against ours.

In one run, on the same N synthetic submissions (the sample class's stories, repeated):

  plain      stock `nbgrader autograde`, one student after another (its default pipeline:
             every notebook in a fresh kernel that imports torch), each student once: the class
             dealt into R slices (student i in slice i mod R), one slice timed beside each slot
             of our runs, so a slow spell of the machine reaches both sides of the speed-up;
  ours       `python -m grader autograde` as an instructor runs it: a fresh command, one pool
             process per core forked from a server that imported torch once, students' code in
             the sandbox, tests judged outside it. Run R times on each of three sizes of class
             (class_sizes: N, N/3 and one submission a worker), one of each in each slot, each
             order of the sizes in turn (slot_order); CPU is counted
             for every process of the run (this process is their subreaper, so even the fork
             server's CPU is collected). A line through the sizes gives CPU per notebook (its
             slope) and the start-up paid once (where it meets a class of none);
  test work  the notebook's cells alone, executed in this interpreter, which has already
             imported torch: the work no grader can avoid (each distinct notebook R times, one
             pass over them before each slot of our runs, so a slow spell of the machine hits
             both sides of the ratio), each notebook as in a kernel of its own (the memory of
             reference outputs a judge keeps across notebooks, grader/judge/memo.py, is off,
             as it is in a kernel).

Prints wall times and their ratio, CPU per notebook against the test work and the start-up,
each estimated twice with the same statistic on both sides (from the least runs, and from the
medians: the verdict needs both), where the start-up goes (each part measured on its own), and
the floors of this design, for the start-up and for a notebook (what it costs before any of its
tests runs: nbgrader's two stages and a sandboxed turn with no cells), the least a notebook could
cost in it (least_possible: the tests once, with the judge's memory of references, and each of
their requests to the student's process at its price in a tight loop), with the spread over the
repeats.
Targets (issue "Grade a class near the physical limit"), on 2 cores: at least 20x faster than
plain nbgrader end to end; start-up at most 5 s of CPU; CPU per notebook at most 1.5x the test
work.

    .venv/bin/python bench/autograde_class.py [N] [--repeats R]   (default N = 30, R = 6)
    .venv/bin/python bench/autograde_class.py --curve [--repeats R] [--plot PNG]  (10 to 300)
    .venv/bin/python bench/autograde_class.py --stress 500  (soft_select; nothing may be lost)
    .venv/bin/python bench/autograde_class.py --split [N]   (a notebook's CPU, stage by stage)
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import ctypes
import io
import itertools
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from traitlets.config import Config

from grader.course import COURSE_ID, KERNEL_ARGS, REPO, Course
from grader.demo.sample_class import SAMPLE_CLASSES, Student, make_submission
from grader.nbgrader.config import setup_process
from grader.nbgrader.release import release

ASSIGNMENT = "self_attention"


def students_need(assignment: str = ASSIGNMENT) -> tuple[str, ...]:
    """What the assignment declares its students' processes import (each sandbox's server
    imports it before forking them, as in grading)."""
    from grader.pipeline.pools import sandbox_preload_for

    return tuple(sandbox_preload_for(REPO / "assignments" / assignment))


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


def children_cpu() -> float:
    """CPU seconds of every descendant this process has reaped (it is their subreaper)."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def become_subreaper() -> None:
    """Orphans of a grading command (multiprocessing's fork server, the sandboxes) become our
    children when it exits, so their CPU is counted when we reap them."""
    if ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def reap_orphans(seconds: float = 30.0) -> None:
    """Wait for every leftover descendant of the last command (they end when it has ended)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.05)
    raise SystemExit("a process of the grading command outlived it by 30 s")


def median_spread(values: list[float], unit: str = "", digits: int = 2) -> str:
    return (f"{statistics.median(values):.{digits}f}{unit} (min {min(values):.{digits}f}, "
            f"max {max(values):.{digits}f}, {len(values)} runs)")


def plain_nbgrader(course: Course, students, submissions: Path):
    """Stock nbgrader's API on a course holding the class's submissions (its own pipeline,
    in-kernel tests); `plain_slice` grades some of them."""
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
    return api


def plain_slice(api, assignment: str, students) -> float:
    """Wall seconds for stock nbgrader to grade `students`, one after another."""
    start = time.perf_counter()
    for s in students:
        result = api.autograde(assignment, s.id, force=True, create=True)
        if not result.get("success"):
            raise SystemExit(f"plain nbgrader failed on {s.id}: {result.get('error')}")
    return time.perf_counter() - start


def test_work_pass(course: Course, assignment: str, students, submissions: Path,
                   remember: bool = False) -> dict:
    """CPU seconds to run each distinct notebook's cells (hidden tests restored) in this
    process, once: {story: seconds}. remember: with the judge's memory of reference outputs
    on, as a judge grading notebook after notebook has it (the least_possible cost)."""
    source = nbformat.read(course.source / assignment / f"{assignment}.ipynb", as_version=4)
    first = {s.story: s for s in reversed(students)}  # each distinct notebook once
    cpu = {}
    for story, s in first.items():
        nb = nbformat.read(submissions / s.id / assignment / f"{assignment}.ipynb", 4)
        _restore_locked(nb, source)
        cpu[story] = _exec_cells(nb, remember)
    return cpu


def test_work(students, runs: dict[str, list[float]]) -> tuple[float, float, list[float]]:
    """CPU seconds per notebook of the test work, from `runs` ({story: seconds of each pass}),
    weighted as the class has the stories. Returns (per notebook from each notebook's least,
    from each one's median, the class's per-pass means: their spread)."""
    counts: dict[str, int] = {}
    for s in students:
        counts[s.story] = counts.get(s.story, 0) + 1
    n, passes = len(students), len(next(iter(runs.values())))
    least = sum(min(runs[story]) * k for story, k in counts.items()) / n
    median = sum(statistics.median(runs[story]) * k for story, k in counts.items()) / n
    per_pass = [sum(runs[story][r] * k for story, k in counts.items()) / n
                for r in range(passes)]
    return least, median, per_pass


def _exec_cells(nb, remember: bool = False) -> float:
    from grader.judge.memo import MEMO

    # As in a kernel of its own: the memory of reference outputs is a judge's, across notebooks
    # (in one notebook, its keys cost more than the repeats it would save). What it remembers
    # stays while it is off, for the passes that have it on (remember).
    MEMO.enabled = remember
    ns = {"__name__": "__main__"}
    start = time.process_time()
    for cell in nb.cells:
        if cell.cell_type == "code":
            with contextlib.suppress(BaseException), contextlib.redirect_stdout(
                    io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                exec(compile(cell.source, "<cell>", "exec"), ns)
    return time.process_time() - start


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
    from grader.sandbox import cgroup, launcher, session
    from grader.sandbox.confinement import Confinement
    from grader.submission import Limits

    for unconfined in (False, True):
        confined = Confinement(sandboxed=not unconfined, cgroups=cgroup.available() is None)
        start = time.perf_counter()
        z = launcher.Zygote(confined, preload=students_need())
        up = time.perf_counter() - start
        launcher._zygotes[(confined, __import__("threading").get_ident())] = z
        turns = []
        for _ in range(k):
            t = time.perf_counter()
            s = session.Session({"helper.txt": b"x" * 1000}, Limits(), True, confined)
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


def class_sizes(n: int, workers: int) -> tuple[int, ...]:
    """The sizes of class our runs grade, largest first: the whole class, a third of it, and the
    smallest class that starts every part of a run (a pool process and a sandbox server for
    each worker; a run has as many workers as submissions, up to one a core). None is smaller,
    so the start-up is the same in each, and a line through them fits. The smallest anchors the
    start-up: mostly start-up, a slow spell moves it least (classes of 2, 10 and 30 on 2 cores,
    six runs each in turns: 4.82-5.59, 6.96-8.44 and 12.12-13.15 s of CPU)."""
    w = min(max(workers, 2), n)
    sizes = tuple(sorted({n, max(n // 3, w), w}, reverse=True))
    if len(sizes) < 2:
        raise SystemExit(f"a class of {n} on {workers} cores gives one size of class: a line "
                         f"needs two (grade at least {2 * w} submissions)")
    return sizes


def slot_order(sizes: tuple[int, ...], slot: int) -> tuple[int, ...]:
    """The order of our runs in a slot: each order of the sizes in turn, so that over every
    full round of them (six slots for three sizes) each size runs in each place as often. A
    machine that drifts slower (or quicker) through the bench then reaches every size alike,
    where a fixed order would tilt the line and the start-up read from it; and a run in one
    place of a slot (right after stock nbgrader's slice, say) is no size's more than
    another's. With the largest first in even slots and the smallest first in odd ones, the
    middle size was never first, and its median run lay 0.05-0.10 s below the line in three of
    four runs (0.05 s above it in the fourth); with every order, 0.01 s below in the first."""
    orders = list(itertools.permutations(sizes))
    return orders[slot % len(orders)]


def line(points: list[tuple[int, float]]) -> tuple[float, float]:
    """The least-squares line through (size, CPU seconds) points: (slope, intercept)."""
    xs, ys = [x for x, _ in points], [y for _, y in points]
    x_mean, y_mean = statistics.fmean(xs), statistics.fmean(ys)
    slope = (sum((x - x_mean) * (y - y_mean) for x, y in points)
             / sum((x - x_mean) ** 2 for x in xs))
    return slope, y_mean - slope * x_mean


def run_ours(template: Path, assignment: str, submissions: Path, work: Path) -> tuple[float,
                                                                                     float]:
    """`python -m grader autograde` on a fresh copy of the released course, as an instructor
    runs it: (wall seconds, CPU seconds of every process of the run)."""
    course = work / f"course-{time.monotonic_ns()}"
    shutil.copytree(template, course)
    cpu0, start = children_cpu(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "grader", "--course", str(course), "autograde",
                           assignment, "--submissions", str(submissions)],
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    reap_orphans()
    cpu = children_cpu() - cpu0
    if done.returncode != 0 or "ERROR" in done.stdout:
        raise SystemExit(f"grading failed ({done.returncode}):\n{done.stdout[-3000:]}\n"
                         f"{done.stderr[-3000:]}")
    shutil.rmtree(course)
    return wall, cpu


def subset(submissions: Path, students, to: Path) -> Path:
    for s in students:  # copies: the intake refuses a linked folder
        shutil.copytree(submissions / s.id, to / s.id)
    return to


def process_cpu(code: str, repeats: int = 3) -> float:
    """CPU seconds of a fresh interpreter running `code` (the least of `repeats`), starting and
    ending as the grader's processes do: imports with the garbage collector paused
    (grader.startup.collector), no interpreter teardown (grader.startup.exits)."""
    best = float("inf")
    for _ in range(repeats):
        cpu0 = children_cpu()
        subprocess.run([sys.executable, "-c", "from grader.startup.collector import pause; "
                        f"pause(); {code}; import os; os._exit(0)"], check=True)
        best = min(best, children_cpu() - cpu0)
    return best


def startup_parts(workers: int) -> tuple[list[tuple[str, float]], list[str]]:
    """Where the start-up goes, each part measured on its own (CPU seconds), and the floor of
    this design: lines saying what no change to the grader's own code can remove."""
    from grader.pipeline.pools import preload_for
    from grader.sandbox.confinement import confinement
    from grader.sandbox.launcher import Zygote

    command = process_cpu("import grader.cli, grader.pipeline.autograde, grader.pipeline.sanitize, "
                          "nbgrader.apps")
    server = process_cpu("; ".join(f"import {m}" for m in
                                   preload_for(REPO / "assignments" / ASSIGNMENT)))
    torch_alone = process_cpu("import torch")
    confined = confinement()
    zygotes = []
    for _ in range(3):
        z = Zygote(confined, preload=students_need())
        zygotes.append(z)
        z.stop()
    best = min(zygotes, key=lambda z: z.start_cpu)
    steps = ", ".join(f"{name} {seconds:.2f}" for name, seconds in best.start_parts.items())
    parts = [("the command (nbgrader, the grader; no torch)", command),
             ("the pool's fork server (torch, the judge), once", server),
             (f"the sandboxed worker servers, {workers} x {best.start_cpu:.2f} ({steps})",
              workers * best.start_cpu)]
    # what the assignment declares, the meta device's first use, deferring PyTorch's compiler
    extra = sum(best.start_parts.get(name, 0.0)
                for name in ("declared modules", "compiler deferred", "meta device"))
    return parts, floor_lines(workers, command, torch_alone, extra)


def floor_lines(workers: int, command: float, torch_alone: float, extra: float) -> list[str]:
    """The start-up no change to the grader's own code removes, as long as each student graded
    at the same time has a sandbox of their own (namespaces.py: bwrap starts a fresh
    interpreter, which imports torch) and the tests use the meta device (its operations written
    in Python need PyTorch's compiler or grader/startup/compiler.py's stand-in for it) and
    whatever else the assignment declares its students need."""
    floor = command + (1 + workers) * torch_alone + workers * extra
    return [f"  floor of this design: {floor:.2f} s = the command {command:.2f} + "
            f"{1 + workers} x import torch {torch_alone:.2f} (the judge's server, "
            f"{workers} sandboxes) + {workers} x the declared modules and the meta device's "
            f"first use {extra:.2f}"]


def main(argv: list[str]) -> int:
    args = arguments(argv)
    setup_process()
    become_subreaper()
    if args.stress:
        return stress(args.stress)
    if args.curve:
        return curve(args.plot, args.repeats)
    if args.split:
        return split(args.n, args.json)
    n, repeats = args.n, args.repeats
    workers = os.cpu_count() or 1
    sizes = class_sizes(n, workers)
    print(f"{n} submissions of {ASSIGNMENT} on {workers} cores, {repeats} repeats; our runs "
          f"grade classes of {', '.join(map(str, sizes))}")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        plain_course, template = Course(tmp / "plain"), Course(tmp / "template")
        students = make_class(plain_course, ASSIGNMENT, n, tmp / "submissions")
        folders = {k: subset(tmp / "submissions", students[:k], tmp / f"class-{k}")
                   for k in sizes if k < n}
        folders[n] = tmp / "submissions"
        release(template, ASSIGNMENT)
        import torch  # noqa: F401 - the test work is measured with torch already imported

        for remember in (False, True):  # warm-up: the first use of an operator or of the meta
            # device costs extra once, in any interpreter; and the memory of references fills
            test_work_pass(plain_course, ASSIGNMENT, students, tmp / "submissions", remember)
        api = plain_nbgrader(plain_course, students, tmp / "submissions")
        walls, runs, remembered, slices = [], {}, {}, []
        cpus: dict[int, list[float]] = {k: [] for k in sizes}
        for r in range(repeats):  # interleaved: a slow spell of the machine hits stock
            # nbgrader, every size of our runs and the test work alike
            for into, remember in ((runs, False), (remembered, True)):
                for story, cpu in test_work_pass(plain_course, ASSIGNMENT, students,
                                                 tmp / "submissions", remember).items():
                    into.setdefault(story, []).append(cpu)
            dealt = students[r::repeats]
            slices.append((len(dealt), plain_slice(api, ASSIGNMENT, dealt)))
            for k in slot_order(sizes, r):
                wall, cpu = run_ours(template.root, ASSIGNMENT, folders[k], tmp)
                cpus[k].append(cpu)
                if k == n:
                    walls.append(wall)
        work, work_median, work_runs = test_work(students, runs)
        work_remembered = test_work(students, remembered)[0]
        parts, floor = startup_parts(workers)
        costs = stage_costs_fresh(max(n // 3, 5))
    ours = statistics.median(walls)
    plain = sum(seconds for _, seconds in slices)  # every student graded once
    # each slot's own ratio: its slice of stock nbgrader, per notebook, against the run beside it
    per_notebook = [seconds / k for k, seconds in slices if k]
    by_slot = [seconds / k * n / wall for (k, seconds), wall in zip(slices, walls, strict=True)
               if k]
    # The sizes give CPU per notebook (the slope of a line through them) and the start-up (where
    # it meets a class of none). Each estimated twice, from the least run of each size (noise
    # only ever adds CPU; the test work is taken the same way) and from the median run of each
    # size; the verdict needs both.
    estimates = {}
    for name, pick, base in (("least", min, work), ("median", statistics.median, work_median)):
        slope, startup = line([(k, pick(cpus[k])) for k in sizes])
        estimates[name] = (slope, startup, slope / base)
    per_slot = [line([(k, cpus[k][r]) for k in sizes]) for r in range(repeats)]
    print(f"plain nbgrader, sequential   {plain:7.1f} s    {plain / n:.2f} s per notebook "
          f"(in {len(by_slot)} slices, one beside each slot of our runs: "
          f"{min(per_notebook):.2f}-{max(per_notebook):.2f} s per notebook)")
    print(f"ours, {workers} workers, end to end  {median_spread(walls, ' s', 1)}")
    print(f"speed-up                     {plain / ours:7.1f} x  (target >= 20; slot by slot, "
          f"each slice against the run beside it: {min(by_slot):.1f}-{max(by_slot):.1f} x)")
    print(f"test work alone              {work:7.3f} s CPU per notebook (each notebook's least "
          f"of {repeats}, each pass beside a slot of our runs; median {work_median:.3f}; "
          f"class mean per pass {min(work_runs):.3f}-{max(work_runs):.3f})")
    for k in sizes:
        print(f"ours, CPU of a class of {k:<5d}{median_spread(cpus[k], ' s', 2)}")
    for name, (slope, startup, ratio) in estimates.items():
        print(f"ours, from the {name + ' runs:':<12} {slope:.3f} s CPU per notebook = "
              f"{ratio:.2f} x the test work (target <= 1.5); start-up {startup:.2f} s CPU "
              "(target <= 5)")
    slopes, starts = [slope for slope, _ in per_slot], [start for _, start in per_slot]
    print(f"  from each slot's runs (one of each size): CPU per notebook "
          f"{min(slopes):.3f}-{max(slopes):.3f} s, start-up {min(starts):.2f}-{max(starts):.2f} s "
          f"({len(per_slot)} slots)")
    slope, startup, _ = estimates["median"]
    print("  each size's median run off the line through the medians (a line fits if these stay "
          "within the runs' spread): " + ", ".join(
              f"{k}: {statistics.median(cpus[k]) - startup - k * slope:+.2f} s" for k in sizes))
    print(floor_per_notebook(costs, work))
    print(least_possible(costs, work, work_remembered))
    print("  where the start-up goes, each part measured on its own:")
    for what, seconds in parts:
        print(f"    {seconds:5.2f} s  {what}")
    print(f"    {sum(s for _, s in parts):5.2f} s  together")
    print("\n".join(floor))
    sandbox_costs()
    ok = plain / ours >= 20 and all(startup <= 5 and ratio <= 1.5
                                    for _, startup, ratio in estimates.values())
    print("targets met" if ok else "targets NOT met")
    return 0 if ok else 1


STAGES = ("stage 1, sanitize (nbgrader's steps, in the command)",
          "stage 2, the judge (tests, in the grader's process)",
          "stage 3, record (nbgrader's autograde, in the command)",
          "the student's sandboxed processes")
BARE = "a sandboxed turn with no cells (judge, student's process, fork)"
CALLS = "requests: calls of the student's code"  # (counts per notebook, not seconds)
OTHERS = "requests: any other (cells, names, attributes, gradients, files)"
CALL_PRICE = "a call's crossing in a tight loop, its function's own CPU left out"
OTHER_PRICE = "a request that does nothing (ping) in a tight loop"


def without_cells(task):
    """The same submission with every cell taken out: what a notebook costs to run in the
    sandbox before any of its code (the student's process forked, its files sent, ended,
    swept)."""
    import dataclasses

    notebooks = {}
    for name, source in task.notebooks.items():
        nb = nbformat.reads(source, as_version=4)
        nb.cells = []
        notebooks[name] = nbformat.writes(nb)
    return dataclasses.replace(task, notebooks=notebooks)


PASSES = 3  # gradings of the class behind each stage cost (each submission's least)


def stage_costs(n: int, passes: int = PASSES) -> dict[str, float]:
    """CPU seconds per notebook of each stage of grader.pipeline.autograde, driven here one
    submission after another, in this process (the judge too); the student's side is the CPU of the
    sandbox's server and of every process it forked (it reaps them). Also, for each submission, the
    same turn without cells (BARE), three times. The class is graded `passes` times, each time into
    a course of its own (a gradebook that has not seen the student, as in a run); each submission's
    stage counts with its least, and the figure is the class's mean (the class's stories cost
    different amounts: a median would pick one story). And how many requests the judge sends a
    notebook's process (CALLS, OTHERS: counts), with their prices in a tight loop
    (crossing_prices)."""
    from grader.nbgrader.api import api_for
    from grader.nbgrader.patches import shared_engines
    from grader.pipeline.autograde import prepare
    from grader.pipeline.grades import record
    from grader.pipeline.pools import execute
    from grader.sandbox.confinement import confinement
    from grader.sandbox.launcher import zygote as zygote_of
    from grader.sandbox.proc import cpu_seconds

    with tempfile.TemporaryDirectory() as tmp, shared_engines():
        tmp = Path(tmp)
        first, *students = make_class(Course(tmp / "course"), ASSIGNMENT, n + 1,
                                      tmp / "submissions")
        zygote = zygote_of(confinement(), preload=students_need())

        sent = collections.Counter()

        def grade(s, course, api) -> list[float]:
            t0 = time.process_time()
            task, flags = prepare(course, ASSIGNMENT, s.id,
                                  tmp / "submissions" / s.id / ASSIGNMENT, None, False)
            t1 = time.process_time()
            student0 = cpu_seconds(zygote.host_pid, reaped=True)
            sent.clear()
            with counting(sent):
                outcome = execute(task)
            t2 = time.process_time()
            calls, others = sent["call"], sum(sent.values()) - sent["call"]
            student1 = cpu_seconds(zygote.host_pid, reaped=True)
            result = record(course, api, ASSIGNMENT, s.id, outcome, flags)
            t3 = time.process_time()
            if result.error:
                raise SystemExit(f"{s.id} was not graded: {result.error}")
            bare = without_cells(task)
            b0, c0 = time.process_time(), cpu_seconds(zygote.host_pid, reaped=True)
            for _ in range(3):
                execute(bare)
            return [t1 - t0, t2 - t1, t3 - t2, student1 - student0,
                    (time.process_time() - b0
                     + cpu_seconds(zygote.host_pid, reaped=True) - c0) / 3,
                    calls, others]

        runs = []
        for p in range(passes):
            course = Course(tmp / f"course-{p}")
            release(course, ASSIGNMENT)
            api = api_for(course, recording=True)
            if p == 0:
                grade(first, course, api)  # pays each first use: not counted
            runs.append([grade(s, course, api) for s in students])
        zygote.stop()
    names = (*STAGES, BARE, CALLS, OTHERS)
    least = [[min(run[i][k] for run in runs) for k in range(len(names))]
             for i in range(len(students))]
    costs = {name: statistics.fmean(row[k] for row in least) for k, name in enumerate(names)}
    return {**costs, **crossing_prices()}


@contextlib.contextmanager
def counting(sent: collections.Counter):
    """Every request the judge sends a student's process in the block, counted by operation."""
    from grader.sandbox import session

    send = session.Session.request

    def request(self, message, *args, **kwargs):
        sent[message.get("op")] += 1
        return send(self, message, *args, **kwargs)

    session.Session.request = request
    try:
        yield
    finally:
        session.Session.request = send


def crossing_prices(calls: int = 1000, repeats: int = 3) -> dict[str, float]:
    """CPU seconds, both sides together, of a call's crossing and of a request that does
    nothing, each the least of `repeats` passes of `calls` in a tight loop on one core
    (bench/crossing.py): hot caches, nothing else run between them. The call's function's own
    CPU (timed here in a loop) is taken out: it is part of the test work."""
    import crossing

    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cores)})  # as a judge and its student's process are kept
    try:
        runs, _ = crossing.crossings(calls, repeats, only=(crossing.PING, crossing.CALL))
        function = crossing.function_alone(calls, repeats)
    finally:
        os.sched_setaffinity(0, cores)
    both = {name: min(a + b for a, b in pairs) for name, pairs in runs.items()}
    return {CALL_PRICE: max(both[crossing.CALL] - function, 0.0),
            OTHER_PRICE: both[crossing.PING]}


def stage_costs_fresh(n: int) -> dict[str, float]:
    """stage_costs in a fresh interpreter, as a grading command's are: this one has run every
    notebook of the test work (measured here after it, a notebook's record took 0.068 s and
    its judge 0.173 s, against 0.059 s and 0.154-0.163 s in fresh interpreters before and
    after, in one run)."""
    done = subprocess.run([sys.executable, __file__, "--split", str(n), "--json"],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def floor_per_notebook(costs: dict[str, float], work: float) -> str:
    """What a notebook costs in this design beyond its test work, whatever the tests do:
    nbgrader's two stages (it sanitizes and records every notebook) and a sandboxed process of
    its own, without cells; as a line of the print-out."""
    fixed, parts = _fixed(costs)
    return (f"  floor of this design, per notebook: {work + fixed:.3f} s = the test work "
            f"{work:.3f} + {parts} = {(work + fixed) / work:.2f} x the test work")


def _fixed(costs: dict[str, float]) -> tuple[float, str]:
    """What every notebook costs whatever its tests: nbgrader's sanitize and record and a
    sandboxed turn with no cells, in seconds and as words for a line of the print-out."""
    return (costs[STAGES[0]] + costs[STAGES[2]] + costs[BARE],
            f"nbgrader's sanitize {costs[STAGES[0]]:.3f} and record {costs[STAGES[2]]:.3f} + a "
            f"sandboxed turn with no cells {costs[BARE]:.3f}")


def least_possible(costs: dict[str, float], work: float, remembered: float) -> str:
    """The least a notebook could cost in this design, as a line of the print-out: its tests
    and the student's code run once, with the judge's memory of references (`remembered`, the
    test work with it on), plus nbgrader's two stages, a sandboxed turn with no cells, and
    each request the tests make at its price in a tight loop. A lower bound: in grading, every
    part runs colder than in a loop of its own."""
    crossings = costs[CALLS] * costs[CALL_PRICE] + costs[OTHERS] * costs[OTHER_PRICE]
    fixed, parts = _fixed(costs)
    least = remembered + fixed + crossings
    return (f"  the least a notebook could cost in this design: {least:.3f} s = the test work "
            f"with the judge's memory of references {remembered:.3f} + {parts} + "
            f"{costs[CALLS]:.0f} calls crossing at "
            f"{1e6 * costs[CALL_PRICE]:.0f} us and {costs[OTHERS]:.0f} other requests at "
            f"{1e6 * costs[OTHER_PRICE]:.0f} us (each in a tight loop) {crossings:.3f} "
            f"= {least / work:.2f} x the test work")


def split(n: int, as_json: bool = False) -> int:
    """--split: where a notebook's CPU goes, stage by stage (stage_costs), and how much of it a
    notebook with no cells would cost (as_json: the figures alone, on the last line)."""
    costs = stage_costs(n)
    if as_json:
        print(json.dumps(costs))
        return 0
    print(f"where a notebook's CPU goes ({n} submissions of {ASSIGNMENT}, one at a time, after "
          f"the start-up; each submission's least of {PASSES} passes):")
    for name in STAGES:
        print(f"  {costs[name]:6.3f} s  {name}")
    print(f"  {sum(costs[name] for name in STAGES):6.3f} s  together")
    print(f"  of which {costs[BARE]:.3f} s would be spent on the same notebook with no cells: "
          f"{BARE}")
    print(f"  requests to the student's process, per notebook: {costs[CALLS]:.0f} calls of "
          f"its code, {costs[OTHERS]:.0f} others; in a tight loop, {CALL_PRICE}: "
          f"{1e6 * costs[CALL_PRICE]:.0f} us, {OTHER_PRICE}: {1e6 * costs[OTHER_PRICE]:.0f} us")
    return 0


CURVE = (10, 30, 100, 300)


def curve(plot: str | None, repeats: int) -> int:
    """Seconds per notebook for classes of 10 to 300: the start-up amortised. Each size is
    graded `repeats` times, the sizes in turn (a slow spell of the machine hits them all);
    printed and plotted: the median, and the least and the most."""
    runs: dict[int, list[tuple[float, float]]] = {n: [] for n in CURVE}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        template = Course(tmp / "template")
        students = make_class(template, ASSIGNMENT, max(CURVE), tmp / "all")
        folders = {n: subset(tmp / "all", students[:n], tmp / f"class-{n}") for n in CURVE}
        for _ in range(repeats):
            for n in CURVE:
                runs[n].append(run_ours(template.root, ASSIGNMENT, folders[n], tmp))
    print(f"each size graded {repeats} times, in turns: the median (least-most)")
    for n, done in runs.items():
        wall = [w / n for w, _ in done]
        cpu = [c / n for _, c in done]
        print(f"{n:4d} submissions  {statistics.median(wall) * n:7.1f} s  "
              f"{statistics.median(wall):6.3f} ({min(wall):.3f}-{max(wall):.3f}) s per notebook  "
              f"{statistics.median(cpu):6.3f} ({min(cpu):.3f}-{max(cpu):.3f}) s CPU per notebook",
              flush=True)
    if plot:
        draw_curve(runs, Path(plot))
        print(f"plot: {plot}")
    return 0


def draw_curve(runs: dict[int, list[tuple[float, float]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = list(runs)
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for which, style, label in ((0, "o-", "wall clock, 2 workers"),
                                (1, "s--", "CPU, all processes")):
        per = [[run[which] / n for run in runs[n]] for n in sizes]
        mid = [statistics.median(v) for v in per]
        spread = [[m - min(v) for m, v in zip(mid, per, strict=True)],
                  [max(v) - m for m, v in zip(mid, per, strict=True)]]
        ax.errorbar(sizes, mid, yerr=spread, fmt=style, capsize=3, label=label)
    ax.set_xscale("log")
    ax.set_xticks(sizes, labels=[str(k) for k in sizes])
    ax.set_xlabel("submissions graded in one run")
    ax.set_ylabel("seconds per notebook")
    repeats = min(len(v) for v in runs.values())
    ax.set_title(f"Grading {ASSIGNMENT}: start-up amortised over the class\n(median of "
                 f"{repeats} runs; bars: least and most)", fontsize=10)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def stress(n: int) -> int:
    """n submissions of soft_select in one run: every one must come back graded."""
    from grader.pipeline.autograde import autograde

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        course = Course(tmp / "course")
        students = make_class(course, "soft_select", n, tmp / "submissions")
        start = time.perf_counter()
        results = autograde(course, "soft_select", tmp / "submissions")
        took = time.perf_counter() - start
        expected = {s.id: s.expect for s in students}
        graded = [r for r in results if not r.error]
        wrong = [r.student for r in graded if (expected[r.student] == "full")
                 != (r.auto_score == r.auto_max)]
    print(f"stress: {n} submissions, {len(graded)} graded, {n - len(graded)} lost, "
          f"{len(wrong)} with an unexpected score, in {took:.0f} s "
          f"({took / n:.2f} s per notebook on {os.cpu_count()} cores)")
    return 0 if len(graded) == n and not wrong else 1


def arguments(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("n", nargs="?", type=int, default=30, help="submissions (default 30)")
    p.add_argument("--repeats", type=int, default=6,
                   help="repeats of our runs (default 6: every order of three sizes once)")
    p.add_argument("--curve", action="store_true", help="grade 10, 30, 100 and 300")
    p.add_argument("--plot", help="with --curve: save the curve as this PNG")
    p.add_argument("--stress", type=int, help="N soft_select submissions in one run")
    p.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # for --split
    p.add_argument("--split", action="store_true",
                   help="where a notebook's CPU goes, stage by stage, for N submissions")
    return p.parse_args(argv)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main(sys.argv[1:]))
