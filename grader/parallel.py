"""Grading many submissions at once: the execution on many cores (or a Dask cluster), the
gradebook written by one process.

Grading a notebook has two parts. Executing it (the student's code in a confined worker, the
tests in a judge) is nearly all the cost and touches no database: `execute` does it from plain
data, so it can run in a local process pool or on a Dask worker on another machine. Recording the
result is nbgrader's autograde pipeline, run in this process only (one gradebook writer); its
execution step then reuses the result instead of running the notebook again
(`JudgedExecute.precomputed`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat


@dataclass
class Task:
    """Everything needed to execute one submission, as data (it may travel to another host)."""

    assignment: str
    student: str
    files: dict[str, bytes]  # the submission folder: relative path -> contents
    released: dict[str, bytes]  # the release folder: relative path -> contents
    sources: dict[str, str]  # notebook name -> source notebook JSON (with hidden tests)
    limits: dict = field(default_factory=dict)
    unconfined: bool = False  # grade even without the sandbox (the instructor's explicit choice)


def folder_files(folder: Path) -> dict[str, bytes]:
    folder = Path(folder)
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


def fingerprint(folder: Path) -> str:
    """A hash of a submission folder: unchanged submissions are not graded again."""
    h = hashlib.sha256()
    for name, data in folder_files(folder).items():
        h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()


def _write(root: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        path = root / name
        if not path.resolve().is_relative_to(root.resolve()):
            continue  # a path that climbs out of the folder
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def execute(task: Task) -> dict:
    """Execute each notebook of one submission. Returns {"notebooks": {name: executed notebook
    JSON}, "flags": [...], "seconds": wall time, "executed_by": "host:pid"}."""
    from grader.sandbox.execute import JudgedExecute, RestoreCells, read_flags

    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="grade-task-") as tmp:
        root = Path(tmp)  # a miniature course directory: release/ and submitted/
        _write(root / "release" / task.assignment, task.released)
        submitted = root / "submitted" / task.student / task.assignment
        _write(submitted, task.files)
        _write(root / "source" / task.assignment,
               {f"{name}.ipynb": text.encode() for name, text in task.sources.items()})
        executed = {}
        for name, source_json in task.sources.items():
            path = submitted / f"{name}.ipynb"
            if not path.exists():
                continue
            nb = nbformat.read(path, as_version=4)
            resources = {"nbgrader": {"assignment": task.assignment, "student": task.student,
                                      "notebook": name}}
            for cell in nb.cells:
                if cell.cell_type == "code":
                    cell.outputs, cell.execution_count = [], None
            nb, resources = RestoreCells(course_root=str(root)).preprocess(nb, resources)
            overwrite_locked(nb, nbformat.v4.reads(source_json))  # no schema check: ours
            step = JudgedExecute(course_root=str(root), limits=task.limits,
                                 unconfined=task.unconfined)
            nb, resources = step.preprocess(nb, resources)
            executed[name] = json.dumps(nb)  # checked by nbgrader when it is recorded
        flags = read_flags(root, task.assignment, task.student)
    return {"notebooks": executed, "flags": flags, "seconds": time.monotonic() - start,
            "executed_by": f"{os.uname().nodename}:{os.getpid()}"}


def overwrite_locked(nb, source) -> None:
    """What nbgrader's OverwriteCells does with the gradebook, done from the source notebook:
    read-only cells (tests included, hidden tests and all) get the instructor's source."""
    by_id = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in source.cells}
    for cell in nb.cells:
        ref = by_id.get(cell.metadata.get("nbgrader", {}).get("grade_id"))
        if ref is not None and ref.metadata["nbgrader"].get("locked"):
            cell.source = ref.source


def _pool_init():
    import torch

    from grader.course import setup_process

    setup_process()
    torch.set_num_threads(1)  # one pool process per core already


class LocalPool:
    """Submissions executed by N processes on this machine."""

    def __init__(self, workers: int):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.workers = workers
        self.pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=_pool_init)

    def submit(self, task: Task):
        return self.pool.submit(execute, task)

    def done(self, futures, timeout: float | None = None) -> set:
        from concurrent.futures import FIRST_COMPLETED, wait

        return wait(futures, timeout=timeout, return_when=FIRST_COMPLETED).done

    def close(self):
        self.pool.shutdown(cancel_futures=True)

    def kill(self):
        """End the pool now, whatever its processes are doing (their sandboxes die with them)."""
        for process in list((self.pool._processes or {}).values()):
            with contextlib.suppress(Exception):
                process.kill()
        with contextlib.suppress(Exception):
            self.pool.shutdown(wait=False, cancel_futures=True)


class InProcess:
    """One submission at a time, in this process (--workers 1)."""

    workers = 1

    def submit(self, task: Task):
        from concurrent.futures import Future

        future = Future()
        future.task = task
        return future

    def done(self, futures, timeout: float | None = None) -> set:
        # One at a time, here: the sandbox's own limits bound each notebook; no watchdog.
        future = next(iter(futures))
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


def make_pool(workers: int | None, scheduler: str | None):
    if scheduler:
        return DaskPool(scheduler)
    workers = workers or os.cpu_count() or 1
    return InProcess() if workers == 1 else LocalPool(workers)
