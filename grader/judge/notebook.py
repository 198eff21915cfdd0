"""Run one notebook the safe way: the student's cells in their process, the tests in ours.

Each code cell goes to one side:
- a test cell (nbgrader `grade` without `solution`) runs here, in the grader's process. Its
  verdict, and the reference it compares with, never leave here. From the student's process it
  takes only the student's answers (answers.py: what the solution cells define, and what the
  instructor's cells computed from them, such as a trained model), functions and classes as
  `Remote`s, data as plain values; all of them at the start of every test cell, so what is
  requested says nothing about what the (hidden) test uses.
- every other cell runs in the student's process; the instructor's own cells (imports, data
  generators, constants, given classes) run here too, so a test uses the grader's copy of them.

When the student's process dies (timeout, memory, crash, os._exit) the cell that killed it is
marked, a fresh process replays the earlier cells, and grading goes on.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import io
import time
from dataclasses import dataclass, field

import nbformat

from grader.cells import is_instructor_cell, is_test_cell
from grader.judge import answers, fresh
from grader.judge.remote import Link, Remote
from grader.sandbox.confinement import Confinement, confinement
from grader.sandbox.session import RemoteError, Session, WorkerDied
from grader.submission import Flag, Limits, flag

MAX_RESTARTS = 3
KEEP_CHARS = 50_000  # printed characters kept per cell in the graded notebook
_BUILTINS = frozenset(vars(builtins))  # a student's `len` or `print` never replaces ours


@dataclass
class Judge:
    files: dict[str, bytes]  # the scratch folder's contents: relative path -> bytes
    answers: frozenset[str]  # the names the student's solution cells define (answers.py)
    limits: Limits = field(default_factory=Limits)
    landlock: bool = True
    confined: Confinement | None = None
    flags: list[Flag] = field(default_factory=list)  # grader.submission.flag's, each once
    preload: tuple[str, ...] = ()  # what the sandbox's server imports for students

    def flag(self, kind: str, detail: str) -> None:
        new = flag(kind, detail)  # checks the kind
        if new not in self.flags:
            self.flags.append(new)

    # ----- the student's process ------------------------------------------------------------
    def _start(self, deadline: float | None = None) -> None:
        self.session = Session(self.files, self.limits, self.landlock,
                               self.confined or confinement(), preload=self.preload)
        if deadline:
            self.session.deadline = deadline
        self.session.start()
        if self.landlock and self.session.landlock_error:
            self.flag("limits", "Landlock, the sandbox's second layer, could not be applied: "
                      + self.session.landlock_error)
        self.link = Link(self.session, on_output=self._collect)

    def _collect(self, stdout, stderr) -> None:
        if self._printed is not None:
            self._printed.append(_text(stdout) + _text(stderr))

    def _restart(self, upto: int) -> bool:
        """A fresh process with the worker cells before `upto` replayed; False if given up."""
        self.restarts += 1
        deadline = self.session.deadline
        self.session.close()
        if self.restarts > MAX_RESTARTS or time.monotonic() >= deadline:
            return False
        self._start(deadline)
        for index, source in self.worker_cells:
            if index >= upto or index in self.killers:
                continue
            try:
                self.session.request({"op": "run", "source": source})
            except WorkerDied:
                self.killers.add(index)
                return self._restart(upto)
        return True

    # ----- the notebook ---------------------------------------------------------------------
    def run(self, nb) -> nbformat.NotebookNode:
        """Execute `nb` in place (outputs filled in)."""
        self.restarts, self.killers, self.worker_cells = 0, set(), []
        self.notebook = nb  # a measurement re-creates an answer from its cells (fresh.py)
        self.ns = {"__name__": "__main__", "__builtins__": builtins}
        self.bound: dict[str, tuple[int, str]] = {}
        self.theirs = set(self.answers)  # names a test takes from the student's process
        self.tainted = set(self.answers)
        self.instructors: set[str] = set()  # names the instructor's cells bound here
        self._printed = None
        for f in (self.confined or confinement()).flags():
            self.flag(f["kind"], f["detail"])
        self._start()
        try:
            stopped = None
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                cell.outputs, cell.execution_count = [], index + 1
                if stopped:
                    cell.outputs = [_error("NotRun", stopped)]
                    continue
                if is_test_cell(cell):
                    self._run_test(index, cell)
                else:
                    if is_instructor_cell(cell):
                        self._run_ours(index, cell)
                    self._run_student(index, cell)
                if not self.session.alive and not self._restart(index + 1):
                    stopped = ("this cell was not run: the notebook's process stopped too many "
                               "times or ran out of time (see the cells above)")
        finally:
            self.session.close()
        return nb

    def _run_ours(self, index: int, cell) -> None:
        """The grader's copy of an instructor cell: what does not use the student's answers."""
        code, theirs = answers.split(cell.source, self.tainted)
        self.theirs |= theirs
        if code is None:
            return
        before = {k: id(v) for k, v in self.ns.items()}
        try:
            with contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()):
                exec(_compiled(code, f"<instructor cell {index + 1}>"), self.ns)
        except Exception as e:  # the instructor's code: a failure here is the grader's
            self.flag("grader", f"cell {index + 1}: the instructor's code failed on the "
                      f"grader's side ({type(e).__name__}: {e})")
        for name, value in self.ns.items():
            if before.get(name) != id(value):
                self.bound[name] = (index, "grader")
                self.instructors.add(name)

    def _run_student(self, index: int, cell) -> None:
        self.worker_cells.append((index, cell.source))
        try:
            reply = self.session.request({"op": "run", "source": cell.source})
        except WorkerDied as e:
            self.killers.add(index)
            self.flag(e.kind, f"cell {index + 1}: {e}")
            cell.outputs = [_error("NotebookStopped", f"{e}")]
            return
        cell.outputs = _streams(_text(reply.get("stdout")), _text(reply.get("stderr")))
        err = reply.get("error")
        if isinstance(err, dict):
            if err.get("ename") == "MemoryError":
                self.flag("memory", f"cell {index + 1}: ran out of memory (MemoryError)")
            cell.outputs.append(_error(str(err.get("ename", "Error"))[:100],
                                       str(err.get("evalue", ""))[:2000],
                                       [str(x) for x in err.get("traceback", [])][:20]))
        bound = reply.get("bound")
        imported = set() if is_instructor_cell(cell) else _imported_names(cell.source)
        for name in bound if isinstance(bound, list) else []:
            if isinstance(name, str) and name in self.theirs:  # other names stay ours
                self.bound[name] = (index, "worker")
            elif isinstance(name, str) and name in self.instructors and name not in imported \
                    and not is_instructor_cell(cell):
                self.flag("redefined", f"cell {index + 1} redefines {name[:80]}, which the "
                          "instructor's code defines; the tests used the instructor's")

    def _run_test(self, index: int, cell) -> None:
        try:
            code = _compiled(cell.source, f"<test cell {index + 1}>")
        except SyntaxError as e:
            cell.outputs = [_error("SyntaxError", f"the test cell does not compile: {e}")]
            self.flag("tampered", f"cell {index + 1}: a test cell that does not compile")
            return
        self._import_answers()
        before = {k: id(v) for k, v in self.ns.items()}
        self._printed = []
        out = io.StringIO()
        error = None
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), \
                    fresh.judging(self):
                exec(code, self.ns)
        except WorkerDied as e:
            self.flag(e.kind, f"cell {index + 1}: {e}")
            error = _error("NotebookStopped", f"{e}")
        except RemoteError as e:  # an error of the student's process itself
            error = _error(e.ename, e.evalue)
        except BaseException as e:  # noqa: B036 - any failure of a test is a failed test
            error = _error(type(e).__name__, str(e) + _where_the_test_stopped(
                e, cell.source, f"<test cell {index + 1}>"))
        printed = "".join(self._printed) + out.getvalue()
        self._printed = None
        cell.outputs = _streams(printed, "")
        if error is not None:
            cell.outputs.append(error)
        for name, value in self.ns.items():
            if before.get(name) != id(value):
                self.bound[name] = (index, "grader")

    def _import_answers(self) -> None:
        """Bind, here, every answer the student's cells defined last (all of them, whatever
        the test uses: the requests reveal nothing of a hidden test)."""
        names = [name for name in sorted(self.theirs) if name not in _BUILTINS
                 and self.bound.get(name, (None, None))[1] == "worker"]
        for name, value in (self.link.get_many(names) if names else {}).items():
            if isinstance(value, NameError):
                self.ns.pop(name, None)
            elif isinstance(value, Exception):
                self.ns[name] = _Unusable(name, value)
            else:
                self.ns[name] = value


def _where_the_test_stopped(e: BaseException, source: str, name: str) -> str:
    """For an error the test's own code raised (not a check's message written for the student,
    not an error of the student's process, which comes as RemoteError): the line of the test it
    stopped at, which the graded notebook's error would not show, and what that means.

    Verified by where it was raised: the student's code never runs in this process, so an error
    here was raised by the test, or by what it called, on something the student's code returned
    or defined (the reference solution passes every test).
    """
    from grader.failure import CheckFailure

    if isinstance(e, CheckFailure) or (isinstance(e, AssertionError) and str(e)):
        return ""  # a check's or an assert's own message, written for the student
    lines, tb, at, deepest = source.splitlines(), e.__traceback__, None, True
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == name:
            at, deepest = tb.tb_lineno, tb.tb_next is None
        tb = tb.tb_next
    if at is None or not 0 < at <= len(lines):
        return ""
    if _hidden(lines, at):  # its code is the hidden test's: the student never sees it
        line = "at a line of the hidden tests"
    else:
        code = lines[at - 1].strip()
        line = f"at line {at} of the test: `{code[:117] + '...' if len(code) > 120 else code}`"
    if isinstance(e, AssertionError):
        return f"the test's check failed {line}"
    if isinstance(e, NameError):
        return (f"\n({line}; your notebook defined no such name when the test ran: is it spelt "
                "as the exercise spells it, and did the cell that defines it run without an "
                "error?)")
    called = "" if deepest else " (in what that line called)"
    return (f"\n(raised by the test's own code{called}, {line}; not inside your code, which ran "
            "without error: the test could not use what it returned or defined. Check its "
            "kind against the exercise's text: a tensor or a tuple, which shape, which dtype.)")


def _hidden(lines: list[str], at: int) -> bool:
    """Whether line `at` (from 1) is one that nbgrader's ClearHiddenTests removes on release,
    by its delimiters and its rule (a line containing the begin delimiter opens the region, one
    containing the end delimiter closes it, and both go with it), so that the two never
    disagree on what the student was shown."""
    from nbgrader.preprocessors import ClearHiddenTests  # only once a test's own code failed

    begin = ClearHiddenTests.begin_test_delimeter.default_value  # (nbgrader's spelling)
    end = ClearHiddenTests.end_test_delimeter.default_value
    inside, shown = False, True
    for text in lines[:at]:
        if begin in text:
            inside, shown = True, False
        elif end in text:
            inside, shown = False, False
        else:
            shown = not inside
    return not shown


class _Unusable:
    """A name whose value could not be brought over; any use fails the test with the reason."""

    def __init__(self, name, error):
        self.text = f"{name} could not be read from your notebook: {error}"

    def __getattr__(self, attr):
        from grader.failure import CheckFailure

        raise CheckFailure(self.text)

    def __call__(self, *a, **k):
        return self.__getattr__("")


@functools.lru_cache(maxsize=1024)  # a class's notebooks share their instructor cells
def _compiled(source: str, name: str):
    """The cell's code object (immutable: every notebook's run may share it)."""
    return compile(source, name, "exec")


@functools.lru_cache(maxsize=4096)  # a class's notebooks share most of their cells' text
def _imported_names(source: str) -> frozenset[str]:
    """Names a cell binds with import statements (importing torch again is harmless)."""
    try:
        tree = ast.parse(answers.python(source))
    except SyntaxError:
        return frozenset()
    return frozenset(name for node in ast.walk(tree)
                     if isinstance(node, (ast.Import, ast.ImportFrom))
                     for name in answers.bound_names(node))


def _text(value, limit: int = KEEP_CHARS) -> str:
    """Printed text from the student's process: a string, and not too much of it."""
    if not isinstance(value, str):
        return ""
    if len(value) > limit:
        return value[:limit] + f"\n[... {len(value) - limit} more characters not kept]\n"
    return value


# Outputs are made here from strings, so they fit nbformat's schema by construction; its
# new_output() would check each one against the schema, a dozen times a notebook. nbformat
# validates the whole notebook when the command reads it back, and
# tests/grader/pipeline/test_pipeline.py checks that these outputs pass.

def _streams(stdout: str, stderr: str) -> list:
    outputs = []
    for name, text in (("stdout", _text(stdout)), ("stderr", _text(stderr))):
        if text:
            outputs.append(nbformat.NotebookNode(output_type="stream", name=name, text=text))
    return outputs


def _error(ename: str, evalue: str, traceback: list[str] | None = None):
    return nbformat.NotebookNode(output_type="error", ename=str(ename), evalue=str(evalue),
                                 traceback=[str(line) for line in traceback or
                                            [f"{ename}: {evalue}"]])


__all__ = ["Judge", "Remote"]
