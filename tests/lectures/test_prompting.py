"""lectures/toolkit/prompting.py: few-shot sequences of a random mapping, and their ceiling."""

import torch

from lectures.toolkit.prompting import (
    accuracy_by_shots,
    best_accuracy,
    mapping_prompts,
    shown_before,
)


def test_each_sequence_follows_one_mapping_of_its_own():
    g = torch.Generator().manual_seed(0)
    x, tokens = mapping_prompts(200, 6, 4, generator=g)
    assert tokens.shape == (200, 12) and torch.equal(tokens[:, 0::2], x)
    y = tokens[:, 1::2]
    assert ((y >= 4) & (y < 8)).all()
    for xs, ys in zip(x, y, strict=True):  # the same input always gets the same output
        pairs = {(a, b) for a, b in zip(xs.tolist(), ys.tolist(), strict=True)}
        assert len({a for a, _ in pairs}) == len(pairs) == len({b for _, b in pairs})
    assert len({tuple(r) for r in (y - 4)[x[:, 0] == 0][:, :1].tolist()}) > 1  # mappings differ


def test_shown_before():
    x = torch.tensor([[2, 1, 2, 0, 1]])
    assert shown_before(x).tolist() == [[False, False, True, False, True]]


def test_best_accuracy_by_hand():
    # shot 0: 1/4; shot 1: new input, one output used -> 1/3; shot 2: shown -> 1;
    # shot 3: new, two used -> 1/2; shot 4: shown -> 1
    x = torch.tensor([[2, 1, 2, 0, 1]])
    expected = torch.tensor([1 / 4, 1 / 3, 1.0, 1 / 2, 1.0])
    torch.testing.assert_close(best_accuracy(x, 4), expected)


def test_best_accuracy_grows_with_shots_and_starts_at_chance():
    x, _ = mapping_prompts(5000, 5, 4, generator=torch.Generator().manual_seed(1))
    best = best_accuracy(x, 4)
    assert abs(best[0] - 0.25) < 1e-6
    assert (best.diff() > 0).all()
    assert abs(best[1] - 0.5) < 0.02  # expected 1/4 * 1 + 3/4 * 1/3


class Oracle(torch.nn.Module):
    """Answers by looking the query up among the examples; guesses the first output if new."""

    def forward(self, idx):  # idx (n, 2P - 1) -> logits (n, 2P - 1, 8)
        logits = torch.zeros(*idx.shape, 8)
        for i in range(0, idx.size(1), 2):
            answer = torch.full((idx.size(0),), 4)
            for j in range(0, i, 2):
                answer = torch.where(idx[:, j] == idx[:, i], idx[:, j + 1], answer)
            logits[torch.arange(idx.size(0)), i, answer] = 1.0
        return logits


def test_accuracy_by_shots_splits_shown_and_new_queries():
    x, tokens = mapping_prompts(500, 5, 4, generator=torch.Generator().manual_seed(2))
    overall, on_shown, on_new = accuracy_by_shots(Oracle(), x, tokens)
    assert torch.isnan(on_shown[0])
    assert (on_shown[1:] == 1).all()
    assert (on_new < 0.5).all()
    assert (overall[1:] > overall[0]).all()


def test_correction_prompts_are_ungrammatical_and_ask_for_one_task_each():
    from lectures.toolkit.prompting import CORRECTION_VOCAB, SUBJECTS, VERBS, correction_prompts

    task, tokens = correction_prompts(500, 3, generator=torch.Generator().manual_seed(0))
    assert tokens.shape == (500, 12) and 150 < int(task.sum()) < 350
    words = [[CORRECTION_VOCAB[t] for t in row] for row in tokens.tolist()]
    for t, row in zip(task.tolist(), words, strict=True):
        for subject, written, answer in zip(row[0::3], row[1::3], row[2::3], strict=True):
            assert subject in SUBJECTS
            takes_s = subject in ("he", "she")
            agreeing = written.rstrip("s") + ("s" if takes_s else "")
            assert written != agreeing, f"{subject} {written} is grammatical"
            assert written.rstrip("s") in VERBS
            assert answer == (agreeing if t == 1 else written)
