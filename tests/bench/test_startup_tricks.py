"""bench/startup_tricks.py has a row for every module of grader/startup/, and its rows are
well-formed: a trick cannot be added there without a measured row (docs/performance.md's
table, "Start-up tuning: one table"). Its timings are not tested here: they are measured by
running it."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.scripts import script_module

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench" / "startup_tricks.py"
STARTUP = REPO / "grader" / "startup"
NUMBER = r"[+-]?\d+\.\d{3}"
MEASURED = re.compile(rf"^{NUMBER}$")
PERCENT = re.compile(r"^[+-]\d+\.\d% of (start-up|a notebook) \(\d+\.\d{3} s\)$")


@pytest.fixture(scope="module")
def bench():
    return script_module(BENCH)  # (registered: its dataclasses look their module up)


def modules() -> list[str]:
    """Every trick's module: grader/startup/ but its __init__."""
    found = sorted(f"grader/startup/{p.name}" for p in STARTUP.glob("*.py")
                   if p.name != "__init__.py")
    assert found, STARTUP
    return found


def rows(output: str) -> list[list[str]]:
    """The table's lines (header first), each split into its six fields."""
    lines = [line for line in output.splitlines() if " | " in line and not line.startswith(" ")]
    assert lines and lines[0] == "trick | file | without | with | gain s | gain % of <base>", \
        output
    split = [line.split(" | ") for line in lines]
    assert all(len(fields) == 6 for fields in split), lines
    return split[1:]


def well_formed(fields: list[str]) -> bool:
    _, files, without, with_, gain, percent = fields
    if not all(f.startswith("grader/") and f.endswith(".py") for f in files.split(", ")):
        return False
    if gain.startswith(("not separable: ", "not measured")):
        return without == with_ == percent == "-"
    return (all(MEASURED.match(v) for v in (without, with_, gain))
            and abs(float(without) - float(with_) - float(gain)) < 0.0015
            and bool(PERCENT.match(percent)))


def test_every_module_of_grader_startup_is_a_tricks_file(bench):
    covered = {f for trick in bench.TRICKS for f in trick.files}
    assert set(modules()) <= covered, sorted(set(modules()) - covered)
    assert all((REPO / f).is_file() for f in covered), covered


def test_every_trick_can_be_switched_off_where_it_is_measured(bench):
    sandbox_forks = set(bench.PROCESS_VARIANTS["sandbox"])
    for trick in bench.TRICKS:
        if trick.why_not:
            continue
        if trick.base == "start-up":
            assert trick.processes, trick.name
            assert all(trick.name in bench.PROCESS_VARIANTS[p] for p in trick.processes), \
                trick.name
        else:
            assert trick.name in bench.RECORD_VARIANTS or trick.name in sandbox_forks, \
                trick.name


def test_a_row_has_six_fields_whether_measured_or_not(bench):
    trick = bench.TRICKS[0]
    assert well_formed(bench.row(trick, 1.25, 1.0, "start-up", 4.0).split(" | "))
    assert well_formed(bench.row(trick, None, None, "", 0, "not separable: why").split(" | "))


@pytest.mark.slow
def test_the_bench_prints_a_well_formed_row_for_every_module(tmp_path):
    """One trick measured (--only: the others' rows say they were not), once, with the
    smallest inputs: about ten fresh interpreters that import nbgrader or torch."""
    done = subprocess.run([sys.executable, str(BENCH), "--quick", "--repeats", "1",
                           "--only", "formats"], capture_output=True, text=True, cwd=REPO,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    table = rows(done.stdout)
    bad = [" | ".join(fields) for fields in table if not well_formed(fields)]
    assert not bad, bad
    files = {f for fields in table for f in fields[1].split(", ")}
    assert set(modules()) <= files, sorted(set(modules()) - files)
    measured = {fields[0] for fields in table if MEASURED.match(fields[2])}
    assert measured == {"formats"}, done.stdout
