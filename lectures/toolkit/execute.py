"""Execute lecture notebooks headless, checking every figure, and export them.

`make lectures` runs `python -m toolkit.execute` (from lectures/) to write executed copies and
HTML under build/lectures/ (`execute_to`). `make site` (book/build.py) reuses those copies while
they are up to date, and the test suite writes them once per run (tests/conftest.py) for
tests/lectures to check and tests/site to build from.

While a notebook runs, every figure that is drawn is checked: it must have a title (its own or
the figure's) and each visible plot must label both axes. The checks are injected as extra cells
in memory; the stored notebook is not changed.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell

LECTURES = Path(__file__).resolve().parent.parent
CELL_TIMEOUT = 180  # seconds; a whole lecture must also stay within 3 minutes

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


def main(out: Path = LECTURES.parent / "build" / "lectures") -> int:
    for path in sorted(LECTURES.glob("*.ipynb")):
        _, seconds = execute_to(path, out)
        print(f"{path.name}: executed in {seconds:.0f} s -> {out / path.stem}.html")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]).resolve()) if len(sys.argv) > 1 else main())  # the folder
