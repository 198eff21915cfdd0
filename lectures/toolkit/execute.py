"""Execute lecture notebooks headless, checking every figure, and export them.

`make lectures` runs `python -m toolkit.execute` (from lectures/) to write executed copies and
HTML under build/lectures/ (`execute_to`). `make site` (book/build.py) reuses those copies while
they are up to date, and the test suite writes them once per run (tests/conftest.py) for
tests/lectures to check and tests/site to build from. Each lecture holds PyTorch to one thread,
so `in_lanes` executes several at once, one per core, each in a process of its own.

While a notebook runs, every figure that is drawn is checked: it must have a title (its own or
the figure's) and each visible plot must label both axes. The checks are injected as extra cells
in memory; the stored notebook is not changed.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from functools import partial
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell

LECTURES = Path(__file__).resolve().parent.parent
CELL_TIMEOUT = 180  # seconds; a whole lecture must also stay within 5 minutes (its budget)

FIGURE_CHECK = '''
from matplotlib.backend_bases import FigureCanvasBase as _Canvas

_figure_problems = []
_print_figure = _Canvas.print_figure


def _check_figure(self, *args, **kwargs):
    fig = self.figure
    shown = [ax for ax in fig.axes if ax.axison and ax.get_label() != "<colorbar>"
             and ax.name != "3d"]
    suptitle = fig._suptitle.get_text() if fig._suptitle else ""
    where = f"figure in cell {get_ipython().execution_count}"
    if shown and not suptitle and not any(ax.get_title() for ax in fig.axes):
        _figure_problems.append(f"{where}: no title")
    for ax in shown:
        if not ax.get_xlabel() or not ax.get_ylabel():
            _figure_problems.append(f"{where}: axes '{ax.get_title()}' lacks an axis label")
    return _print_figure(self, *args, **kwargs)


_Canvas.print_figure = _check_figure
'''

FIGURE_VERDICT = '''
assert not _figure_problems, "figures without a title or axis labels:\\n" + "\\n".join(
    _figure_problems)
'''


def execute(path: Path, timeout: int = CELL_TIMEOUT):
    """Run the notebook at `path` in a fresh kernel; return (executed notebook, seconds).

    Raises nbclient's CellExecutionError on the first failing cell (an assertion in a training
    demo, or a figure check).
    """
    nb = nbformat.read(path, as_version=4)
    nb.cells = [new_code_cell(FIGURE_CHECK), *nb.cells, new_code_cell(FIGURE_VERDICT)]
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            extra_arguments=["--IPKernelApp.log_level=ERROR"],
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    nb.cells = nb.cells[1:-1]  # the checks are not part of the lecture
    return nb, seconds


def gpu_cells(nb) -> list:
    """The code cells that use CUDA: CI has no GPU, so each must check for a device first
    (tests/lectures), and `make cuda-check` executes their lectures where one is."""
    return [c for c in nb.cells if c.cell_type == "code" and "cuda" in c.source]


def _write_atomically(target: Path, text: str) -> None:
    """Readers (a site build, a second test run) never see a half-written file."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def execute_to(path: Path, out: Path, timeout: int = CELL_TIMEOUT):
    """Execute the lecture at `path` (`execute`), then write the executed notebook and its HTML
    into the folder `out` (the HTML first: the notebook's time stamp marks a complete copy).
    Returns (executed notebook, seconds)."""
    from nbconvert import HTMLExporter

    nb, seconds = execute(path, timeout)
    out.mkdir(parents=True, exist_ok=True)
    html, _ = HTMLExporter().from_notebook_node(nb)
    _write_atomically(out / path.with_suffix(".html").name, html)
    _write_atomically(out / path.name, nbformat.writes(nb).rstrip("\n") + "\n")
    return nb, seconds


def lanes() -> int:
    """How many notebooks to execute at once: one per core this process may run on."""
    return max(1, len(os.sched_getaffinity(0)))


def in_lanes(work: Callable[[Path], object], paths: Iterable[Path], n: int | None = None,
             done: Callable[[Path, object, BaseException | None], None] | None = None) -> dict:
    """`work(path)` for each path, `n` at a time (`lanes()` by default), each in a fresh
    process (a kernel's client is not shared between threads). Returns {path: (value, None)}
    or {path: (None, the error)}: one failing notebook does not stop the others. `done` is
    called as each finishes, in the order they finish."""
    paths = list(paths)
    n = min(n or lanes(), len(paths))
    results = {}

    def finish(path, value, error):
        results[path] = value, error
        if done:
            done(path, value, error)

    if n <= 1:
        for path in paths:
            try:
                finish(path, work(path), None)
            except Exception as e:
                finish(path, None, e)
        return results
    spawn = multiprocessing.get_context("spawn")  # a clean interpreter, not a fork of this one
    with ProcessPoolExecutor(n, mp_context=spawn) as pool:
        futures = {pool.submit(work, path): path for path in paths}
        for future in as_completed(futures):
            error = future.exception()
            finish(futures[future], None if error else future.result(), error)
    return {path: results[path] for path in paths}


def main(out: Path = LECTURES.parent / "build" / "lectures") -> int:
    def report(path, run, error):
        if error is None:
            print(f"{path.name}: executed in {run[1]:.0f} s -> {out / path.stem}.html",
                  flush=True)
        else:
            print(f"{path.name}: FAILED: {error}", flush=True)

    results = in_lanes(partial(execute_to, out=out), sorted(LECTURES.glob("*.ipynb")),
                       done=report)
    return 1 if any(error for _, error in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]).resolve()) if len(sys.argv) > 1 else main())  # the folder
