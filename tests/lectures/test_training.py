"""The teacher-forcing training loop and the accuracy functions."""

import pytest
import torch

from lectures.toolkit.toy_translation import (
    BOS,
    EOS,
    PAD,
    SRC_VOCAB,
    TGT_VOCAB,
    batches,
    make_pairs,
)
from lectures.toolkit.training import (
    exact_match,
    sequence_loss,
    strip_eos,
    token_accuracy,
    train,
)
from solutions import AttentionDecoder, Encoder, Seq2Seq

pytestmark = pytest.mark.usefixtures("one_thread")  # (tests/lectures/conftest.py)


def _model():
    torch.manual_seed(0)
    return Seq2Seq(Encoder(len(SRC_VOCAB), 8, 16),
                   AttentionDecoder(len(TGT_VOCAB), 8, 16, 16), bos=BOS)


def test_loop_reduces_the_loss_on_a_fixed_batch():
    data = batches(make_pairs(8, seed=0, max_clauses=1), batch_size=8)
    model = _model()
    history = train(model, data, epochs=40, lr=3e-2, verbose=False)
    assert len(history.losses) == 40 and len(history.epoch_losses) == 40
    assert history.losses[-1] < 0.2 * history.losses[0]
    assert history.seconds > 0 and not model.training


def test_loop_is_repeatable():
    data = batches(make_pairs(12, seed=0, max_clauses=1), batch_size=4)
    runs = [train(_model(), data, epochs=2, verbose=False).losses for _ in range(2)]
    assert runs[0] == runs[1]


def test_loss_ignores_padding():
    logits = torch.randn(2, 3, 5)
    tgt = torch.tensor([[3, 4, PAD], [2, PAD, PAD]])
    changed = logits.clone()
    changed[0, 2] += 100.0  # scores at padded positions do not matter
    changed[1, 1:] -= 50.0
    torch.testing.assert_close(sequence_loss(logits, tgt), sequence_loss(changed, tgt))
    expected = torch.nn.functional.cross_entropy(
        torch.stack([logits[0, 0], logits[0, 1], logits[1, 0]]), torch.tensor([3, 4, 2]))
    torch.testing.assert_close(sequence_loss(logits, tgt), expected)


def test_accuracies():
    tgt = torch.tensor([[5, 6, EOS, PAD], [7, EOS, PAD, PAD]])
    pred = torch.tensor([[5, 6, EOS, 9], [7, 8, EOS, PAD]])
    assert strip_eos(pred, EOS) == [[5, 6], [7, 8]]
    assert exact_match(pred, tgt, EOS).tolist() == [True, False]
    # 5 real target tokens; the second row misses its <eos>
    assert token_accuracy(pred, tgt) == 4 / 5
    assert token_accuracy(pred[:, :2], tgt) == 3 / 5  # a short prediction is padded
    no_eos = torch.tensor([[5, 6, 6, 6], [7, 7, 7, 7]])
    assert exact_match(no_eos, tgt, EOS).tolist() == [False, False]


def test_verbose_log_has_no_run_time(capsys):
    """The log is lecture output: the same every run (seconds stay in History.seconds)."""
    data = batches(make_pairs(8, seed=0, max_clauses=1), batch_size=4)
    history = train(_model(), data, epochs=2, verbose=True)
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"epoch {e + 1:2d}  loss {loss:.3f}"
                     for e, loss in enumerate(history.epoch_losses)]
