"""Character-level language modelling on a real text: the alphabet, a held-out split, batches,
a training loop that records the training and validation losses, and sampling.

Any model whose call `model(idx)` maps token ids (B, T) to next-token logits (B, T, vocab) works,
e.g. `solutions.DecoderOnlyLM`. The validation text is the last `val_fraction` of the text, cut
at a line break, so that no paragraph is split between the two sides; the validation loss is
measured on fixed windows (the same every time it is measured), so its curve has no sampling
noise of its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F


@dataclass
class CharCorpus:
    """A text's alphabet and its training and validation ids (1-D int64 tensors)."""

    chars: list[str]
    train: torch.Tensor
    val: torch.Tensor

    @classmethod
    def from_text(cls, text: str, val_fraction: float = 0.1) -> CharCorpus:
        chars = sorted(set(text))
        stoi = {c: i for i, c in enumerate(chars)}
        ids = torch.tensor([stoi[c] for c in text], dtype=torch.long)
        cut = text.rfind("\n", 0, int(len(text) * (1 - val_fraction))) + 1   # at a line break
        return cls(chars, ids[:cut], ids[cut:])

    @property
    def vocab(self) -> int:
        return len(self.chars)

    def encode(self, s: str) -> torch.Tensor:
        stoi = {c: i for i, c in enumerate(self.chars)}
        return torch.tensor([stoi[c] for c in s], dtype=torch.long)

    def decode(self, ids) -> str:
        return "".join(self.chars[i] for i in ids)

    def batch(self, split: str, batch: int, ctx: int, generator: torch.Generator):
        """`batch` random windows of `ctx` characters and the same windows shifted by one."""
        data = self.train if split == "train" else self.val
        ix = torch.randint(0, len(data) - ctx - 1, (batch,), generator=generator)
        x = torch.stack([data[i:i + ctx] for i in ix])              # (B, ctx)
        y = torch.stack([data[i + 1:i + ctx + 1] for i in ix])      # (B, ctx)
        return x, y


@torch.no_grad()
def evaluate(model, corpus: CharCorpus, split: str = "val", *, ctx: int, batches: int = 8,
             batch: int = 64, seed: int = 1234) -> float:
    """Mean cross-entropy (nats per character) on fixed windows of the split."""
    was_training = model.training
    model.eval()
    g = torch.Generator().manual_seed(seed)
    losses = []
    for _ in range(batches):
        x, y = corpus.batch(split, batch, ctx, g)
        losses.append(F.cross_entropy(model(x).flatten(0, 1), y.flatten()).item())
    model.train(was_training)
    return sum(losses) / len(losses)


@dataclass
class LMHistory:
    """Training loss at every step; both losses on fixed windows at `eval_steps`."""

    train_losses: list[float] = field(default_factory=list)
    eval_steps: list[int] = field(default_factory=list)
    eval_train: list[float] = field(default_factory=list)
    eval_val: list[float] = field(default_factory=list)


def train_lm(model, corpus: CharCorpus, *, steps: int, ctx: int, batch: int = 32,
             lr: float = 3e-3, eval_every: int = 100, seed: int = 0,
             eval_batches: int = 8) -> LMHistory:
    """AdamW with a linear warm-up over the first 5% of steps and a cosine decay to a tenth.

    Both losses are measured every `eval_every` steps and after the last step, on the same fixed
    windows each time.
    """
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    warmup = max(1, steps // 20)

    def schedule(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, steps - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    history = LMHistory()
    model.train()
    for step in range(steps):
        if step % eval_every == 0:
            _record(history, step, model, corpus, ctx, eval_batches)
        x, y = corpus.batch("train", batch, ctx, g)
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        history.train_losses.append(loss.item())
    _record(history, steps, model, corpus, ctx, eval_batches)
    model.eval()
    return history


def _record(history: LMHistory, step: int, model, corpus: CharCorpus, ctx: int,
            batches: int) -> None:
    history.eval_steps.append(step)
    history.eval_train.append(evaluate(model, corpus, "train", ctx=ctx, batches=batches))
    history.eval_val.append(evaluate(model, corpus, "val", ctx=ctx, batches=batches))


@torch.no_grad()
def sample(model, corpus: CharCorpus, prompt: str, n_new: int, *, temperature: float = 1.0,
           n_samples: int = 1, seed: int = 0, max_len: int | None = None) -> list[str]:
    """`n_samples` continuations of `prompt`, drawn side by side; the model sees at most
    `max_len` characters (default: the model's own `max_len`)."""
    max_len = max_len or model.max_len
    g = torch.Generator().manual_seed(seed)
    idx = corpus.encode(prompt)[None].repeat(n_samples, 1)          # (n_samples, T)
    for _ in range(n_new):
        logits = model(idx[:, -max_len:])[:, -1]                    # (n_samples, vocab)
        probs = torch.softmax(logits / temperature, dim=-1)
        idx = torch.cat([idx, torch.multinomial(probs, 1, generator=g)], dim=1)
    return [corpus.decode(row.tolist()) for row in idx]
