"""Benchmark: what each start-up and per-notebook trick of grader/startup/ saves today.

Every trick is measured by running the same work with it and without it, the two (or more)
variants alternated, each repeat in a rotated order, and each figure the least of the repeats
(a spell of the machine only ever adds CPU). All CPU, no wall clock.

  start-up   each process a grading run starts, run fresh here (`python -c CODE`), every trick
             on, then with one trick switched off; its CPU (the process and every process it
             started, orphans included: this process is their subreaper) from
             getrusage(RUSAGE_CHILDREN):
               the command   grader.cli's imports (nbgrader's with the collector paused,
                             jsonschema's format packages left out), the notebook schema's
                             validators installed, a notebook checked against both of them,
                             its end (exit_now);
               the server    the grading pool's fork server: grader.pipeline.pools.PRELOAD
                             imported as multiprocessing's fork server imports it, then its end;
               a sandbox     each worker's sandbox server (grader.sandbox.zygote.main's start-up,
                             outside bwrap: the same imports, warm-ups, deferral and collector
                             calls), with its students' processes forked from it (below);
               the pool      a fork server and W pool processes each running the judge's
                             first operations (warm_up), with and without the server's preload.
             The base: the command + the server + W sandbox servers (W = one a core, as
             `make bench` runs), every trick on, measured in the same run.
  per        a student's process forked from the sandbox-like server (its fork, the
  notebook   warm-up's own operations as the notebook's first ones, its exit); and stages 1
             and 3 of grading (sanitize, record, in this process, in the gradebook of a fresh
             course) for a class handing in the same notebook, each trick of the gradebook
             taken out in turn with every other one on. The base: one notebook graded whole
             here (sanitize, the judge, the student's sandboxed process, record), every trick
             on, in the same run, split as `bench/autograde_class.py --split` splits it.

A trick that cannot be switched off without rewriting the grader gets a row that says so,
"not separable: why" (Trick.why_not), and no number; none needs one today.

Prints one line per trick: name | file | without | with | gain s | gain % of its base.

    .venv/bin/python bench/startup_tricks.py [--repeats N] [--quick] [--only TRICK ...]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
OFF = "STARTUP_TRICKS_OFF"  # (the pool's fork server imports this module: what it switches off)

if os.environ.get(OFF) == "warm_up" and "grader.startup.warming" in sys.modules:
    # Imported by a fork server's preload (pool_code), before grader.startup.warmed: its
    # warm-up does nothing, so each pool process pays the first uses itself.
    import grader.startup.warm_up as _warm_up

    _warm_up.warm_up = lambda: None


@dataclass
class Trick:
    name: str
    files: tuple[str, ...]  # relative to the repository
    base: str  # "start-up" or "notebook"
    processes: tuple[str, ...] = ()  # start-up: the processes it is switched off in
    why_not: str = ""  # not separable: why (no measurement)
    note: str = ""


# Every module of grader/startup/ is in the files of one trick at least (the test checks).
S = "grader/startup/"
TRICKS = [
    Trick("collector", (S + "collector.py",), "start-up", ("command", "server", "sandbox"),
          note="the collector running through each process's start-up"),
    Trick("threads", (S + "threads.py",), "start-up", ("server", "sandbox"),
          note="ONE_THREAD unset in the fork server and the sandbox server"),
    Trick("exits", (S + "exits.py",), "start-up", ("command", "server", "sandbox"),
          note="each process torn down at its end"),
    Trick("engines", ("grader/nbgrader/patches.py",), "notebook",
          note="nbgrader opening its own engine each time"),
    Trick("notebook_rows", (S + "notebook_rows.py",), "notebook",
          note="OverwriteCellsOnce and SaveAutoGradesOnce looking each cell's rows up on "
               "their own (NotebookRows off), the commit still deferred"),
    Trick("deferred commit", ("grader/nbgrader/patches.py",), "notebook",
          note="SaveAutoGradesOnce committing after each cell as nbgrader does, the rows "
               "still read once (expired by each commit)"),
    Trick("compiler", (S + "compiler.py",), "start-up", ("sandbox",),
          note="without defer(): the meta device's warm-up imports torch._dynamo"),
    Trick("fork server preload", (S + "warming.py", S + "warmed.py"), "start-up", ("pool",),
          note="a fork server with no preload: each pool process imports PRELOAD itself"),
    Trick("warm-up, pool", (S + "warm_up.py", S + "warmed.py"), "start-up", ("pool",),
          note="the fork server without warm_up(): each pool process pays the first uses"),
    Trick("warm-up, sandbox", (S + "warm_up.py",), "notebook",
          note="the sandbox server without warm_up, warm_up_gradients, warm_up_seed: each "
               "student's process pays the first uses"),
    Trick("formats", (S + "formats.py",), "start-up", ("command", "server")),
    Trick("huge_pages", (S + "huge_pages.py",), "notebook",
          note="the sandbox server started without GLIBC_TUNABLES: a student's process "
               "forked, run, ended"),
]

# What each start-up process's variant switches off (None: every trick on).
PROCESS_VARIANTS = {
    "command": (None, "collector", "exits", "formats"),
    "server": (None, "collector", "threads", "exits", "formats"),
    "sandbox": (None, "collector", "threads", "exits", "compiler", "warm-up, sandbox",
                "huge_pages"),
    "pool": (None, "fork server preload", "warm-up, pool"),
}
RECORD_VARIANTS = (None, "engines", "notebook_rows", "deferred commit")


# --- the processes' code -------------------------------------------------------------------


def command_code(off: str | None) -> str:
    """The grading command's start-up (grader.cli.main, grader.cli.autograde.run, the first
    notebook's checks in stage 1) and its end (grader.cli.run)."""
    lines = ["import grader.cli"]
    if off != "formats":
        lines.append("from grader.startup import formats; formats.leave_out()")
    imports = "import grader.pipeline.autograde, grader.pipeline.sanitize, nbgrader.apps"
    if off != "collector":
        lines += ["from grader.startup.collector import paused", "with paused():",
                  f"    {imports}"]
    else:
        lines.append(imports)
    lines += ["import nbformat", "from nbformat.v4 import new_notebook",
              "nbformat.validate(new_notebook())",  # nbformat's own check, and nbconvert's
              "nbformat.validate(new_notebook(), relax_add_props=True)"]
    if off != "exits":
        lines.append("from grader.startup.exits import exit_now; exit_now()")
    return "\n".join(lines)


_SERVER_OFF = {  # lines run right after grader.startup.warming, before anything else
    "collector": ["gc.enable()"],
    "threads": ["from grader.startup.threads import ONE_THREAD",
                "for k in ONE_THREAD: os.environ.pop(k, None)"],
    "formats": ["from grader.startup.formats import PACKAGES",
                "for p in PACKAGES:",
                "    if p in sys.modules and sys.modules[p] is None: del sys.modules[p]"],
}


def server_code(off: str | None, preload: list[str]) -> str:
    """The pool's fork server: `preload` imported one after another, as multiprocessing's fork
    server does, then its end (a SystemExit, as when the command has gone)."""
    lines = ["import atexit, gc, os, sys", f"for name in {preload!r}:", "    __import__(name)",
             "    if name == 'grader.startup.warming':"]
    lines += [f"        {line}" for line in _SERVER_OFF.get(off, ["pass"])]
    if off == "exits":
        lines += ["from grader.startup.exits import exit_now", "atexit.unregister(exit_now)"]
    lines.append("raise SystemExit(0)")
    return "\n".join(lines)


def sandbox_code(off: str | None, declared: list[str], forks: int) -> str:
    """grader.sandbox.zygote.main's start-up, outside the sandbox; then `forks` students'
    processes forked from it one after another, each running the warm-up's operations (the
    kinds of operations a notebook uses) and ending; then its end. Prints {"ready": CPU
    seconds at the end of its start-up, "forks": [CPU seconds of each student's process, its
    fork in this process included]}."""
    warm = off != "warm-up, sandbox"
    lines = ["import gc, json, os, sys, time",
             "from grader.startup.huge_pages import TUNING",
             "for name in TUNING: os.environ.pop(name, None)",
             "from grader.sandbox import zygote as Z",  # the server's module and its imports
             "from grader.startup import compiler",
             "from grader.startup.collector import pause, resume",
             "from grader.startup.exits import exit_now",
             "from grader.startup.warm_up import (warm_up, warm_up_gradients, warm_up_meta,",
             "                                    warm_up_seed)"]
    if off != "collector":
        lines.append("pause()")
    lines += ["for name in Z.PRELOAD: __import__(name)", "import torch",
              "torch.set_num_threads(1)"]
    if warm:
        lines += ["warm_up()", "warm_up_gradients()"]
    lines.append(f"for name in {declared!r}: __import__(name)")
    if off != "compiler":
        lines.append("compiler.defer()")
    lines.append("warm_up_meta()")
    if warm:
        lines.append("warm_up_seed()")
    lines += ["Z.warm_up_lines()", "from grader.sandbox.worker import shell", "shell()",
              "resume()", "ready = time.process_time()", "costs = []",
              f"for _ in range({forks}):",
              "    t0 = time.process_time()",
              "    pid = os.fork()",
              "    if pid == 0:",
              "        warm_up(); warm_up_gradients(); warm_up_seed()",
              "        os._exit(0)",
              "    t1 = time.process_time()",
              "    usage = os.wait4(pid, 0)[2]",
              "    costs.append(t1 - t0 + usage.ru_utime + usage.ru_stime)",
              "print(json.dumps({'ready': ready, 'forks': costs}), flush=True)"]
    if off != "exits":
        lines.append("exit_now()")
    return "\n".join(lines)


def pool_code(off: str | None, preload: list[str], workers: int) -> str:
    """A fork server (with `preload`, or none) and `workers` pool processes forked from it,
    each importing `preload` (nothing left to import where the server did) and running the
    judge's first operations (judge_task)."""
    served = [] if off == "fork server preload" else preload
    return "\n".join([
        "import concurrent.futures, multiprocessing",
        "import startup_tricks as bench",
        "ctx = multiprocessing.get_context('forkserver')",
        f"ctx.set_forkserver_preload({served!r})",
        f"with concurrent.futures.ProcessPoolExecutor({workers}, mp_context=ctx,",
        f"        initializer=bench.pool_init, initargs=({preload!r},)) as pool:",
        f"    for done in [pool.submit(bench.judge_task) for _ in range({workers})]:",
        "        done.result()"])


def pool_init(names: list[str]) -> None:
    """A pool process's start: what the fork server did not import (pool_code)."""
    for name in names:
        __import__(name)


def judge_task() -> None:
    """A judge's first operations (the kinds grader.startup.warm_up warms up)."""
    from grader.startup.warm_up import warm_up

    warm_up()


# --- running them --------------------------------------------------------------------------


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def environment(process: str, off: str | None) -> dict[str, str]:
    """The environment a process starts with: this one's, without the variables the tricks
    set (the sandbox server's own: ONE_THREAD and huge_pages.TUNING, as launcher.launch sets
    them, unless switched off)."""
    from grader.startup.huge_pages import TUNING
    from grader.startup.threads import ONE_THREAD

    env = {k: v for k, v in os.environ.items() if k not in {*ONE_THREAD, *TUNING, OFF}}
    if process == "sandbox":
        env["MPLBACKEND"] = "Agg"
        if off != "threads":
            env.update(ONE_THREAD)
        if off != "huge_pages":
            env.update(TUNING)
    if process == "pool":
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BENCH), str(REPO),
                                                          env.get("PYTHONPATH")]))
        if off == "warm-up, pool":
            env[OFF] = "warm_up"
    return env


def fresh(code: str, env: dict[str, str]) -> tuple[float, dict]:
    """CPU seconds of a fresh interpreter running `code`, with every process it started, and
    the JSON it printed last (or {})."""
    from autograde_class import reap_orphans

    before = children_cpu()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=REPO)
    reap_orphans()
    cpu = children_cpu() - before
    if done.returncode != 0:
        raise SystemExit(f"a measured process failed ({done.returncode}):\n{code}\n"
                         f"{done.stderr[-3000:]}")
    last = done.stdout.strip().splitlines()[-1:] or ["{}"]
    return cpu, json.loads(last[0])


@dataclass
class Runs:
    """Every run of each start-up process's variants: {(process, off): [CPU seconds]}, and the
    students' processes forked in the sandbox variants: {off: [CPU seconds of each]}."""

    cpu: dict = field(default_factory=dict)
    forks: dict = field(default_factory=dict)

    def least(self, process: str, off: str | None) -> float:
        return min(self.cpu[(process, off)])


def rotated(items: tuple, r: int) -> tuple:
    k = r % len(items)
    return items[k:] + items[:k]


def start_up_runs(repeats: int, workers: int, forks: int, wanted: set[str]) -> Runs:
    from autograde_class import ASSIGNMENT, students_need

    from grader.pipeline.pools import preload_for

    preload = preload_for(REPO / "assignments" / ASSIGNMENT)
    served = [preload[0], "startup_tricks", *preload[1:]]  # (pool_code's server, see OFF)
    declared = list(students_need())
    runs = Runs()
    # every process's run with every trick on (the base), and the pool's where it is wanted
    todo = [(process, off) for process, offs in PROCESS_VARIANTS.items() for off in offs
            if (off is None or off in wanted)
            and (process != "pool" or any(o in wanted for o in offs if o))]

    def run(process: str, off: str | None) -> tuple[float, dict]:
        code = {"command": lambda: command_code(off),
                "server": lambda: server_code(off, preload),
                "sandbox": lambda: sandbox_code(off, declared, forks),
                "pool": lambda: pool_code(off, served, workers)}[process]()
        return fresh(code, environment(process, off))

    for process in dict.fromkeys(p for p, _ in todo):  # not counted: whatever a first run
        run(process, None)  # pays once (bytecode written, files read into the page cache)
    for r in range(repeats):
        for process, off in rotated(tuple(todo), r):
            cpu, printed = run(process, off)
            spent_forking = sum(printed.get("forks", []))
            runs.cpu.setdefault((process, off), []).append(cpu - spent_forking)
            runs.forks.setdefault(off, []).extend(printed.get("forks", []))
    return runs


def grading_runs(students: int, repeats: int, wanted: set[str], base_students: int = 3):
    """Per notebook: (the base: {stage: CPU seconds of one notebook, each the least of
    `base_students`}, {variant: [CPU seconds per notebook of sanitize and record, one per
    repeat]}, the sandbox server's start_cpu)."""
    import torch  # noqa: F401 - the judge runs here, as in a pool process that imported it
    from autograde_class import ASSIGNMENT, make_class, students_need

    from grader.course import Course
    from grader.nbgrader.api import api_for
    from grader.nbgrader.patches import shared_engines
    from grader.nbgrader.release import release
    from grader.pipeline.autograde import prepare
    from grader.pipeline.grades import record
    from grader.pipeline.pools import execute
    from grader.sandbox.confinement import confinement
    from grader.sandbox.launcher import zygote as zygote_of
    from grader.sandbox.proc import cpu_seconds

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        template = Course(tmp / "template")
        release(template, ASSIGNMENT)
        made = make_class(Course(tmp / "maker"), ASSIGNMENT, 3, tmp / "made")[2]  # a mistake
        ids = [f"p{i:03d}" for i in range(max(students, base_students) + 1)]
        for sid in ids:  # the same notebook, handed in by each
            shutil.copytree(tmp / "made" / made.id, tmp / "submissions" / sid)

        def course_copy() -> Course:
            root = tmp / f"course-{time.monotonic_ns()}"
            shutil.copytree(template.root, root, symlinks=True)
            return Course(root)

        def stage_1(course: Course, sid: str):
            """(the task, the flags) of grader.pipeline.autograde.prepare, as the bench calls
            it (the limits: its default)."""
            got = prepare(course, ASSIGNMENT, sid, tmp / "submissions" / sid / ASSIGNMENT,
                          None, False)
            if len(got) == 3:  # (task, error, flags), where prepare returns the error
                task, error, flags = got
                if error:
                    raise SystemExit(f"{sid} was not graded: {error}")
                return task, flags
            return got

        zygote = zygote_of(confinement(), preload=students_need())
        stages, outcome = [], None
        with shared_engines():
            course = course_copy()
            api = api_for(course, recording=True)
            for i, sid in enumerate(ids[:base_students + 1]):  # the first pays first uses
                t0 = time.process_time()
                task, flags = stage_1(course, sid)
                t1, s0 = time.process_time(), cpu_seconds(zygote.host_pid, reaped=True)
                outcome = execute(task)
                t2, s1 = time.process_time(), cpu_seconds(zygote.host_pid, reaped=True)
                result = record(course, api, ASSIGNMENT, sid, outcome, flags)
                t3 = time.process_time()
                if result.error:
                    raise SystemExit(f"{sid} was not graded: {result.error}")
                if i:
                    stages.append((t1 - t0, t2 - t1, s1 - s0, t3 - t2))
                score = result.auto_score
        base = {name: min(s[k] for s in stages) for k, name in enumerate(
            ("stage 1, sanitize", "stage 2, the judge", "the student's sandboxed process",
             "stage 3, record"))}
        zygote_cpu = zygote.start_cpu
        zygote.stop()

        variants = tuple(v for v in RECORD_VARIANTS if v is None or v in wanted)
        per = {v: [] for v in variants}
        if len(variants) > 1:
            for r in range(repeats):
                for off in rotated(variants, r):
                    course = course_copy()
                    with recording_without(off):
                        api = api_for(course, recording=True)
                        spent = 0.0
                        for i, sid in enumerate(ids[:students + 1]):  # the first: first uses
                            t0 = time.process_time()
                            task, flags = stage_1(course, sid)
                            result = record(course, api, ASSIGNMENT, sid, outcome, flags)
                            if i:
                                spent += time.process_time() - t0
                            if result.error or result.auto_score != score:
                                raise SystemExit(f"{sid}, without {off}: {result.error} "
                                                 f"(score {result.auto_score}, not {score})")
                    per[off].append(spent / students)
    return base, per, zygote_cpu


@contextlib.contextmanager
def recording_without(off: str | None):
    """Stages 1 and 3 as a grading run has them (grader.pipeline.autograde: the whole run in
    shared_engines), without the trick `off` and with every other one."""
    from nbgrader import preprocessors as stock

    import grader.nbgrader.patches as ours

    saved = ours.NotebookRows, ours.SaveAutoGradesOnce
    try:
        if off == "notebook_rows":  # every gradebook counts as NotebookRows: never wrapped
            ours.NotebookRows = object
        elif off == "deferred commit":  # the rows read once, a commit after each cell
            ours.SaveAutoGradesOnce = type("SaveAutoGradesRowsOnce",
                                           (ours.RowsOnce, stock.SaveAutoGrades), {})
        with contextlib.nullcontext() if off == "engines" else ours.shared_engines():
            yield
    finally:
        ours.NotebookRows, ours.SaveAutoGradesOnce = saved


# --- the table -----------------------------------------------------------------------------


def row(trick: Trick, without: float | None, with_: float | None, base_name: str,
        base: float, text: str = "") -> str:
    files = ", ".join(trick.files)
    if without is None or with_ is None:
        return f"{trick.name} | {files} | - | - | {text} | -"
    gain = without - with_
    return (f"{trick.name} | {files} | {without:.3f} | {with_:.3f} | {gain:+.3f} | "
            f"{100 * gain / base:+.1f}% of {base_name} ({base:.3f} s)")


def table(runs: Runs | None, grading, workers: int, wanted: set[str]) -> tuple[list[str],
                                                                             list[str]]:
    """(The table's lines, the lines saying where each figure comes from.)"""
    times = {"command": 1, "server": 1, "sandbox": workers, "pool": 1}
    base_stage, per, zygote_cpu = grading if grading else ({}, {}, None)
    startup = notebook = None
    notes = []
    if runs is not None and ("command", None) in runs.cpu:
        parts = {p: runs.least(p, None) for p in ("command", "server", "sandbox")}
        startup = parts["command"] + parts["server"] + workers * parts["sandbox"]
        notes.append(f"start-up base {startup:.3f} s = the command {parts['command']:.3f} + "
                     f"the fork server {parts['server']:.3f} + {workers} x a sandbox server "
                     f"{parts['sandbox']:.3f} (every trick on; outside bwrap"
                     + (f"; the real sandbox server's own count in this run: {zygote_cpu:.3f} s)"
                        if zygote_cpu is not None else ")"))
    if base_stage:
        notebook = sum(base_stage.values())
        notes.append(f"notebook base {notebook:.3f} s = " + " + ".join(
            f"{name} {seconds:.3f}" for name, seconds in base_stage.items())
            + " (every trick on; `make bench`'s CPU per notebook, docs/performance.md: 0.209 s"
              " from the least runs)")
    lines = ["trick | file | without | with | gain s | gain % of <base>"]
    for trick in TRICKS:
        if trick.why_not:
            lines.append(row(trick, None, None, "", 0, f"not separable: {trick.why_not}"))
            continue
        if trick.name not in wanted:
            lines.append(row(trick, None, None, "", 0, "not measured (--only)"))
            continue
        if trick.base == "start-up":
            without = sum(times[p] * runs.least(p, trick.name) for p in trick.processes)
            with_ = sum(times[p] * runs.least(p, None) for p in trick.processes)
            lines.append(row(trick, without, with_, "start-up", startup or float("nan")))
            notes.append(f"{trick.name}: " + ", ".join(
                f"{p}{f' x {times[p]}' if times[p] > 1 else ''} "
                f"{runs.least(p, trick.name):.3f} / {runs.least(p, None):.3f}"
                for p in trick.processes) + f" s without / with; {trick.note}".rstrip("; "))
        elif trick.name in RECORD_VARIANTS:
            without, with_ = min(per[trick.name]), min(per[None])
            lines.append(row(trick, without, with_, "a notebook", notebook or float("nan")))
            notes.append(f"{trick.name}: stages 1 and 3 per notebook, {without:.4f} / "
                         f"{with_:.4f} s without / with; {trick.note}")
        else:  # a student's process forked from the sandbox server
            without, with_ = min(runs.forks[trick.name]), min(runs.forks[None])
            lines.append(row(trick, without, with_, "a notebook", notebook or float("nan")))
            extra = ""
            if trick.name == "warm-up, sandbox":
                cost = runs.least("sandbox", None) - runs.least("sandbox", trick.name)
                extra = (f"; it costs each sandbox server {cost:+.3f} s of start-up "
                         f"({workers} x: {100 * workers * cost / startup:+.1f}% of the "
                         "start-up)" if startup else "")
            notes.append(f"{trick.name}: a student's process (fork, first operations, exit) "
                         f"{without:.4f} / {with_:.4f} s without / with; {trick.note}{extra}")
    return lines, notes


def main(argv: list[str]) -> int:
    args = arguments(argv)
    sys.path.insert(0, str(BENCH))
    sys.path.insert(0, str(REPO))
    from autograde_class import become_subreaper

    from grader.nbgrader.config import setup_process

    setup_process()
    become_subreaper()
    workers = os.cpu_count() or 1
    repeats = args.repeats
    students, forks = (5, 2) if args.quick else (args.students, args.forks)
    wanted = {t.name for t in TRICKS} if not args.only else set(args.only)
    unknown = wanted - {t.name for t in TRICKS}
    if unknown:
        raise SystemExit(f"no such trick: {', '.join(sorted(unknown))}")
    started, load = time.monotonic(), os.getloadavg()[0]
    print(f"{workers} cores (W = {workers} workers), load average {load:.2f}; each figure the "
          f"least of {repeats} alternated runs; a class of {students} for the gradebook's "
          f"tricks, {forks} students' processes per sandbox server", flush=True)
    per_notebook = any(t.base == "notebook" and t.name in wanted for t in TRICKS)
    grading = grading_runs(students, repeats, wanted) if per_notebook else None
    runs = start_up_runs(repeats, workers, forks, wanted)
    lines, notes = table(runs, grading, workers, wanted)
    print("\n".join(lines))
    print("where each figure comes from (seconds of CPU, each the least of its runs):")
    print("\n".join(f"  {line}" for line in notes))
    print(f"took {time.monotonic() - started:.0f} s; load average {os.getloadavg()[0]:.2f} at "
          "the end")
    return 0


def arguments(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3, help="runs of each variant (default 3)")
    p.add_argument("--quick", action="store_true",
                   help="a class of 5 and 2 students' processes per sandbox server")
    p.add_argument("--students", type=int, default=30,
                   help="the class the gradebook's tricks record (default 30, as make bench)")
    p.add_argument("--forks", type=int, default=4,
                   help="students' processes forked from each sandbox server (default 4)")
    p.add_argument("--only", nargs="+", metavar="TRICK",
                   help="measure these tricks only (the others' rows say so)")
    return p.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
