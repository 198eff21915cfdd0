"""Character-level language modelling on a real text (lectures/toolkit/char_lm.py): the split,
the batches, the measured losses, training and sampling."""

import math

import pytest
import torch

from lectures.toolkit.char_lm import CharCorpus, evaluate, sample, train_lm
from solutions import DecoderOnlyLM

pytestmark = pytest.mark.usefixtures("one_thread")  # (tests/lectures/conftest.py)


TEXT = "".join(f"line {i}: the cat sat on the mat.\n" for i in range(40))


def tiny_lm(corpus, seed=0):
    torch.manual_seed(seed)
    return DecoderOnlyLM(vocab=corpus.vocab, d_model=16, n_head=2, d_ff=32, n_layer=1,
                         max_len=16)


def test_the_split_is_at_a_line_break_and_the_two_parts_do_not_overlap():
    corpus = CharCorpus.from_text(TEXT, val_fraction=0.25)
    train, val = corpus.decode(corpus.train.tolist()), corpus.decode(corpus.val.tolist())
    assert train + val == TEXT                          # every character once, in order
    assert train.endswith("\n") and val.startswith("line ")
    assert len(val) >= 0.2 * len(TEXT)                  # about the fraction asked for
    assert set(train.splitlines()).isdisjoint(val.splitlines())


def test_encode_and_decode_are_inverse():
    corpus = CharCorpus.from_text(TEXT)
    assert corpus.chars == sorted(set(TEXT)) and corpus.vocab == len(set(TEXT))
    s = "the mat: line 7\n"
    ids = corpus.encode(s)
    assert ids.dtype == torch.long and ids.shape == (len(s),)
    assert corpus.decode(ids.tolist()) == s


def test_batch_targets_are_the_inputs_shifted_by_one():
    corpus = CharCorpus.from_text(TEXT)
    for split, data in (("train", corpus.train), ("val", corpus.val)):
        x, y = corpus.batch(split, 8, 10, torch.Generator().manual_seed(0))
        assert x.shape == y.shape == (8, 10)
        assert torch.equal(x[:, 1:], y[:, :-1])
        text = corpus.decode(data.tolist())               # each window comes from its split
        for row_x, row_y in zip(x.tolist(), y.tolist(), strict=True):
            assert corpus.decode(row_x + row_y[-1:]) in text


def test_evaluate_is_deterministic_and_leaves_the_mode_alone():
    corpus = CharCorpus.from_text(TEXT)
    model = tiny_lm(corpus)
    model.train()
    first = evaluate(model, corpus, "val", ctx=16, batches=2, batch=4)
    assert evaluate(model, corpus, "val", ctx=16, batches=2, batch=4) == first
    assert model.training
    assert abs(first - math.log(corpus.vocab)) < 1.0    # untrained: near a uniform guess
    assert evaluate(model, corpus, "val", ctx=16, batches=2, batch=4, seed=5) != first


def test_training_lowers_the_loss_of_a_tiny_model_on_a_repetitive_text():
    corpus = CharCorpus.from_text(TEXT)
    model = tiny_lm(corpus)
    history = train_lm(model, corpus, steps=60, ctx=16, batch=16, lr=1e-2, eval_every=20,
                       eval_batches=2)
    assert history.eval_steps == [0, 20, 40, 60]
    assert len(history.train_losses) == 60
    assert history.eval_val[-1] < 0.5 * history.eval_val[0], history.eval_val
    assert history.eval_train[-1] < 0.5 * history.eval_train[0], history.eval_train
    assert not model.training


def test_sampling_is_reproducible_with_a_seed():
    corpus = CharCorpus.from_text(TEXT)
    model = tiny_lm(corpus)
    a = sample(model, corpus, "line ", 30, n_samples=3, seed=1)
    assert a == sample(model, corpus, "line ", 30, n_samples=3, seed=1)
    assert a != sample(model, corpus, "line ", 30, n_samples=3, seed=2)
    assert len(a) == 3 and all(s.startswith("line ") and len(s) == 35 for s in a)
    assert set("".join(a)) <= set(corpus.chars)
