"""Every lecture executes headless, within its budget, with titled and labelled figures.

Training demos assert their own results inside the notebooks, so a regression fails here.
Each lecture runs once per test run (the session's `executed_lectures`, tests/conftest.py),
into build/lectures/, where the site build (tests/site) picks it up instead of running it again.
"""

import os
import subprocess
import sys

import nbformat
import pytest

from grader.course import REPO
from lectures.toolkit.execute import execute, gpu_cells

LECTURES = sorted((REPO / "lectures").glob("*.ipynb"))
# seconds per lecture, two lectures side by side on 2 CPU cores. The lectures that train on real
# data take 100-120 s on a quiet machine (lectures 3, 7 and 10, docs/performance.md) and
# this machine's slow spells have run lectures about 1.5 times
# slower: 300 s keeps a margin over both. One cell may take at most CELL_TIMEOUT (180 s).
BUDGET = 300


@pytest.mark.slow
@pytest.mark.parametrize("path", LECTURES, ids=[p.stem for p in LECTURES])
def test_lecture_executes_within_budget(path, executed_lectures):
    nb, seconds = executed_lectures(path)
    assert seconds < BUDGET, f"{path.name} took {seconds:.0f} s (budget {BUDGET} s)"
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors


@pytest.mark.parametrize("path", LECTURES, ids=[p.stem for p in LECTURES])
def test_lecture_is_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") and not c.get("execution_count")
               for c in nb.cells if c.cell_type == "code"), f"clear the outputs of {path.name}"


@pytest.mark.slow
def test_figure_check_catches_an_unlabelled_plot(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    path = tmp_path / "bad.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(Exception, match="no title"):
        execute(path, timeout=60)


@pytest.mark.parametrize("path", LECTURES, ids=[p.stem for p in LECTURES])
def test_gpu_cells_do_nothing_without_a_device(path):
    """CI has no GPU, so a cell that uses CUDA must ask for a device first; where one is,
    `make cuda-check` (tests/cuda_checks.py) executes these lectures and prints the cells."""
    nb = nbformat.read(path, as_version=4)
    unguarded = [c.id for c in gpu_cells(nb) if "if torch.cuda.is_available():" not in c.source]
    assert not unguarded, f"{path.name}: cells {unguarded} use CUDA without checking for it"


def test_gpu_check_kernels_find_the_reference_package(tmp_path, monkeypatch):
    """`make cuda-check` runs on a GPU machine with that machine's PyTorch, where `solutions` is
    a folder of this repository, not an installed package: a lecture's kernel (started in
    lectures/) must still import it. Checked in an interpreter without site-packages (-S), so the
    editable install in .venv cannot be what finds it."""
    monkeypatch.syspath_prepend(str(REPO / "tests"))  # the script's own additions undone too
    from cuda_checks import kernel_path

    find = [sys.executable, "-S", "-c",
            "import importlib.util as u; s = u.find_spec('solutions'); print(s and s.origin)"]
    bare = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    alone = subprocess.run(find, cwd=tmp_path, env=bare, capture_output=True, text=True)
    assert alone.stdout.strip() == "None"  # the check below would prove nothing otherwise
    env = {**bare, "PYTHONPATH": kernel_path(str(tmp_path / "site"))}
    found = subprocess.run(find, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert found.stdout.strip() == str(REPO / "solutions" / "__init__.py"), found.stderr
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(tmp_path / "site")  # carried wheels first
