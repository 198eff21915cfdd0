"""Category 4 on a training task (rnn_attention): a blank submission that redefines the data
generator and the trained model, so that the training test would check the model against data
the student made up. The test must use the instructor's generator and constants (the grader's
own copy) and so give no training points; an honest control graded after it keeps full marks."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell

from grader.demo.sample_class import Student, make_submission
from tests.support.classes import released_class
from tests.support.notebooks import grade_id

pytestmark = pytest.mark.slow

FAKE = '''
MAX_LEN, PAD = 3, 0  # constants the test also uses


def reversal_batch(B, generator):
    """'Data' whose target is the source itself."""
    src = torch.randint(3, 15, (B, MAX_LEN), generator=generator)
    return src, src != PAD, src.clone()


class Copier:
    def eval(self):
        return self

    def translate(self, src, mask, n_steps):
        return src, None


model = Copier()
'''


def test_a_made_up_generator_earns_no_training_points(tmp_path):
    mine = released_class(tmp_path, "rnn_attention")
    attacker = nbformat.read(mine.released, as_version=4)
    at = next(i for i, c in enumerate(attacker.cells) if grade_id(c) == "test_training")
    attacker.cells.insert(at, new_code_cell(FAKE.strip()))
    for name, nb in (("fake_generator", attacker),
                     ("zz_control", make_submission(mine.source, mine.released,
                                                    Student("c", "", "full")))):
        mine.write(name, nb)
    run = mine.autograde(timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    status = mine.status()
    assert status["fake_generator"]["auto_score"] == 0, run.stdout
    assert status["zz_control"]["auto_score"] == status["zz_control"]["auto_max"], run.stdout
    kinds = {f["kind"] for f in status["fake_generator"]["flags"]}
    assert "redefined" in kinds, kinds  # reversal_batch, MAX_LEN, PAD are the instructor's
