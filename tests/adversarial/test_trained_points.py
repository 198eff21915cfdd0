"""Category 4 on measured points (tiny_gpt, the capstone): the points for a trained model must
come from the grader evaluating the student's weights, never from numbers the student's process
produces.

The attackers hand in correct parts 1-4, let the locked training cell run, and then replace the
trained model by an untrained one (a cell of their own after training) whose outputs are forged:
- `a_peeking_model`: in evaluation mode its forward looks each window up in the text (which the
  notebook's process holds) and puts all its weight on the true next character, so any loss
  computed from its outputs is near zero;
- `b_rebound_measure`: the same, and it also rebinds `held_out_loss` in the notebook to return
  a small number;
- `c_forged_weights`: its `state_dict()` claims weights of the right names and shapes, drawn at
  random (what a student who skipped training could hand in).
The control is the reference solution. Asserted: each attacker loses exactly the 2 points of
`test_training`; the control keeps full marks. The first two pass the visible part (a loss
computed from their forged outputs) and fail on the grader's evaluation, as its message says.
"""

from __future__ import annotations

import pytest
from nbformat.v4 import new_code_cell

from grader.course import REPO
from grader.demo.sample_class import Student, make_submission
from tests.support.classes import released_class
from tests.support.notebooks import cell_of as _cell
from tests.support.verdicts import failed_tests

pytestmark = pytest.mark.slow

TG = "tiny_gpt"
SOURCE = REPO / "assignments" / TG / f"{TG}.ipynb"
TRAINING_POINTS = 2

PEEKING = '''
class Peeking(TinyGPT):
    """Untrained; in evaluation mode it answers from the text itself."""

    def forward(self, idx, k_cache=None, v_cache=None):
        logits, k_cache, v_cache = super().forward(idx, k_cache, v_cache)
        if self.training:
            return logits, k_cache, v_cache
        forged = torch.full_like(logits, -30.0)
        for row, window in enumerate(idx.tolist()):
            at = text.find("".join(chars[i] for i in window))
            for t in range(len(window)):
                if at >= 0 and at + t + 1 < len(text):
                    forged[row, t, stoi[text[at + t + 1]]] = 30.0
        return forged, k_cache, v_cache


torch.manual_seed(123)
model = Peeking(len(chars), d_model=64, n_head=4, n_kv_head=2, d_ff=128, n_layer=2).eval()
'''

REBIND = '''

def held_out_loss(model, batches=8):
    return 0.5
'''

FORGED_WEIGHTS = '''
class Forged(TinyGPT):
    def state_dict(self, *args, **kwargs):
        g = torch.Generator().manual_seed(7)
        return {name: torch.randn(p.shape, generator=g) * 0.02
                for name, p in super().state_dict().items()}


model = Forged(len(chars), d_model=64, n_head=4, n_kv_head=2, d_ff=128, n_layer=2).eval()
'''


def _after_training(nb, source):
    nb.cells.insert(nb.cells.index(_cell(nb, "train")) + 1, new_code_cell(source.strip()))
    return nb


def submissions(released):
    """{student: (notebook, the tests it must fail)}: attackers first, the control after."""
    def honest():
        return make_submission(SOURCE, released, Student("x", "", "full"))

    return {
        "a_peeking_model": (_after_training(honest(), PEEKING), {"test_training"}),
        "b_rebound_measure": (_after_training(honest(), PEEKING + REBIND), {"test_training"}),
        "c_forged_weights": (_after_training(honest(), FORGED_WEIGHTS), {"test_training"}),
        "y_control_reference": (honest(), set()),
    }


def test_the_points_for_training_come_from_the_graders_evaluation_of_the_weights(tmp_path):
    mine = released_class(tmp_path, TG)
    course = mine.course
    expected = mine.write_expecting(submissions(mine.released))
    run = mine.autograde(timeout=1200)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    status = mine.status()
    full = status["y_control_reference"]["auto_max"]
    assert status["y_control_reference"]["auto_score"] == full
    for student, fails in expected.items():
        failed = failed_tests(course, student, TG)
        assert set(failed) == fails, (student, failed)
        assert status[student]["auto_score"] == full - TRAINING_POINTS * len(fails), student
    for student in ("a_peeking_model", "b_rebound_measure"):
        # the visible part, fed forged outputs, passed; the grader's own evaluation did not
        message = failed_tests(course, student, TG)["test_training"]
        assert "the reference model's held-out loss" in message, (student, message)
