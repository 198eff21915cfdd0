"""Machine-made mutants (tests/mutants/): the operators, the differential harness, and a fixed
sample graded through autograde.

The fast tests check the tools themselves: each operator makes the slip it models, a mutant
known to differ is judged not equivalent, and rewrites that change nothing a caller can see are
judged equivalent. The slow test grades a fixed sample (5 mutants of each of two assignments,
drawn with a fixed seed) the way `make mutants` grades them all: every mutant that is not
equivalent loses points, every equivalent one keeps full marks, no message names a wrong cause,
and `grader check` gives every mutant's visible tests the verdicts autograde gives them.
"""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from grader.course import REPO
from grader.intake import id_problem
from tests.mutants import equivalence
from tests.mutants.operators import mutants, mutants_of, regions
from tests.mutants.regimes import probes
from tests.mutants.run import run

SA = REPO / "assignments" / "self_attention" / "self_attention.ipynb"
SAMPLE = {"soft_select": 5, "self_attention": 5}  # CI's fixed sample: mutants per assignment
SEED = 50


def sdpa_region():
    return next(r for r in regions(SA, "self_attention") if r.cell == "sdpa")


def by_what(ms):
    return {(m.operator, m.what): m for m in ms}


def test_every_assignment_has_regions_and_mutants_whose_edits_apply():
    for notebook in sorted((REPO / "assignments").glob("*/*.ipynb")):
        found = regions(notebook, notebook.parent.name)
        assert found, f"{notebook}: no solution region found"
        for region in found:
            assert region.text in region.cell_text, f"{region.cell}: region not in the cell"
            made = mutants_of(region)
            assert made[0].operator == "identity" and len(made) > 1, region.cell
            assert len({m.edit.new for m in made}) == len(made), f"{region.cell}: duplicates"
            for m in made:
                ast.parse(region.cell_text.replace(m.edit.old, m.edit.new))
        students = [m.student for m in mutants(notebook, notebook.parent.name)]
        assert len(set(students)) == len(students), f"{notebook}: two mutants share an id"
        assert all(id_problem(s) is None for s in students)


def test_operators_model_the_slips_they_name():
    made = [m.edit.new for m in mutants_of(sdpa_region())]
    assert any("torch.softmax(scores, dim=-2)" in text for text in made)  # axis
    assert any("scores = q @ k.transpose(-2, -1) * math.sqrt(d)" in text for text in made)
    assert any("masked_fill(mask, float('-inf'))" in text for text in made)  # ~ dropped
    assert any("masked_fill(~mask, -1000000000.0)" in text for text in made)  # finite -inf
    assert any("q @ k / math.sqrt(d)" in text for text in made)  # transpose dropped
    mha = next(r for r in regions(SA, "self_attention") if r.cell == "mha")
    twins = {m.what for m in mutants_of(mha, ["twin"])}
    assert {"self.k_proj -> self.v_proj", "self.q_proj -> self.k_proj"} <= twins
    assert any(".reshape -> .view" == m.what for m in mutants_of(mha, ["layout"]))


def test_expected_causes_come_from_the_catalogue():
    found = {m.what: m.cause for m in mutants(SA, "self_attention") if m.cell == "sdpa"}
    assert found["Invert dropped"] == "mask_inverted"
    assert found["Div -> Mult"] == "scale_multiplied"


@pytest.fixture(scope="module")
def sdpa_harness():
    program = equivalence.cells(SA)
    grid = probes("self_attention")
    return program, grid, equivalence.Reference.of(program, grid)


def test_a_mutant_known_to_differ_is_not_equivalent(sdpa_harness):
    program, grid, reference = sdpa_harness
    region = sdpa_region()
    wrong_axis = next(m for m in mutants_of(region, ["axis"])
                      if "torch.softmax(scores, dim=-2)" in m.edit.new)
    why = equivalence.verdict(reference, equivalence.mutated(
        program, "sdpa", wrong_axis.edit.old, wrong_axis.edit.new), grid)
    assert why is not None and "sdpa" in why


def test_rewrites_that_change_nothing_are_equivalent(sdpa_harness):
    program, grid, reference = sdpa_harness
    region = sdpa_region()
    identity = mutants_of(region)[0]
    swapped_transpose = region.text.replace("k.transpose(-2, -1)", "k.transpose(-1, -2)")
    for new in (identity.edit.new, swapped_transpose):
        assert equivalence.verdict(reference, equivalence.mutated(
            program, "sdpa", region.text, new), grid) is None, new


def test_the_harness_sees_a_difference_only_one_regime_shows(sdpa_harness):
    """-inf as -1e9 agrees at ordinary scales; the huge-score regime tells them apart."""
    program, grid, reference = sdpa_harness
    region = sdpa_region()
    finite = region.text.replace('float("-inf")', "-1e9")
    why = equivalence.verdict(reference, equivalence.mutated(program, "sdpa", region.text,
                                                             finite), grid)
    assert why is not None and "x1000000000000.0" in why
    ordinary = [p for p in grid if "x1000000000000.0" not in p.name]
    kept = equivalence.Reference.of(program, ordinary)
    assert equivalence.verdict(kept, equivalence.mutated(program, "sdpa", region.text, finite),
                               ordinary) is None


def test_disagreement_compares_errors_values_and_dtypes():
    import torch

    same = equivalence.Raised("ValueError")
    assert equivalence.disagreement(same, equivalence.Raised("ValueError")) is None
    assert equivalence.disagreement(same, torch.zeros(2)) is not None
    a = torch.tensor([1.0, float("nan")], dtype=torch.float64)
    assert equivalence.disagreement(a, a.clone()) is None
    assert equivalence.disagreement(a, a.float()) is not None
    assert equivalence.disagreement(a, a + 1e-3) is not None


def test_the_command_refuses_a_bad_sample():
    done = subprocess.run([sys.executable, "-m", "tests.mutants", "--sample", "0"], cwd=REPO,
                          capture_output=True, text=True)
    assert done.returncode == 2 and "--sample must be at least 1" in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("assignment", sorted(SAMPLE))
def test_fixed_sample_is_killed_kept_or_named_rightly(assignment):
    report = run(assignment, sample=SAMPLE[assignment], seed=SEED)
    assert report.control_full_marks, f"{assignment}: the unchanged solution lost points"
    assert len(report.outcomes) == SAMPLE[assignment]
    problems = [f"{o.mutant} ({o.what}): {o.status}, cause {o.cause}, named {o.named}, "
                f"failed {sorted(o.failed)}, check vs autograde {o.check_disagrees}\n{o.diff}"
                for o in report.problems()]
    assert not problems, "\n".join(problems)
