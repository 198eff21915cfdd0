"""Few-shot prompts in miniature (lecture 9): every sequence carries its own task.

A task is a random one-to-one mapping of `n_symbols` input symbols onto `n_symbols` output
symbols, drawn afresh for every sequence. A sequence writes `n_pairs` examples of it one after
another, x1 y1 x2 y2 ..., with input tokens 0..n_symbols-1 and output tokens
n_symbols..2 n_symbols-1. Predicting y_k after x_k is then a k-shot problem: the only
information about this sequence's mapping is in the k pairs before it. Nothing in a model's
weights can know the mapping, so accuracy above chance must come from reading the context.

`best_accuracy` is the ceiling the examples allow: if x_k was shown before, its answer is known;
if not, the answer is one of the outputs not yet used, each equally likely.
"""

from __future__ import annotations

import torch


def mapping_prompts(n: int, n_pairs: int, n_symbols: int, *, generator=None):
    """n sequences of n_pairs examples of a random mapping each.

    Returns (x, tokens): x (n, n_pairs) the inputs; tokens (n, 2 n_pairs), x1 y1 x2 y2 ...
    """
    perm = torch.argsort(torch.rand(n, n_symbols, generator=generator), dim=-1)  # (n, K)
    x = torch.randint(0, n_symbols, (n, n_pairs), generator=generator)           # (n, P)
    y = n_symbols + perm.gather(1, x)                                            # (n, P)
    return x, torch.stack([x, y], dim=-1).flatten(1)                             # (n, 2P)


def shown_before(x: torch.Tensor) -> torch.Tensor:
    """(n, P) bool: was x[:, k] among x[:, :k]? (its answer is then in the context)."""
    earlier = x[:, None, :] == x[:, :, None]                   # (n, P, P): x_k == x_j
    before = torch.ones(x.size(1), x.size(1), dtype=torch.bool).tril(-1)   # j < k
    return (earlier & before).any(-1)


def best_accuracy(x: torch.Tensor, n_symbols: int) -> torch.Tensor:
    """(P,) the expected accuracy of the best possible guesser at each shot count k, on these
    inputs: 1 when x_k was shown before, else 1 / (outputs not yet used)."""
    n, P = x.shape
    onehot = torch.nn.functional.one_hot(x, n_symbols).bool()           # (n, P, K)
    used = torch.zeros(n, P, dtype=torch.long)                          # distinct inputs before k
    for k in range(1, P):
        used[:, k] = onehot[:, :k].any(1).sum(-1)
    guess = 1.0 / (n_symbols - used).float()
    return torch.where(shown_before(x), 1.0, guess).mean(0)


def answer_logits(model, tokens: torch.Tensor) -> torch.Tensor:
    """(n, P, vocab): the model's prediction of each y_k, read at the position of x_k."""
    return model(tokens[:, :-1])[:, 0::2]


@torch.no_grad()
def accuracy_by_shots(model, x: torch.Tensor, tokens: torch.Tensor):
    """(all, shown, not shown): (P,) accuracy at each shot count k, over all sequences, over
    those whose query x_k was shown before, and over those whose query was not (nan for k=0)."""
    correct = (answer_logits(model, tokens).argmax(-1) == tokens[:, 1::2]).float()  # (n, P)
    shown = shown_before(x)
    nan = torch.tensor(float("nan"))
    on_shown = torch.stack([correct[shown[:, k], k].mean() if shown[:, k].any() else nan
                            for k in range(x.size(1))])
    on_new = torch.stack([correct[~shown[:, k], k].mean() for k in range(x.size(1))])
    return correct.mean(0), on_shown, on_new


# Grammar correction in miniature (lecture 9's Try-it): every sentence is a subject and a verb in
# the wrong form, and each prompt asks for one of two tasks, shown only by its examples.
SUBJECTS = ("I", "you", "he", "she")  # tokens 0-3; "he" and "she" take the -s form
VERBS = ("walk", "sing", "read")      # base forms: tokens 4-6; their -s forms: tokens 7-9
CORRECTION_VOCAB = [*SUBJECTS, *VERBS, *(verb + "s" for verb in VERBS)]


def correction_prompts(n: int, n_examples: int, *, generator=None):
    """n prompts of n_examples + 1 ungrammatical sentences ("he walk", "I walks") each, every
    prompt with a task of its own: 1 = write the verb in the form that agrees with the subject,
    0 = copy the verb as written.

    Returns (task (n,), tokens (n, 3 (n_examples + 1))): for each sentence its subject, its verb
    as written (always the wrong form) and the verb as the task writes it. The last sentence is
    the query; predicting its third token after k examples is a k-shot problem.
    """
    n_s, n_v = len(SUBJECTS), len(VERBS)
    task = torch.randint(0, 2, (n,), generator=generator)                   # (n,)
    subject = torch.randint(0, n_s, (n, n_examples + 1), generator=generator)
    verb = torch.randint(0, n_v, (n, n_examples + 1), generator=generator)
    takes_s = (subject >= 2).long()                                         # he, she
    agreeing = n_s + verb + n_v * takes_s                                   # the right form
    written = n_s + verb + n_v * (1 - takes_s)                              # the wrong one
    answer = torch.where(task[:, None] == 1, agreeing, written)
    return task, torch.stack([subject, written, answer], dim=-1).flatten(1)
