"""Measurements a student's own process cannot touch: one fresh process per measurement.

The notebook's process ran everything the student wrote (patches of the measuring helpers or of
PyTorch included), so nothing measured in there can decide points. A measurement instead forks
a new worker from the sandbox's server (zygote.py) in a cgroup of its own, which runs:

1. the grader's part of the instructor's cells before the answer (imports, given functions:
   answers.split, as the judge runs them on its side);
2. then, with the cgroup's memory peak reset by the grader, the student's cells up to the one
   that defines the answer (nothing else: no test, no instructor cell that calls an answer);
3. calls of the answer, on inputs made by the grader at that moment (unpredictable: nothing
   can be computed ahead for them), the peak read after each.

The kernel charges every page any process of that cgroup touches after step 1 to it, and the
grader reads the peak from the cgroup's files: ballast freed before the work, work done in
numpy, in a subprocess or in a thread all count. The notebook's own process (the only other
process of the student's in the sandbox) is frozen while the measurement runs, so no work can
be handed to it. Memory that exists already and could be written without a new charge (files in
the sandbox's memory-backed folders, System V shared memory) is counted by the grader's code
in the fresh process before the student's, and added. What the student could free and reuse
unseen is then bounded by what step 1 left charged to the group (`before_bytes`).

A test uses this through grader.checks.measured while the judge runs it (`judging`).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from grader.cells import is_instructor_cell, is_test_cell
from grader.judge import answers
from grader.judge.remote import Link
from grader.sandbox.session import Session

_judge: contextvars.ContextVar = contextvars.ContextVar("grader_fresh_judge", default=None)
CALL_SECONDS = 30.0  # CPU seconds the measured call may take


class Unavailable(Exception):
    """No measurement could be made here (no judge: a notebook run outside the grader)."""


@contextlib.contextmanager
def judging(judge):
    """While a test cell runs: the judge whose student a measurement re-creates."""
    token = _judge.set(judge)
    try:
        yield
    finally:
        _judge.reset(token)


def available() -> bool:
    return _judge.get() is not None


@dataclass
class Measured:
    values: list  # what each call returned (plain data, as from any remote call)
    peak_bytes: list[int]  # after each call: the most memory held at once since step 2 began
    before_bytes: int  # what the student's code could reuse unseen: what step 1 left charged
    # to the group (freed, then used again), and the shared memory that exists already
    how: str  # "cgroup" or "rss" (no cgroup here: the process's peak resident size)


class _FreshSession(Session):
    """A measurement's process: like a student's, but ending it kills only its own group (a
    sweep would end the notebook's process too)."""

    def kill(self) -> None:
        if self.pid is None or self.killed:
            return
        if self.group is not None:
            self.group.end()
            self.group.remove()
        else:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.host_pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.host_pid, signal.SIGKILL)
        self.killed = True


def _cells(judge, name: str) -> tuple[list[str], list[str]]:
    """(the grader's part of the instructor's cells, the student's cells), both up to the cell
    that last defined `name`."""
    where = judge.bound.get(name)
    if where is None or where[1] != "worker":
        raise LookupError(f"{name} is not defined by a cell of the notebook")
    ours, theirs, tainted = [], [], set(judge.answers)
    for index, cell in enumerate(judge.notebook.cells):
        if index > where[0]:
            break
        if cell.cell_type != "code" or is_test_cell(cell):
            continue
        if is_instructor_cell(cell):
            code, _ = answers.split(cell.source, tainted)
            if code:
                ours.append(code)
        else:
            theirs.append(cell.source)
    return ours, theirs


def _memory_files(group) -> tuple[Path, Path] | None:
    """(peak, current use) of a group's memory controller (v2 or v1)."""
    if group is None:
        return None
    if "all" in group.dirs:
        d = group.dirs["all"]
        return d / "memory.peak", d / "memory.current"
    d = group.dirs["memory"]
    return d / "memory.max_usage_in_bytes", d / "memory.usage_in_bytes"


def _read_int(path: Path) -> int:
    return int(path.read_text().split()[0])


@contextlib.contextmanager
def _frozen(session):
    """The notebook's process (and all it started) stopped while a measurement runs."""
    group = getattr(session, "group", None)
    state = None
    if group is not None and "all" in group.dirs:
        d = group.dirs["all"]
        state = (d / "cgroup.freeze", "1", "0", lambda: "frozen 1" in (d / "cgroup.events")
                 .read_text().splitlines())
    elif group is not None and "freezer" in group.dirs:
        d = group.dirs["freezer"]
        state = (d / "freezer.state", "FROZEN", "THAWED",
                 lambda: (d / "freezer.state").read_text().strip() == "FROZEN")
    if state is None:  # no cgroup: stop its process group (flagged "limits" already)
        pid = getattr(session, "host_pid", None)
        with contextlib.suppress(OSError, TypeError):
            os.killpg(pid, signal.SIGSTOP)
        try:
            yield
        finally:
            with contextlib.suppress(OSError, TypeError):
                os.killpg(pid, signal.SIGCONT)
        return
    path, on, off, frozen = state
    path.write_text(on)
    try:
        end = time.monotonic() + 5  # the kernel freezes in the background: wait for it
        while not frozen():
            if time.monotonic() > end:
                raise RuntimeError("the notebook's process could not be stopped for the "
                                   "measurement")
            time.sleep(0.001)
        yield
    finally:
        path.write_text(off)


# Run in the fresh process before any student code (so its answer is the grader's): memory that
# exists already and that a process could write into without the kernel charging it anew, the
# notebook's files in the sandbox's memory-backed folders and System V shared memory segments.
# It is added to the measurement (a student's own files cost them, never their classmates).
_SHARED_PROBE = """
def _grader_shared():
    import os
    total = 0
    for folder in ((os.getcwd(), "/tmp", "/dev/shm") if SANDBOXED else ()):  # tmpfs each
        try:
            st = os.statvfs(folder)
        except OSError:
            continue
        total += (st.f_blocks - st.f_bfree) * st.f_frsize
    try:
        with open("/proc/sysvipc/shm") as f:
            total += sum(int(line.split()[3]) for line in list(f)[1:])
    except (OSError, ValueError, IndexError):
        pass
    return total


_grader_shared_bytes = _grader_shared()
del _grader_shared
"""


# Run in the fresh process before the measurement starts (and before any student code): the
# PyTorch operations an attention is made of, once, on small tensors, so that the library's code
# pages they load are resident already. Without a cgroup the peak is the process's resident size
# (VmHWM), which counts those pages: about 13 MiB of them on the first matmul and exp, more than
# the reference's whole working memory, which failed the instructor's own solution there. The
# student's cells and calls still run after it, every byte they allocate counted.
_WARM_UP = """
import torch as _grader_t
for _grader_dtype in (_grader_t.float32, _grader_t.float64):
    _grader_q = _grader_t.randn(64, 16, dtype=_grader_dtype)
    _grader_s = _grader_q @ _grader_q.T
    _grader_m = _grader_s.max(dim=-1, keepdim=True).values
    _grader_p = (_grader_s - _grader_m).exp()
    _grader_o = (_grader_p / _grader_p.sum(dim=-1, keepdim=True)) @ _grader_q
    _grader_t.maximum(_grader_m, _grader_m), _grader_t.softmax(_grader_s, dim=-1)
    _grader_t.cat([_grader_q, _grader_q]), _grader_t.zeros_like(_grader_q)
    _grader_t.full((4, 4), float("-inf"), dtype=_grader_dtype), _grader_q.clone()
    _grader_s.masked_fill(_grader_s > 0, 0.0), _grader_t.where(_grader_s > 0, _grader_s, 0.0)
    _grader_t.einsum("id,jd->ij", _grader_q, _grader_q), _grader_s.exp_()
del _grader_t, _grader_dtype, _grader_q, _grader_s, _grader_m, _grader_p, _grader_o
"""


def _rss(host_pid: int, field: str) -> int:
    for line in Path(f"/proc/{host_pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise OSError(f"no {field} for process {host_pid}")


def measure_calls(name: str, calls: list[tuple]) -> Measured:
    """Call the student's `name` on each argument tuple of `calls` in turn, in one fresh
    process (see the module's docstring), and measure its memory from outside after each call;
    raises Unavailable outside the grader, LookupError when the notebook never defined `name`,
    and what a call raised. The peak after a call covers everything since the student's cells
    began (never reset between calls): a call cannot hide what an earlier one kept."""
    judge = _judge.get()
    if judge is None:
        raise Unavailable("measured only by the grader")
    ours, theirs = _cells(judge, name)
    session = judge.session
    fresh = _FreshSession({}, judge.limits, judge.landlock, judge.confined or session.confined,
                          preload=judge.preload)
    fresh.deadline = session.deadline
    values, peaks = [], []
    with _frozen(session):
        try:
            fresh.start()
            for source in ours:
                _run(fresh, source, "the instructor's cells")
            _run(fresh, _SHARED_PROBE.replace("SANDBOXED", str(fresh.confined.sandboxed)),
                 "the grader's probe")
            _run(fresh, _WARM_UP, "the grader's warm-up")
            link = Link(fresh)
            shared = link.get("_grader_shared_bytes")
            shared = shared if type(shared) is int and shared >= 0 else 0
            peak = _Peak(fresh)  # from here on, every byte counts
            for source in theirs:
                _run(fresh, source, "your cells")
            fn = link.get(name)
            for args in calls:
                values.append(link.call(fn, args, {}, detached=True))
                peaks.append(peak.read() + shared)
            before, how = peak.before + shared, peak.how
            peak.close()
        finally:
            fresh.close()
    return Measured(values, peaks, before, how)


class _Peak:
    """The most memory a fresh process (its cgroup, or itself) held since this was made,
    beyond what it held then."""

    def __init__(self, fresh):
        files = _memory_files(fresh.group)
        self.pid, self.file = fresh.host_pid, None
        if files is not None:
            # reset the peak to the current use: v1 for the group, v2 (Linux 6.12+) for reads
            # through this open file; an older v2 keeps the peak since the fork
            self.file = open(files[0], "r+b", buffering=0)  # noqa: SIM115 (closed: close())
            with contextlib.suppress(OSError):
                self.file.write(b"0")
            self.before, self.how = _read_int(files[1]), "cgroup"
        else:
            Path(f"/proc/{self.pid}/clear_refs").write_text("5")  # VmHWM = VmRSS
            self.before, self.how = _rss(self.pid, "VmRSS"), "rss"

    def read(self) -> int:
        if self.file is not None:
            now = int(os.pread(self.file.fileno(), 64, 0).split()[0])
        else:
            now = _rss(self.pid, "VmHWM")
        return max(0, now - self.before)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


def _run(session, source: str, what: str) -> None:
    reply = session.request({"op": "run", "source": source}, timeout=CALL_SECONDS)
    error = reply.get("error")
    if isinstance(error, dict):
        raise RuntimeError(f"{what} failed when run again on their own "
                           f"({str(error.get('ename'))[:100]}: {str(error.get('evalue'))[:300]})")
