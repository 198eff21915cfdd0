"""tests/fresh_machine/run.sh (`make fresh-check`) itself, without a fresh machine: the README
commands it types, and what it refuses. The check proper needs root and several minutes
(`sudo make fresh-check`), so the suite does not run it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

RUN = Path(__file__).resolve().parent / "run.sh"
REPO = RUN.parents[2]

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def run(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(RUN), *args], capture_output=True, text=True, timeout=60,
                          **kw)


def test_it_types_the_readme_set_up_commands_as_written():
    done = run("--print-commands", str(REPO))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [ln.split()[:2] for ln in lines] == [["make", "demo"], ["make", "test"]], lines
    readme = (REPO / "README.md").read_text()
    assert all(ln in readme.splitlines() for ln in lines)  # verbatim, comments and all


def test_a_readme_without_the_set_up_block_gives_nothing_to_type(tmp_path):
    (tmp_path / "README.md").write_text("# A course\n\n## Set-up\n\nRun `make demo`.\n")
    done = run("--print-commands", str(tmp_path))
    assert done.returncode == 0 and done.stdout == ""


def test_unknown_options_are_refused_before_anything_runs():
    done = run("--frobnicate")
    assert done.returncode == 2 and "unknown option --frobnicate" in done.stderr
    done = run("--as", "nobody")
    assert done.returncode == 2 and "--as takes user, root or both" in done.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="as root it would start the check")
def test_it_needs_root():
    done = run(str(REPO))
    assert done.returncode == 2 and "fresh-check needs root" in done.stderr
