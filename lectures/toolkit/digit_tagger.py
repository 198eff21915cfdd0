"""The small digit model of lectures 6 and 7: digit embeddings, learned positions, a
`solutions.TransformerEncoder` and a linear layer giving one prediction per position.

Lecture 6 (section 6.5) trains deep, narrow stacks of it to compare post-norm with pre-norm;
lecture 7 trains it to reverse digit strings and reads its attention (section 7.1), then
pre-trains and fine-tunes it (section 7.6).
"""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from solutions import LearnedPositionalEncoding, TransformerEncoder

from .sequence_tasks import task_batch


class DigitTagger(nn.Module):
    # digits in, one prediction per position out: embeddings + positions + encoder + head

    def __init__(self, d_model, n_head, d_ff, n_layer, max_len, norm_first=True, n_out=10):
        super().__init__()
        self.tok_emb = nn.Embedding(10, d_model)
        self.pos = LearnedPositionalEncoding(max_len, d_model)
        # pre-norm gets a final norm after the stack; post-norm blocks already end with one
        self.encoder = TransformerEncoder(n_layer, d_model, n_head, d_ff, norm_first=norm_first)
        self.head = nn.Linear(d_model, n_out)

    def forward(self, x):                                  # x: (B, T) digits
        h = self.encoder(self.pos(self.tok_emb(x)))        # (B, T, d_model)
        return self.head(h)                                # (B, T, n_out) scores


def train_tagger(model, task, steps, lr, batch=32, length=6, seed=0):
    # Adam at a fixed rate, a fresh batch every step
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        x, y = task_batch(task, batch, length, generator=g)
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses)
