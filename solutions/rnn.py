"""A GRU encoder-decoder with additive attention (Bahdanau et al., 2015) for toy translation.

Without attention the decoder sees the source only through the encoder's last hidden state: one
fixed-size vector, however long the sentence (the bottleneck). With attention, at every output
step the decoder scores all encoder outputs against its current state and reads a weighted
average of them (the context), so it can look back at the source word it is translating.

Shapes: B batch, S source length, T target length, H hidden size, V vocabulary size.
Source masks are boolean (B, S), True at real tokens, False at padding (see `padding_mask`).
For simplicity the encoder is a one-layer unidirectional GRU (Bahdanau used a bidirectional one).
"""

import torch
from torch import nn

from .attention import attend
from .scoring import AdditiveScore


class Encoder(nn.Module):
    """Embed the source tokens and run a GRU over them.

    forward(src (B, S), lengths (B,) or None) -> (outputs (B, S, H), h (1, B, H)).
    """

    def __init__(self, vocab: int, d_emb: int, d_hidden: int):
        super().__init__()
        self.emb = nn.Embedding(vocab, d_emb)
        self.gru = nn.GRU(d_emb, d_hidden, batch_first=True)

    def forward(self, src, lengths=None):
        outputs, h = self.gru(self.emb(src))  # (B, S, H), (1, B, H)
        if lengths is not None:
            # The GRU also ran over the padding at the end; its state after the last real
            # token is the output at position lengths - 1 (padding never comes before it).
            batch = torch.arange(src.size(0), device=src.device)
            h = outputs[batch, lengths - 1].unsqueeze(0)  # (1, B, H)
        return outputs, h


def last_position_weights(src_mask: torch.Tensor, dtype) -> torch.Tensor:
    """(B, S) one-hot weights on each sequence's last real position. Averaging the encoder
    outputs with these gives the encoder's final state: "attention" that never moves."""
    last = src_mask.sum(dim=-1) - 1  # (B,)
    positions = torch.arange(src_mask.size(-1), device=src_mask.device)  # (S,)
    return (positions == last[:, None]).to(dtype)  # (B, S)


class AttentionDecoder(nn.Module):
    """One GRU step per output token, reading a context vector from the encoder outputs.

    With use_attention=True the context is an additive-attention average of the encoder
    outputs, queried by the previous decoder state. With use_attention=False it is always the
    encoder's final state: the fixed-size bottleneck baseline, otherwise the same network (the
    scorer is left unused). Its `att` is then one-hot on the last real source token.
    """

    def __init__(self, vocab: int, d_emb: int, d_hidden: int, d_att: int,
                 use_attention: bool = True):
        super().__init__()
        self.use_attention = use_attention
        self.emb = nn.Embedding(vocab, d_emb)
        self.score = AdditiveScore(d_hidden, d_hidden, d_att)
        self.cell = nn.GRUCell(d_emb + d_hidden, d_hidden)  # input: [embedding; context]
        self.out = nn.Linear(2 * d_hidden, vocab)  # logits from [new state; context]

    def step(self, y_prev, h, enc_out, src_mask=None):
        """y_prev (B,) previous tokens, h (B, H) previous state, enc_out (B, S, H),
        src_mask (B, S) -> (logits (B, V), new h (B, H), att (B, S))."""
        if src_mask is None:
            src_mask = torch.ones(enc_out.shape[:2], dtype=torch.bool, device=enc_out.device)
        if self.use_attention:
            # one query per sequence: (B, 1, H) against keys = values = enc_out (B, S, H)
            context, att = attend(h.unsqueeze(1), enc_out, enc_out, score=self.score,
                                  mask=src_mask.unsqueeze(1))  # (B, 1, H), (B, 1, S)
            context, att = context.squeeze(1), att.squeeze(1)  # (B, H), (B, S)
        else:
            att = last_position_weights(src_mask, enc_out.dtype)  # (B, S)
            context = (att.unsqueeze(1) @ enc_out).squeeze(1)  # (B, H): encoder's final state
        h = self.cell(torch.cat([self.emb(y_prev), context], dim=-1), h)  # (B, H)
        logits = self.out(torch.cat([h, context], dim=-1))  # (B, V)
        return logits, h, att


class Seq2Seq(nn.Module):
    """Encoder + decoder. The decoder starts from the encoder's final state."""

    def __init__(self, encoder: Encoder, decoder: AttentionDecoder, bos: int):
        super().__init__()
        self.encoder, self.decoder, self.bos = encoder, decoder, bos

    def encode(self, src, src_mask=None):
        lengths = None if src_mask is None else src_mask.sum(dim=-1)
        enc_out, h = self.encoder(src, lengths)
        return enc_out, h.squeeze(0)  # (B, S, H), (B, H)

    def forward(self, src, src_mask, tgt_in):
        """Teacher forcing: tgt_in (B, T) is the target shifted right (starting with bos), and
        step t is fed the true token tgt_in[:, t]. -> (logits (B, T, V), att (B, T, S))."""
        enc_out, h = self.encode(src, src_mask)
        all_logits, all_att = [], []
        for t in range(tgt_in.size(1)):
            logits, h, att = self.decoder.step(tgt_in[:, t], h, enc_out, src_mask)
            all_logits.append(logits)
            all_att.append(att)
        return torch.stack(all_logits, dim=1), torch.stack(all_att, dim=1)

    @torch.no_grad()
    def greedy(self, src, src_mask, max_len: int):
        """Decode max_len tokens, each time feeding back the most likely one.
        -> (tokens (B, max_len), att (B, max_len, S))."""
        enc_out, h = self.encode(src, src_mask)
        y = torch.full((src.size(0),), self.bos, dtype=torch.long, device=src.device)  # (B,)
        tokens, all_att = [], []
        for _ in range(max_len):
            logits, h, att = self.decoder.step(y, h, enc_out, src_mask)
            y = logits.argmax(dim=-1)  # (B,)
            tokens.append(y)
            all_att.append(att)
        return torch.stack(tokens, dim=1), torch.stack(all_att, dim=1)
