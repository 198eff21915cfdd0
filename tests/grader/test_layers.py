"""The grader's import contracts (pyproject.toml, [tool.importlinter]): its layers, and no
import cycle inside a package. `make test` runs `lint-imports` on the repository; here the same
command is shown to pass on it and to fail on a copy of `grader/` given the imports the
contracts forbid (one inside a function, as the old cycles were)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).parent / "lint-imports"


def lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT), "--no-logo", "--no-cache"], cwd=root, text=True,
                          capture_output=True, env={"PYTHONPATH": str(root), "PATH": "/usr/bin"},
                          timeout=120)


@pytest.fixture
def copy(tmp_path) -> Path:
    """grader/ and pyproject.toml, copied (no caches)."""
    shutil.copytree(REPO / "grader", tmp_path / "grader",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def add_import(module: Path, line: str) -> None:
    """`line`, an import, inside a new function at the end of `module`."""
    module.write_text(module.read_text() + f"\n\ndef _added():\n    {line}\n")


def test_the_repository_keeps_both_contracts():
    done = lint(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("KEPT") == 2


def test_an_import_from_a_higher_layer_breaks_the_layers(copy):
    # The old cycle: the checks' comparison asking the judge's process about a remote object is
    # allowed (checks above judge); the sandbox asking the checks is not.
    add_import(copy / "grader" / "sandbox" / "worker.py", "from grader.checks import compare")
    done = lint(copy)
    assert done.returncode != 0
    assert "grader.sandbox.worker -> grader.checks" in done.stdout, done.stdout


def test_nothing_low_may_reach_the_pipeline(copy):
    add_import(copy / "grader" / "course.py", "from grader.pipeline import autograde")
    done = lint(copy)
    assert done.returncode != 0 and "grader.course is not allowed to import" in done.stdout


def test_a_cycle_inside_one_package_breaks_the_acyclic_contract(copy):
    # session reads processes through proc: proc -> session closes a cycle inside
    # grader.sandbox, which the layers contract (between packages) does not see.
    add_import(copy / "grader" / "sandbox" / "proc.py", "from grader.sandbox import session")
    done = lint(copy)
    assert done.returncode != 0
    assert "No import cycles among the modules of any one package BROKEN" in done.stdout, \
        done.stdout
    assert "The grader's layers: each imports only from those below it KEPT" in done.stdout
