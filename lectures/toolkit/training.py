"""A small training loop for sequence-writing models trained with teacher forcing.

Any model works whose call `model(*batch.inputs, batch.tgt_in)` returns logits (B, T, V) (or a
tuple whose first item is the logits), e.g. `solutions.Seq2Seq` on a translation Batch. A batch
is any object with `.inputs` (a tuple), `.tgt_in` and `.tgt_out` (B, T); padding in tgt_out
(id `pad`) is left out of the loss. One loop for translation and captioning keeps the lecture's
attention on the models, not on bookkeeping.

Also: exact-match and token accuracy of greedy outputs against targets that end with <eos>.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F


def sequence_loss(logits: torch.Tensor, tgt_out: torch.Tensor, pad: int = 0) -> torch.Tensor:
    """Mean cross-entropy over the real (non-pad) target tokens.

    logits (B, T, V), tgt_out (B, T).
    """
    return F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=pad)


@dataclass
class History:
    """What `train` did: the loss of every step, the mean loss of every epoch, the seconds (kept
    for budgets and benchmarks; the verbose log leaves them out, so a lecture's output does not
    change from run to run)."""

    losses: list[float] = field(default_factory=list)
    epoch_losses: list[float] = field(default_factory=list)
    seconds: float = 0.0


def train(model, batches, *, epochs: int, lr: float = 3e-3, pad: int = 0, clip: float = 1.0,
          seed: int = 0, decay: bool = True, verbose: bool = True) -> History:
    """Adam with teacher forcing over `batches` for `epochs` epochs, batch order reshuffled each
    epoch (seeded, so runs repeat). Gradients are clipped to norm `clip`: recurrent nets
    occasionally produce a huge gradient, and one such step can undo an epoch. With `decay`
    the learning rate falls linearly to a tenth of `lr` by the last step: large steps early,
    small ones to settle at the end, which makes short runs land more reliably."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    total_steps = epochs * len(batches)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: 1.0 - 0.9 * step / total_steps if decay else 1.0)
    rng = random.Random(seed)
    order = list(range(len(batches)))
    history = History()
    start = time.perf_counter()
    model.train()
    for epoch in range(epochs):
        rng.shuffle(order)
        total = 0.0
        for i in order:
            batch = batches[i]
            out = model(*batch.inputs, batch.tgt_in)
            logits = out[0] if isinstance(out, tuple) else out
            loss = sequence_loss(logits, batch.tgt_out, pad)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            opt.step()
            sched.step()
            history.losses.append(loss.item())
            total += loss.item()
        history.epoch_losses.append(total / len(batches))
        if verbose:
            print(f"epoch {epoch + 1:2d}  loss {history.epoch_losses[-1]:.3f}")
    history.seconds = time.perf_counter() - start
    model.eval()
    return history


def strip_eos(tokens: torch.Tensor, eos: int) -> list[list[int]]:
    """(B, T) token ids -> one list per row, cut before the first <eos> (or at T)."""
    rows = []
    for row in tokens.tolist():
        rows.append(row[: row.index(eos)] if eos in row else row)
    return rows


def exact_match(pred: torch.Tensor, tgt_out: torch.Tensor, eos: int) -> torch.Tensor:
    """(B,) bool: the prediction equals the target word for word, up to <eos>. A prediction
    that never writes <eos> must still stop right where the target does."""
    tgt = strip_eos(tgt_out, eos)
    ok = []
    for p_row, t in zip(pred.tolist(), tgt, strict=True):
        p = p_row[: p_row.index(eos)] if eos in p_row else p_row
        ok.append(p == t)
    return torch.tensor(ok)


def token_accuracy(pred: torch.Tensor, tgt_out: torch.Tensor, pad: int = 0) -> float:
    """Fraction of the target's real tokens (<eos> included) that the prediction gets right at
    the same position. pred (B, T') is padded or cut to the target's length T."""
    T = tgt_out.size(1)
    if pred.size(1) < T:
        pred = F.pad(pred, (0, T - pred.size(1)), value=pad)
    real = tgt_out != pad
    return ((pred[:, :T] == tgt_out) & real).sum().item() / real.sum().item()
