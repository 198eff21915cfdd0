"""Build an expensive thing once per test run, whichever pytest-xdist worker asks first.

`make test` runs the suite on several workers (pytest-xdist), each a process with its own session
fixtures. A fixture that executes the lectures or grades the sample classes must not do it once
per worker: `once(name, build, folder)` runs `build()` in the first worker that asks, under a file
lock, keeps its value on disk (pickled) in `folder`, and hands that value to every later caller,
in that worker or another. A build that raised is kept as well: later callers get the same error
again (`BuildFailed`, with the first traceback) rather than paying for a second try.

`run_folder(config, tmp_path_factory)` is the folder one run shares between its workers (the
parent of the workers' base temporary folders under xdist; the base folder itself without it).
"""

from __future__ import annotations

import os
import pickle
import traceback
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock


class BuildFailed(RuntimeError):
    """The shared build of `name` failed (in this worker or another); the first traceback."""


def run_folder(tmp_path_factory) -> Path:
    """The folder every worker of this test run shares (pytest's base temporary folder, or its
    parent when pytest-xdist gives each worker one of its own below it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once(name: str, build: Callable[[], object], folder: Path):
    """build()'s value, built by the first caller of this run and read back by every other."""
    folder.mkdir(parents=True, exist_ok=True)
    done = folder / f"{name}.pickle"
    with FileLock(folder / f"{name}.lock"):
        if not done.exists():
            try:
                kept = ("value", build())
            except Exception:
                kept = ("error", traceback.format_exc())
            partial = done.with_suffix(".partial")
            partial.write_bytes(pickle.dumps(kept))
            partial.replace(done)
        kind, value = pickle.loads(done.read_bytes())
    if kind == "error":
        raise BuildFailed(f"the shared build of {name!r} failed:\n{value}")
    return value
