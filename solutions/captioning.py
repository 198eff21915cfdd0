"""Image captioning with attention over a CNN feature grid (Xu et al., 2015, "Show, Attend and
Tell").

A small conv net turns the image into an h x w grid of feature vectors, one per image region.
While writing the caption, the decoder attends over the h * w regions at every word, the same
way a translation decoder attends over source words; reshaping the weights back to (h, w) shows
where in the image it "looked" for each word.

Shapes: B batch, N = h * w grid cells, F feature size, H hidden size, T caption length.
The original uses an LSTM and a pretrained VGG; a GRU and a tiny conv net keep this small.
"""

import math

import torch
from torch import nn

from .attention import attend
from .scoring import AdditiveScore


class GridEncoder(nn.Module):
    """Three stride-2 conv layers: (B, C, H, W) -> features (B, N, d_feat) and the grid size
    (h, w), with h = H / 8 and w = W / 8 (rounded up)."""

    def __init__(self, in_ch: int, d_feat: int, width: int = 32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(in_ch, width, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(width, width, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(width, d_feat, 3, stride=2, padding=1), nn.ReLU(),
        )

    def forward(self, images):
        grid = self.net(images)  # (B, d_feat, h, w)
        h, w = grid.shape[-2:]
        return grid.flatten(2).transpose(1, 2), (h, w)  # (B, h * w, d_feat): one row per cell


class CaptionDecoder(nn.Module):
    """A GRU that writes one word per step, reading an attention-weighted average of the grid
    features (the context) queried by its previous state."""

    def __init__(self, vocab: int, d_emb: int, d_feat: int, d_hidden: int, d_att: int):
        super().__init__()
        self.emb = nn.Embedding(vocab, d_emb)
        self.score = AdditiveScore(d_hidden, d_feat, d_att)
        self.init_h = nn.Linear(d_feat, d_hidden)
        self.cell = nn.GRUCell(d_emb + d_feat, d_hidden)  # input: [embedding; context]
        self.out = nn.Linear(d_hidden + d_feat, vocab)  # logits from [new state; context]

    def init_hidden(self, features):
        """The starting state summarises the whole image: a projection of the mean feature."""
        return torch.tanh(self.init_h(features.mean(dim=1)))  # (B, H)

    def step(self, y_prev, h, features):
        """y_prev (B,), h (B, H), features (B, N, F) -> (logits (B, V), h (B, H), att (B, N))."""
        context, att = attend(h.unsqueeze(1), features, features, score=self.score)
        context, att = context.squeeze(1), att.squeeze(1)  # (B, F), (B, N)
        h = self.cell(torch.cat([self.emb(y_prev), context], dim=-1), h)
        logits = self.out(torch.cat([h, context], dim=-1))
        return logits, h, att

    def forward(self, features, tgt_in):
        """Teacher forcing on tgt_in (B, T) (caption shifted right, starting with bos).
        -> (logits (B, T, V), att (B, T, N))."""
        h = self.init_hidden(features)
        all_logits, all_att = [], []
        for t in range(tgt_in.size(1)):
            logits, h, att = self.step(tgt_in[:, t], h, features)
            all_logits.append(logits)
            all_att.append(att)
        return torch.stack(all_logits, dim=1), torch.stack(all_att, dim=1)

    @torch.no_grad()
    def greedy(self, features, bos: int, max_len: int, grid_size=None):
        """Write max_len words, feeding back the most likely one each time.

        -> (tokens (B, max_len), att (B, max_len, h, w)). grid_size is the (h, w) returned by
        GridEncoder; without it the grid is taken to be square.
        """
        B, N, _ = features.shape
        if grid_size is None:
            side = math.isqrt(N)
            if side * side != N:
                raise ValueError(f"{N} grid cells is not a square grid: pass grid_size=(h, w)")
            grid_size = (side, side)
        h = self.init_hidden(features)
        y = torch.full((B,), bos, dtype=torch.long, device=features.device)
        tokens, all_att = [], []
        for _ in range(max_len):
            logits, h, att = self.step(y, h, features)
            y = logits.argmax(dim=-1)
            tokens.append(y)
            all_att.append(att)
        att = torch.stack(all_att, dim=1)  # (B, T, N)
        return torch.stack(tokens, dim=1), att.view(B, max_len, *grid_size)  # (B, T, h, w)
