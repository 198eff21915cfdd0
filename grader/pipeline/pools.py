"""Stage 2 of grading, for many submissions at once: the execution on many cores (or a Dask
cluster); the gradebook is written by one process (see grader/pipeline/grades.py).

Executing a notebook (the student's code in the sandbox, the tests in a judge) is nearly all the
cost and touches no database: `execute` does it from plain data (a `Task`: the sanitized
notebooks and a `Plan`), so it runs in a local process pool or on a Dask worker on another
machine, and hands the executed notebooks back as values.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import time
from pathlib import Path

from grader.metadata import declared
from grader.submission import Executed, Task


def execute(task: Task) -> Executed:
    """Execute each notebook of one submission. Returns {"notebooks": {name: executed notebook
    JSON}, "flags": [...], "seconds": wall time, "executed_by": "host:pid"}."""
    import nbformat  # (here: the command starts the fork server before importing it)

    from grader.judge.run import run_notebook
    from grader.notebooks import handover
    from grader.submission import unique

    start = time.monotonic()
    executed, flags = {}, list(task.plan.flags)
    for name, source in task.notebooks.items():
        nb = nbformat.reads(source, as_version=4)
        flags += run_notebook(nb, name, task.plan, task.unconfined)
        executed[name] = handover(nb)
    return {"notebooks": executed, "flags": unique(flags), "seconds": time.monotonic() - start,
            "executed_by": f"{os.uname().nodename}:{os.getpid()}"}


# What a pool process needs, imported once by multiprocessing's fork server and inherited by
# every pool process forked from it: torch is imported once per grading command, not once per
# core (start-up is most of what a small class costs; bench/autograde_class.py measures it).
# The first and the last pause Python's garbage collector in between (grader.startup.collector).
PRELOAD = ["grader.startup.warming", "grader.pipeline.pools", "grader.judge.notebook",
           "grader.checks", "torch", "grader.startup.warmed"]


def preload_for(source: Path | None) -> list[str]:
    """PRELOAD, with the modules that an assignment's notebooks (in `source`, the instructor's
    folder) declare their tests import on first use, in their metadata `grader.judge_preload`:
    PyTorch imports its compiler (`torch._dynamo`, a second or more) on the first use of its
    profiler, and its symbolic shapes (`torch.fx.experimental.symbolic_shapes`, half a second)
    on some Python-written operations. Declared, they are imported once by the fork server;
    undeclared, once by each pool process that needs them (time, never a grade). They come
    before PRELOAD's last module, which ends the start-up."""
    return PRELOAD[:-1] + [m for m in declared(source, "judge_preload") if m not in PRELOAD] \
        + PRELOAD[-1:]


def sandbox_preload_for(source: Path | None) -> list[str]:
    """The modules that an assignment's notebooks declare the students' processes import on
    first use, in their metadata `grader.sandbox_preload`: PyTorch's compiler, which an
    optimizer's step and the profiler import (about a second; the meta device does not need it,
    grader/startup/compiler.py), and its symbolic shapes, which Python-written operations need.
    Declared, each sandbox's server imports them once (zygote.py); undeclared, each student's
    process whose code needs them pays it (time, never a grade)."""
    return declared(source, "sandbox_preload")


def worker_cpu(index: int) -> int | None:
    """The core that the pool's `index`-th process (the judge) and its sandbox server (the
    student's processes) keep to, or None on one core. A test's calls go back and forth
    between the two, one side waiting while the other runs: on one core the pair loses no
    parallelism, and each call costs less CPU than when its two sides sit on different cores,
    which wakes the other core up every time (bench/crossing.py --spread). A student's own
    processes stay on their worker's core too."""
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[index % len(cpus)] if len(cpus) > 1 else None


def _pool_init(unconfined: bool, confined, launched: list, taken,
               sandbox_preload: tuple[str, ...]):
    import torch

    from grader.nbgrader.config import setup_process
    from grader.sandbox.confinement import adopt, confinement
    from grader.sandbox.launcher import zygote

    setup_process(gradebook=False)  # the command records the grades
    if confined is not None:  # what the command found on this machine (None: it could not)
        adopt(unconfined, confined)
    torch.set_num_threads(1)  # one pool process per core already
    # One of the sandbox servers the command launched with the pool (LocalPool._start, before
    # any pool process starts); each process takes a different one and closes the others'
    # sockets.
    # A process that finds none left (more processes than servers) starts its own when needed.
    with taken.get_lock():
        mine = taken.value
        taken.value += 1
    cpu = worker_cpu(mine)  # the core its sandbox server was launched for
    if cpu is not None:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, {cpu})
    for i, other in enumerate(launched):
        if i != mine:
            other.sock.close()
    # Its sandbox ready now (the first task would wait for it otherwise): while the command is
    # still preparing the notebooks. A failure here is met again, and reported, by the first
    # task.
    with contextlib.suppress(Exception):
        zygote(confinement(unconfined), launched[mine] if mine < len(launched) else None,
               sandbox_preload)


def _started() -> int:
    return os.getpid()


def _context(preload: list[str]):
    """Pool processes forked from a server that has imported `preload` (a fresh, single-threaded
    interpreter: forking this process, with its threads and database connections, is unsafe).
    The server is one per process: the first preload it was started with stays."""
    import multiprocessing

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(preload)
    return context


FORK_SERVER_WAIT = 60.0  # seconds a pool waits for its fork server before going on regardless


def fork_server_ready(context, seconds: float = FORK_SERVER_WAIT) -> bool:
    """Wait until the pool's fork server has finished its imports, or `seconds` have passed (whether
    it had). The server forks nothing before its imports are done: an empty first process, forked
    and ended, shows they are. It is waited for in a thread, so that a server that never gets there
    delays nothing past `seconds`."""
    import threading

    def first() -> None:
        with contextlib.suppress(Exception):  # the pool's own processes meet it again
            process = context.Process(target=_started)
            process.start()
            process.join()

    waiting = threading.Thread(target=first, daemon=True)
    waiting.start()
    waiting.join(seconds)
    return not waiting.is_alive()


def sandboxes_at_once(workers: int) -> int:
    """How many of the pool's sandbox servers start as soon as the pool is made; the others
    start once its fork server has finished its imports. Each imports torch, as the fork
    server does, while this command still works: started all at once, the
    start-ups outnumber the cores and take turns on each, every turn flushing the caches of the
    one before. So at once only as many as there are cores besides this command's and the fork
    server's: none on 2 cores, where a run of 30 took less CPU in the same wall time
    (docs/performance.md, "How the grader is built for speed")."""
    return max(0, min(workers, len(os.sched_getaffinity(0)) - 2))


def start_fork_server(preload: list[str] = PRELOAD) -> None:
    """Start the pool's fork server now, before a pool is made: it imports torch (seconds) while
    the command imports nbgrader and prepares the notebooks. (Were nothing left to grade, its
    start-up is spent for nothing, in the background.)"""
    from multiprocessing import forkserver

    _context(preload)  # what it imports
    forkserver.ensure_running()


class LocalPool:
    """Submissions executed by N processes on this machine."""

    def __init__(self, workers: int, unconfined: bool = False, preload: list[str] = PRELOAD,
                 sandbox_preload: tuple[str, ...] = ()):
        import threading
        from concurrent.futures import ProcessPoolExecutor

        from grader.sandbox.confinement import confinement

        self.workers = workers
        context = _context(preload)
        self.launched, confined = [], None
        with contextlib.suppress(Exception):  # a failure is met again, and reported, by a task
            confined = confinement(unconfined)
        self._handed = []  # the sandbox servers' sockets, each taken by one pool process
        self.pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_pool_init,
                                        initargs=(unconfined, confined, self._handed,
                                                  context.Value("i", 0), tuple(sandbox_preload)))
        # The pool's start-up, in the background, while this command prepares the notebooks.
        self._handed_out, self._closed = threading.Event(), threading.Event()
        threading.Thread(target=self._start, daemon=True,
                         args=(context, confined, tuple(sandbox_preload))).start()

    def _start(self, context, confined, sandbox_preload: tuple[str, ...]) -> None:
        """A sandbox server per pool process, launched by this command (the pool's processes,
        forked from the fork server, would start theirs only once each was forked): some now,
        the rest once the fork server's imports are done (sandboxes_at_once). Then the pool's
        processes: the executor starts one per task submitted while none is idle, so they are
        started here, all of them, each taking its server's socket (_pool_init).
        The thread then stays until the pool is closed: bwrap ends a sandbox when the thread
        that started it ends (--die-with-parent, the kernel's parent-death signal, follows the
        thread, not the process)."""
        from grader.sandbox.launcher import launch

        try:
            with contextlib.suppress(Exception):  # met again, and reported, by a task
                if confined is not None:
                    at_once = sandboxes_at_once(self.workers)
                    for i in range(self.workers):
                        if i == at_once:
                            fork_server_ready(context)
                        self.launched.append(launch(confined, sandbox_preload, worker_cpu(i)))
            self._handed.extend(handle for handle, _ in self.launched)  # before any process
            with contextlib.suppress(Exception):  # a pool closed meanwhile: nothing to start
                for _ in range(self.workers):
                    self.pool.submit(_started)  # starting a process sends it the sockets
            self._let_go()
        finally:
            self._handed_out.set()
        self._closed.wait()

    def _started_up(self) -> None:
        """Wait until _start has launched the sandbox servers and started the pool's processes
        (each with its server)."""
        self._handed_out.wait()

    def _let_go(self) -> None:
        """Close this process's ends of the servers' sockets (the pool's processes have theirs):
        a server then ends when the process that took it does."""
        for handle, _ in self.launched:
            handle.sock.close()

    def _reap(self, kill: bool) -> None:
        self._started_up()
        self._let_go()
        for _, proc in self.launched:
            with contextlib.suppress(Exception):
                if kill:
                    proc.kill()
                proc.wait(5)
        self._closed.set()  # _start's thread ends

    def submit(self, task: Task):
        self._started_up()  # (a process started for the task instead would find no server)
        return self.pool.submit(execute, task)

    def done(self, futures, timeout: float | None = None) -> set:
        from concurrent.futures import FIRST_COMPLETED, wait

        return wait(futures, timeout=timeout, return_when=FIRST_COMPLETED).done

    def close(self):
        self._started_up()  # every process it starts is then shut down with the others
        self.pool.shutdown(cancel_futures=True)
        self._reap(kill=False)

    def kill(self):
        """End the pool now, whatever its processes are doing, and their sandboxes."""
        for process in list((self.pool._processes or {}).values()):
            with contextlib.suppress(Exception):
                process.kill()
        with contextlib.suppress(Exception):
            self.pool.shutdown(wait=False, cancel_futures=True)
        self._reap(kill=True)


class InProcess:
    """One submission at a time, in this process (--workers 1), in the order they were
    submitted (autograde submits them sorted by student), as a pool starts them: a batch's
    later submissions, such as the honest controls that the adversarial tests grade after
    their attackers, run after the earlier ones, whatever order `done` is handed them in."""

    workers = 1

    def __init__(self):
        self._submitted = itertools.count()

    def submit(self, task: Task):
        from concurrent.futures import Future

        future = Future()
        future.task, future.order = task, next(self._submitted)
        return future

    def done(self, futures, timeout: float | None = None) -> set:
        # One at a time, here: the sandbox's own limits bound each notebook; no watchdog.
        future = min(futures, key=lambda f: f.order)
        try:
            future.set_result(execute(future.task))
        except Exception as e:
            future.set_exception(e)
        return {future}

    def close(self):
        pass

    def kill(self):
        pass


class DaskPool:
    """Submissions executed on an existing Dask cluster (workers need this environment)."""

    def __init__(self, address: str):
        from distributed import Client

        self.client = Client(address, timeout="30s")
        self.workers = max(1, sum(w.get("nthreads", 1) for w in
                                  self.client.scheduler_info()["workers"].values()))

    def submit(self, task: Task):
        return self.client.submit(execute, task, pure=False, key=f"grade-{task.student}-"
                                  f"{hashlib.sha1(os.urandom(8)).hexdigest()[:8]}")

    def done(self, futures, timeout: float | None = None) -> set:
        from distributed import wait

        try:
            return set(wait(list(futures), timeout=timeout, return_when="FIRST_COMPLETED").done)
        except TimeoutError:
            return set()

    def close(self):
        with contextlib.suppress(Exception):
            self.client.close()

    def kill(self):
        """Cancel what runs on the cluster (a wedged Dask worker is restarted by its nanny)."""
        with contextlib.suppress(Exception):
            self.client.restart()
        self.close()


def make_pool(workers: int | None, scheduler: str | None, unconfined: bool = False,
              preload: list[str] = PRELOAD, sandbox_preload: tuple[str, ...] = ()):
    """preload: what the judge's fork server imports (preload_for); sandbox_preload: what each
    sandbox's server imports for the students (sandbox_preload_for). A Dask worker's sandbox
    and one submission graded here take theirs from each submission's Plan."""
    if scheduler:
        return DaskPool(scheduler)
    workers = workers or os.cpu_count() or 1
    return InProcess() if workers == 1 else LocalPool(workers, unconfined, preload,
                                                      sandbox_preload)
