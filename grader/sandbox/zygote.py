"""A clean, pre-imported process, inside the sandbox (namespaces.py), that forks one worker per
notebook.

Importing torch costs seconds of CPU; this process pays it once per grading process and then
forks (milliseconds). It never runs student code itself. Protocol, over a Unix socket: the grader
sends a JSON request, with the worker's end of a socket pair attached for "fork"; the answer is
JSON. Between two students the grader asks for a "sweep": every other process of the sandbox is
killed (as the sandbox's subreaper this process inherits every orphan), the scratch, /tmp and
/dev/shm are emptied, and the IPC objects of the sandbox's namespace removed (ipc.py), so
nothing of one student is there for the next. A sweep that cannot finish fails closed: this
process answers what is left and exits, and the grader starts a fresh sandbox. No process here
can use the kernel's keyrings (keyrings.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import sys
import time

from grader.sandbox import ipc, keyrings
from grader.sandbox.namespaces import MQUEUE
from grader.sandbox.proc import PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE, prctl, stat
from grader.startup import compiler
from grader.startup.collector import pause, resume
from grader.startup.exits import exit_now
from grader.startup.huge_pages import TUNING
from grader.startup.warm_up import warm_up, warm_up_gradients, warm_up_meta, warm_up_seed

PRELOAD = ("torch", "torch.nn", "torch.nn.functional", "numpy",
           "IPython.core.interactiveshell", "IPython.core.logger", "bdb",  # run_cell's first use
           "grader.checks", "grader.sandbox.worker")


def _reap(statuses: dict) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        statuses[pid] = os.waitstatus_to_exitcode(status)


def _fork(config: dict, fd: int, server: socket.socket) -> int:
    pid = os.fork()
    if pid == 0:  # the worker
        try:
            server.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            from multiprocessing.connection import Connection

            from grader.sandbox.worker import main

            main(Connection(fd), config)
        finally:
            os._exit(0)
    os.close(fd)
    return pid


def _lineage() -> set[int]:
    """This process and its ancestors in the sandbox (its init, the bwrap that forbids user
    namespaces): a sweep spares them."""

    found, pid = set(), os.getpid()
    while pid > 0 and pid not in found:
        found.add(pid)
        parent_and_session = stat(pid)
        if parent_and_session is None:
            break
        pid = parent_and_session[0]
    return found


def _others(keep: set[int]) -> list[int]:
    """Every process of the sandbox's PID namespace but those in `keep`."""
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in keep]


def sweep(statuses: dict, setup: dict) -> dict:
    """Kill every process of the sandbox but this one and its ancestors, empty the writable
    folders and remove the IPC objects (and, where keyrings are not blocked, the shared
    keys). "unswept": what is still there (empty: the next student starts clean)."""
    killed, keep, sandboxed = 0, setup["keep"], setup["sandboxed"]
    for _ in range(100 if sandboxed else 0):  # a fork bomb may still be forking
        others = _others(keep)
        if not others:
            break
        for pid in others:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        time.sleep(0.005)
        _reap(statuses)
    left = len(_others(keep)) if sandboxed else 0
    unswept = [f"{left} processes"] if left else []
    for folder in setup["empty"]:
        if not _emptied(folder):
            unswept.append(f"files in {folder}")
    if sandboxed:  # (unconfined, the IPC namespace and the keyrings are the machine's)
        unswept += ipc.remove(MQUEUE)
        if not setup.get("keys_blocked"):
            unswept += keyrings.clear()
    return {"killed": killed, "left": left, "unswept": unswept}


def _emptied(folder: str) -> bool:
    """Empty `folder` (a student may have made a folder in it unreadable, or nested folders
    deeper than a recursive removal goes); whether it is empty now. Its times are set to now:
    the last student's are no message to the next. The sandbox's own mounts below it (a venv
    or course that lives under /tmp is bound there) and the folders leading to them stay: they
    are the sandbox's, not the student's, and what else is in those folders goes."""
    mounts = _mounts_below(folder)
    leads = {parent for point in mounts for parent in _parents(point, folder)}
    for attempt in range(2):
        try:
            _clear(folder, mounts, leads)
            if not _left(folder, mounts, leads):
                with contextlib.suppress(OSError):
                    os.utime(folder)
                return True
        except (OSError, RecursionError):
            pass
        if attempt == 0:
            _unlock(folder)
    return False


def _mounts_below(folder: str) -> set[str]:
    """The mount points below `folder` (/proc/self/mountinfo's fifth field, octal escapes
    undone)."""
    prefix = folder.rstrip("/") + "/"
    points = set()
    with contextlib.suppress(OSError), open("/proc/self/mountinfo") as info:
        for line in info:
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
            if point.startswith(prefix):
                points.add(point)
    return points


def _parents(point: str, folder: str) -> list[str]:
    """The folders between `folder` and `point`, `point` excluded."""
    parents, path = [], os.path.dirname(point)
    while path.startswith(folder.rstrip("/") + "/"):
        parents.append(path)
        path = os.path.dirname(path)
    return parents


def _clear(path: str, mounts: set[str], leads: set[str]) -> None:
    with os.scandir(path) as entries:
        for entry in entries:
            if entry.path in mounts:
                continue
            with contextlib.suppress(OSError):
                if entry.path in leads:
                    _clear(entry.path, mounts, leads)
                elif entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)


def _left(path: str, mounts: set[str], leads: set[str]) -> bool:
    """Whether anything but the sandbox's mounts and the folders leading to them is there."""
    for name in os.listdir(path):
        entry = os.path.join(path, name)
        if entry in mounts:
            continue
        if entry not in leads or _left(entry, mounts, leads):
            return True
    return False


def _unlock(folder: str) -> None:
    """Every folder below `folder` open to its owner (the students' user, as is this process):
    a folder made unreadable or unwritable cannot be emptied otherwise."""
    todo = [folder]
    while todo:
        path = todo.pop()
        with contextlib.suppress(OSError):
            if path != folder:
                os.chmod(path, 0o700)
            with os.scandir(path) as entries:
                todo += [e.path for e in entries if e.is_dir(follow_symlinks=False)]


def serve(sock: socket.socket, setup: dict) -> None:
    statuses: dict[int, int] = {}
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, 1 << 20, 1)
        except OSError:
            return
        if not data:
            return  # the grader is gone
        request = json.loads(data)
        _reap(statuses)
        if request["op"] == "fork":
            config = {**request["config"], "keyrings_blocked": setup.get("keys_blocked")}
            answer = {"pid": _fork(config, fds[0], sock)}
        elif request["op"] == "sweep":
            answer = sweep(statuses, setup)
            statuses.clear()
            if answer["unswept"]:  # fail closed: this sandbox ends, the grader starts another
                sock.sendall(json.dumps(answer).encode() + b"\n")
                return
        else:  # status
            pid = request["pid"]
            answer = {"code": statuses.pop(pid, None)}
        sock.sendall(json.dumps(answer).encode() + b"\n")


def warm_up_lines() -> None:
    """The source lines of the files a notebook's cell runs under (this server, the worker,
    IPython's run_cell), read into `linecache` here once. `torch.manual_seed`, which most
    notebooks call, formats the stack it was called from three times (PyTorch keeps it for
    devices it would seed lazily); in a student's process that stack runs through IPython's
    largest file, which each process would otherwise read and split into lines itself, page
    faults of every notebook's first cell. Only public library source: nothing a student may
    not read."""
    import linecache

    from IPython.core import async_helpers, interactiveshell

    from grader.sandbox import worker

    for module in (sys.modules[__name__], worker, interactiveshell, async_helpers):
        linecache.getlines(module.__file__)


def _keys_out_of_reach(sandboxed: bool) -> tuple[bool, str]:
    """Before any thread starts: a session keyring of this process's own (not the one the
    grader was started with), then no keyring system call for it and every worker (keyrings.py).
    (Whether they are blocked; in words, how they are kept from the students.)"""
    if sandboxed:
        with contextlib.suppress(OSError):
            keyrings.join_fresh_session()
    try:
        keyrings.block()
    except OSError as e:
        return False, f"cleared after each turn (not blocked: {e.strerror or e})"[:300]
    return True, "blocked"


def main() -> None:
    """argv: the socket's file descriptor, and a JSON setup: {"sandboxed": bool (inside
    namespaces.py's sandbox: the sweep may kill every other process it sees), "empty": [the
    folders a sweep empties], "preload": [modules the assignment declares its students'
    processes import, imported here once: PyTorch's compiler where students train], "cpu":
    the core to keep to, or null}."""
    for name in TUNING:  # read by glibc as this interpreter started: none of the students'
        os.environ.pop(name, None)
    setup = {**json.loads(sys.argv[2]), "keep": _lineage()}
    setup["keys_blocked"], keys = _keys_out_of_reach(setup["sandboxed"])
    if setup.get("cpu") is not None:  # the core of the grading process it serves: parallel.py
        with contextlib.suppress(OSError, ValueError, TypeError):
            os.sched_setaffinity(0, {setup["cpu"]})  # inherited by every student's process
    # Orphans of a worker (double forks, setsid) become ours, so a sweep finds them all; and
    # nothing of the same user may read or trace this process's memory.
    with contextlib.suppress(OSError):
        prctl(PR_SET_CHILD_SUBREAPER, 1)
    with contextlib.suppress(OSError):
        prctl(PR_SET_DUMPABLE, 0)
    started = time.process_time()  # this process's CPU so far: the interpreter's start, and
    # this module's imports (process_time counts from the process's start, not from here)
    parts = {"interpreter": started}  # CPU seconds of each step (the bench prints where it goes)

    def step(name: str, since: float) -> float:
        now = time.process_time()
        parts[name] = now - since
        return now

    pause()  # the garbage collector, until the start-up is over (grader.startup.collector)
    for name in PRELOAD:
        __import__(name)
    import torch

    # One thread per student process: submissions run side by side, and tiny tensors gain
    # nothing from a thread pool (whose spinning threads would burn the other cores).
    torch.set_num_threads(1)
    t = step("imports", started)
    warm_up()
    t = step("warm-up", t)
    warm_up_gradients()
    t = step("gradients", t)
    missing = []
    for name in setup.get("preload", []):  # what the assignment declares its students need
        try:
            __import__(name)
        except ImportError as e:  # time, never a grade: the grader says so and goes on
            missing.append(f"{name}: {e}"[:300])
    t = step("declared modules", t)
    if compiler.defer():  # not declared: PyTorch's compiler waits until something compiles
        t = step("compiler deferred", t)
    warm_up_meta()
    t = step("meta device", t)
    warm_up_seed()  # after the compiler, which wraps torch.manual_seed
    warm_up_lines()
    from grader.sandbox.worker import shell

    shell()
    # What the start-up made is frozen: shared with each student's process until written to, it
    # would be written to all over by a full collection there (0.16 s of copied pages).
    resume()
    step("shell", t)
    sock = socket.socket(fileno=int(sys.argv[1]))
    sock.sendall(json.dumps({"ready": True, "cpu": time.process_time(),
                             "parts": parts, "missing": missing, "uid": os.getuid(),
                             "pid": os.getpid(), "keyrings": keys}).encode() + b"\n")
    serve(sock, setup)
    exit_now()


if __name__ == "__main__":
    main()
