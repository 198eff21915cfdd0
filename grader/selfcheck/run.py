"""`python -m grader check NOTEBOOK`: a student runs the visible tests and sees what passes.

The notebook is executed in a fresh kernel, in memory: the file on disk is not changed. Every
verdict comes from this run only: the outputs and execution counts saved in the file (a student
saves the notebook with them) are cleared first, so a test that did not run now is "not run",
never a PASS read from an old output. (The grader, unlike this check, runs the tests outside the
student's process; see grader/sandbox.)

Each message names only what the run shows: an error's kind, the cell it was raised in and the
line, read from the kernel's traceback; a NameError is traced to an earlier cell only where that
cell raised an error before the line that defines the name; a kernel's death by its exit status.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from grader.course import CELL_TIMEOUT, KERNEL_ARGS
from grader.nbgrader.config import setup_process
from grader.notebooks import read_notebook
from grader.selfcheck.cells import (
    CellFailure,
    Frame,
    answer_stub_line,
    defines_name,
    describe,
    error_frames,
    is_syntax_error,
    missing_name,
    written_answer_missing,
)
from grader.shown import shown
from grader.startup.threads import ONE_THREAD

# The reply nbclient is handed in place of the kernel's when a cell reaches the time limit
# (NotebookClient.error_on_timeout): its name tells the hook below that the cell was stopped.
_TIMED_OUT = "CheckCellTimeout"
# Seconds a new kernel may take to answer: nbclient's 60 s was not always enough on a busy
# machine (a class checking at once on a hub, CI's two cores with a looping notebook beside).
KERNEL_START = 180
# nbclient's messages (a timeout is reported by the check itself)
_LOG = "grader.selfcheck.run.kernel"


@dataclass
class TestResult:
    name: str
    points: float
    passed: bool
    message: str = ""
    hidden: bool = False  # a released cell whose tests were removed: graded after submission
    ran: bool = True  # False: the check stopped before this test (message says why)


@dataclass
class CheckRun:
    """What one check found: the visible tests' verdicts, problems in the other cells (errors,
    a stopped cell, answers still the released stub), written answers not given yet."""

    tests: list[TestResult] = field(default_factory=list)
    cells: list[CellFailure] = field(default_factory=list)
    written_missing: list[str] = field(default_factory=list)  # each cell, described

    @property
    def ok(self) -> bool:
        """Every visible test ran and passed, and no other cell raised an error or was stopped
        (an unanswered cell makes its tests fail)."""
        return all(r.passed for r in self.tests if not r.hidden) and not any(
            c.kind in ("error", "stopped") for c in self.cells)


def _has_code(source: str) -> bool:
    return any(line.strip() and not line.strip().startswith("#") for line in source.splitlines())


def kernel_environment() -> dict[str, str]:
    """The student's environment, with PyTorch and numpy on one thread each
    (grader.startup.threads):
    the course's models are tiny, and on a laptop's busy cores thread hand-offs cost more than
    the arithmetic (bench/autograde_one.py prints how long a student waits for this check, per
    assignment)."""
    return {**os.environ, **ONE_THREAD}


class _Stopped(Exception):
    """Raised from the hook once a cell reached the time limit: no later cell runs."""


@dataclass
class _Recorder:
    """nbclient's hooks: which cell is running, each cell's In[n], where a time limit struck,
    and the kernel process (for its exit status, should it die)."""

    client: NotebookClient | None = None
    running: int | None = None
    stopped: int | None = None
    numbers: dict[int, int] = field(default_factory=dict)  # In[n] -> cell index
    process: object = None

    def execute(self, cell, cell_index, **_):
        self.running = cell_index
        if self.process is None and self.client is not None and self.client.km is not None:
            self.process = getattr(self.client.km.provisioner, "process", None)

    def executed(self, cell, cell_index, execute_reply=None, **_):
        content = (execute_reply or {}).get("content", {})
        number = content.get("execution_count") or cell.get("execution_count")
        if number:
            self.numbers[int(number)] = cell_index
        if content.get("ename") == _TIMED_OUT:
            self.stopped = cell_index
            raise _Stopped


def _quiet_logger() -> logging.Logger:
    """nbclient's logger for the check: its errors ("Timeout waiting for execute reply",
    "Interrupting kernel") are what the check reports itself, in the student's words."""
    logger = logging.getLogger(_LOG)
    logger.propagate = False
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    return logger


def run_visible_tests(path: Path, timeout: int = CELL_TIMEOUT) -> CheckRun:
    setup_process()
    path = Path(path).resolve()
    nb = read_notebook(path)
    for cell in nb.cells:  # only what runs now counts
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    recorder = _Recorder()
    client = NotebookClient(
        nb, timeout=timeout, allow_errors=True, kernel_name="python3",
        startup_timeout=KERNEL_START, extra_arguments=KERNEL_ARGS, interrupt_on_timeout=True,
        shutdown_kernel="immediate",
        error_on_timeout={"ename": _TIMED_OUT, "evalue": "", "traceback": []},
        on_cell_execute=recorder.execute, on_cell_executed=recorder.executed,
        log=_quiet_logger(), resources={"metadata": {"path": str(path.parent)}})
    recorder.client = client
    died = None
    # The kernel's own stdout and stderr (its start-up warnings, the ZMQ tracebacks of a kernel
    # shut down while busy, a C library's prints) go to a file, shown only if the kernel dies.
    with tempfile.TemporaryFile("w+b") as kernel_output:
        try:
            client.execute(env=kernel_environment(), stdout=kernel_output, stderr=kernel_output)
        except _Stopped:
            pass
        except CellTimeoutError:  # (the kernel answered nothing, not even the interrupt)
            recorder.stopped = recorder.running
        except DeadKernelError:
            kernel_output.seek(0)
            died = _death(recorder, kernel_output.read().decode("utf-8", "replace"))
    return _verdicts(nb, recorder, timeout, died)


def _death(recorder: _Recorder, output: str) -> str:
    """How the kernel ended, as its exit status says, and the last lines it wrote."""
    code = recorder.process.poll() if recorder.process is not None else None
    if code is None:
        how = "the kernel (the Python process running your notebook) stopped answering"
    elif code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        how = (f"the kernel (the Python process running your notebook) was killed by {name}"
               + (" (the system sends it when memory runs out, among other reasons)"
                  if -code == signal.SIGKILL else ""))
    else:
        how = f"the kernel (the Python process running your notebook) exited with status {code}"
    tail = [line for line in output.splitlines()  # (not the kernel's own log lines)
            if line.strip() and not line.startswith("[IPKernelApp]")][-4:]
    return how + ("; its last words:\n" + "\n".join(tail) if tail else "")


def _verdicts(nb, recorder: _Recorder, timeout: int, died: str | None) -> CheckRun:
    run = CheckRun()
    failures: dict[int, CellFailure] = {}  # cell index -> what went wrong there (not tests)
    halted = recorder.stopped if recorder.stopped is not None else (
        recorder.running if died else None)
    for index, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type == "markdown":
            if meta.get("solution") and written_answer_missing(cell.source):
                run.written_missing.append(describe(nb, index))
            continue
        if cell.cell_type != "code":
            continue
        is_test = bool(meta.get("grade")) and not meta.get("solution")
        error = _error_output(cell)
        frames = error_frames(error, recorder.numbers) if error else []
        if index == halted:
            failure = _halted(nb, index, frames, timeout, died, error)
        elif error is not None:
            failure = _failure(nb, index, error, frames, failures)
        else:
            failure = None
        if is_test:
            run.tests.append(_test_result(nb, index, meta, failure, halted))
        elif failure is not None:
            failures[index] = failure
            run.cells.append(failure)
        elif meta.get("solution") and answer_stub_line(cell.source) is not None:
            run.cells.append(CellFailure("unanswered", describe(nb, index), ""))
    return run


def _error_output(cell):
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return output
    return None


def _test_result(nb, index, meta, failure: CellFailure | None, halted: int | None) -> TestResult:
    cell = nb.cells[index]
    name, points = meta.get("grade_id", "?"), float(meta.get("points", 0))
    hidden = not _has_code(cell.source)
    if failure is not None:
        return TestResult(name, points, False, failure.message, hidden=hidden)
    if not cell.source.strip():  # nothing to run (nbclient skips it): hidden, graded later
        return TestResult(name, points, True, hidden=True)
    if not cell.get("execution_count"):
        if halted is None:
            why = "the check stopped before this cell"
        else:
            why = f"the check stopped at {describe(nb, halted)}, before this test"
        return TestResult(name, points, False, f"not run: {why}", hidden=hidden, ran=False)
    return TestResult(name, points, True, hidden=hidden)


def _halted(nb, index, frames: list[Frame], timeout: int, died: str | None,
            error) -> CellFailure:
    where = _where(nb, frames, index)
    if died:
        return CellFailure("stopped", describe(nb, index), f"{died}\n(while running {where})")
    answered = "" if error is not None else " (the kernel did not answer the interrupt)"
    return CellFailure("stopped", describe(nb, index),
                       f"stopped after {timeout} s, the check's limit per cell, while running "
                       f"{where}{answered}. Run the check with a longer --timeout if your code "
                       "is only slow")


def _where(nb, frames: list[Frame], index: int) -> str:
    """'line 3', or 'line 5, in answer cell ... line 2' for a call into another cell."""
    own = next((f for f in frames if f.cell == index), None)
    role = "test" if nb.cells[index].get("metadata", {}).get("nbgrader", {}).get("grade") \
        else "cell"
    text = f"line {own.line} of this {role}" if own else f"this {role}"
    deepest = frames[-1] if frames else None
    if deepest is not None and deepest.cell != index:
        text += f", inside {describe(nb, deepest.cell)} at line {deepest.line}"
    return text


def _failure(nb, index, error, frames: list[Frame],
             earlier: dict[int, CellFailure]) -> CellFailure:
    ename, evalue = error.get("ename", "Error"), str(error.get("evalue", ""))
    deepest = frames[-1] if frames else None
    if ename == "NotImplementedError" and deepest is not None and \
            nb.cells[deepest.cell].get("metadata", {}).get("nbgrader", {}).get("solution") and \
            answer_stub_line(nb.cells[deepest.cell].source) == deepest.line:
        return CellFailure("unanswered", describe(nb, index),
                           f"not answered yet: {describe(nb, deepest.cell)} is still the "
                           "released `raise NotImplementedError()`", line=deepest.line)
    if is_syntax_error(ename):
        own = next((f for f in frames if f.cell == index), None)
        line = own.line if own else _syntax_line(evalue)
        detail = re.sub(r"\s*\([^()]*\.py, line \d+\)$", "", evalue)
        return CellFailure("error", describe(nb, index),
                           f"{ename} at line {line}: {detail}", ename=ename, line=line)
    message = f"{ename}: {evalue}" if evalue else ename
    if frames:
        message += f"\n(at {_where(nb, frames, index)})"
    name = missing_name(ename, evalue)
    if name is not None:
        for cause_index, cause in earlier.items():
            if cause.kind == "error" and defines_name(nb.cells[cause_index].source, name,
                                                      after_line=cause.line or 1,
                                                      whole=is_syntax_error(cause.ename)):
                message += (f"\n{cause.cell} has a {cause.ename} at line {cause.line}; tests "
                            f"after it fail because its names ({name} among them) were never "
                            "defined" + (": this machine's fault, not your answer's (see that "
                                         "cell)" if cause.machine else ""))
                break
    line = next((f.line for f in frames if f.cell == index), None)
    machine = _machine_lacks(nb, index)
    if machine:
        message += ("\nThis cell is the assignment's own, unchanged, and it ran before any of "
                    "your code: this machine lacks something the assignment needs (what the "
                    "error names). It is not a mistake in your answers: install it, or ask "
                    "your instructor, and check again")
    return CellFailure("error", describe(nb, index), message, ename=ename, line=line,
                       machine=machine)


def _machine_lacks(nb, index: int) -> bool:
    """Whether a cell's error can only be the machine's: the cell is one the assignment
    provides (locked, neither an answer nor a test), unchanged since its release (nbgrader's
    checksum of it), and no answer cell came before it (nothing of the student's ran yet)."""
    cell = nb.cells[index]
    meta = cell.get("metadata", {}).get("nbgrader", {})
    if not meta.get("locked") or meta.get("solution") or meta.get("grade") or \
            "checksum" not in meta:
        return False
    if any(c.get("metadata", {}).get("nbgrader", {}).get("solution")
           for c in nb.cells[:index] if c.cell_type == "code"):
        return False
    from nbgrader.utils import compute_checksum  # (only here: a provided cell failed)

    return compute_checksum(cell) == meta["checksum"]


def _syntax_line(evalue: str) -> int | None:
    found = re.search(r"line (\d+)\)$", evalue)
    return int(found.group(1)) if found else None


_STATUS = {"error": "ERROR", "stopped": "STOPPED", "unanswered": "not answered yet:"}


def report(results: CheckRun | list[TestResult], path: Path) -> str:
    """What the terminal shows. Test names and messages come from the notebook (a submission's,
    when an instructor checks one): each of their control characters is shown as an escape
    (grader.shown), so none can move the cursor, rewrite a PASS line or retitle the window."""
    run = results if isinstance(results, CheckRun) else CheckRun(tests=list(results))
    lines = [f"Visible tests in {shown(path)} (run just now in a fresh kernel; outputs saved "
             "in the notebook are not counted):"]
    for r in run.tests:
        if r.hidden:
            lines.append(f"  ....  {shown(r.name)} ({r.points:g} pt): hidden, run when graded")
            continue
        mark = "PASS" if r.passed else ("FAIL" if r.ran else "NOT RUN")
        lines.append(f"  {mark}  {shown(r.name)} ({r.points:g} pt)")
        if r.message:
            lines.extend(f"          {shown(line)}" for line in r.message.split("\n")[:8])
    if run.cells:
        lines.append("Cells outside the tests:")
        for c in run.cells:
            lines.append(f"  {_STATUS[c.kind]}  {shown(c.cell)}")
            if c.message:
                lines.extend(f"          {shown(line)}" for line in c.message.split("\n")[:8])
    if run.written_missing:
        lines.append("Written answers not given yet (graded by hand after you submit):")
        lines.extend(f"  {shown(cell)}" for cell in run.written_missing)
    visible = [r for r in run.tests if not r.hidden]
    passed = sum(r.passed for r in visible)
    not_run = sum(not r.ran for r in visible)
    broken = sum(c.kind in ("error", "stopped") for c in run.cells)
    lines.append(f"{passed} of {len(visible)} visible tests pass"
                 + (f" ({not_run} not run)" if not_run else "")
                 + (f"; {broken} cell(s) outside the tests raised an error or were stopped "
                    "(listed above)" if broken else "")
                 + ". Hidden tests run when the instructor grades your submission.")
    return "\n".join(lines)
