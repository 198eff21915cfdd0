"""Transformer blocks (Vaswani et al., 2017) built from this package's parts.

An encoder block is self-attention then an MLP, each wrapped in a residual connection and a
layer norm. Where the norm goes matters:

    post-norm (the original paper):  x = norm(x + sublayer(x))
    pre-norm (GPT-2 and most since): x = x + sublayer(norm(x))

Pre-norm leaves the residual path x -> x untouched, so gradients reach early layers directly
and deep stacks train without a learning-rate warm-up; it needs a final norm after the stack.

Masks follow the course convention: boolean, True = may attend (as a boolean `attn_mask` in
`F.scaled_dot_product_attention`). A key-padding mask pad (B, S), True for real tokens, is
passed as pad[:, None, :].

Beware: PyTorch's `nn.MultiheadAttention`, `nn.Transformer` and `nn.TransformerEncoderLayer` /
`nn.TransformerDecoderLayer` mean the opposite. Their boolean `attn_mask` (`src_mask`,
`tgt_mask`, `memory_mask`) and every `*key_padding_mask` are True where attention is NOT
allowed, so a course mask m goes to them as ~m: block(x, mask=pad[:, None, :], is_causal=True)
computes layer(x, src_mask=~causal_mask(T), src_key_padding_mask=~pad, is_causal=True).

The `from_torch` constructors copy the weights of PyTorch's own layers (batch_first=True), so
the tests can check that both compute the same function.
"""

import torch
import torch.nn.functional as F
from torch import nn

from .layernorm import LayerNorm
from .mlp import MLP
from .multihead import MultiHeadAttention
from .positional import LearnedPositionalEncoding


def _activation_name(layer) -> str:
    """'relu' or 'gelu' from a torch Transformer layer's activation, else a clear error."""
    act = layer.activation
    if act is F.relu or isinstance(act, nn.ReLU):
        return "relu"
    if act is F.gelu or (isinstance(act, nn.GELU) and act.approximate == "none"):
        return "gelu"
    raise ValueError(f"unsupported activation {act!r}: only relu and exact gelu can be loaded")


@torch.no_grad()
def _copy_linear(dst: nn.Linear, src: nn.Linear):
    if dst.weight.shape != src.weight.shape or (dst.bias is None) != (src.bias is None):
        raise ValueError(f"cannot load {src} into {dst}: shapes or bias differ")
    dst.weight.copy_(src.weight)
    if src.bias is not None:
        dst.bias.copy_(src.bias)


def _copy_norm(dst: LayerNorm, src: nn.LayerNorm):
    dst.load_state_dict(src.state_dict())  # the same parameter names: weight, bias
    dst.eps = src.eps


def _block_from_torch(cls, layer):
    """A `cls` block with the sizes, norm placement, activation, weights, dtype and device of a
    torch encoder or decoder layer (both keep the same attribute names)."""
    p = layer.linear1.weight
    block = cls(layer.self_attn.embed_dim, layer.self_attn.num_heads,
                layer.linear1.out_features, dropout=layer.dropout.p,
                norm_first=layer.norm_first, activation=_activation_name(layer),
                bias=layer.linear1.bias is not None)
    return block.to(device=p.device, dtype=p.dtype).load_from_torch(layer)


class TransformerBlock(nn.Module):
    """Encoder block: self-attention and an MLP, with residuals and layer norms.

    forward(x (B, T, D), mask, is_causal) -> (B, T, D).
    """

    def __init__(self, d_model: int, n_head: int, d_ff: int, dropout: float = 0.0,
                 norm_first: bool = False, activation: str = "relu", bias: bool = True):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_head, bias=bias, dropout=dropout)
        self.mlp = MLP(d_model, d_ff, dropout=dropout, activation=activation, bias=bias)
        self.norm1 = LayerNorm(d_model, bias=bias)
        self.norm2 = LayerNorm(d_model, bias=bias)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def _sa(self, x, mask, is_causal):
        return self.dropout1(self.self_attn(x, x, x, mask=mask, is_causal=is_causal)[0])

    def _ff(self, x):
        return self.dropout2(self.mlp(x))

    def forward(self, x, mask=None, is_causal=False):
        if self.norm_first:
            x = x + self._sa(self.norm1(x), mask, is_causal)
            x = x + self._ff(self.norm2(x))
        else:
            x = self.norm1(x + self._sa(x, mask, is_causal))
            x = self.norm2(x + self._ff(x))
        return x

    def load_from_torch(self, layer: nn.TransformerEncoderLayer) -> "TransformerBlock":
        """Copy the weights of a `nn.TransformerEncoderLayer` with the same sizes into self."""
        if layer.norm_first != self.norm_first or _activation_name(layer) != self.mlp.activation:
            raise ValueError("norm_first or activation differ; use TransformerBlock.from_torch")
        self.self_attn.load_from_torch(layer.self_attn)
        _copy_linear(self.mlp.linear1, layer.linear1)
        _copy_linear(self.mlp.linear2, layer.linear2)
        _copy_norm(self.norm1, layer.norm1)
        _copy_norm(self.norm2, layer.norm2)
        return self

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer) -> "TransformerBlock":
        """A new block with the configuration, weights, dtype and device of `layer`."""
        return _block_from_torch(cls, layer)


class TransformerEncoder(nn.Module):
    """A stack of n_layer TransformerBlocks, optionally followed by a final LayerNorm.

    final_norm=None means: a final norm exactly when norm_first (pre-norm leaves the residual
    stream unnormalised; post-norm blocks already end with a norm).
    """

    def __init__(self, n_layer: int, d_model: int, n_head: int, d_ff: int, dropout: float = 0.0,
                 norm_first: bool = False, final_norm: bool | None = None,
                 activation: str = "relu", bias: bool = True):
        super().__init__()
        final_norm = norm_first if final_norm is None else final_norm
        self.layers = nn.ModuleList(
            TransformerBlock(d_model, n_head, d_ff, dropout, norm_first, activation, bias)
            for _ in range(n_layer)
        )
        self.norm = LayerNorm(d_model, bias=bias) if final_norm else None

    def forward(self, x, mask=None, is_causal=False):
        for layer in self.layers:
            x = layer(x, mask=mask, is_causal=is_causal)
        return x if self.norm is None else self.norm(x)

    @classmethod
    def from_torch(cls, encoder: nn.TransformerEncoder) -> "TransformerEncoder":
        """A copy of a `nn.TransformerEncoder` whose layers are batch-first encoder layers."""
        first = encoder.layers[0]
        p = first.linear1.weight
        module = cls(len(encoder.layers), first.self_attn.embed_dim, first.self_attn.num_heads,
                     first.linear1.out_features, dropout=first.dropout.p,
                     norm_first=first.norm_first, final_norm=encoder.norm is not None,
                     activation=_activation_name(first), bias=first.linear1.bias is not None)
        module = module.to(device=p.device, dtype=p.dtype)
        for ours, theirs in zip(module.layers, encoder.layers, strict=True):
            ours.load_from_torch(theirs)
        if encoder.norm is not None:
            _copy_norm(module.norm, encoder.norm)
        return module


class DecoderBlock(nn.Module):
    """Decoder block: causal self-attention, cross-attention over the encoder's output
    (memory), and an MLP, each with a residual and a layer norm.

    forward(x (B, T, D), memory (B, S, D), mask, memory_mask, causal) -> (B, T, D).
    `mask` is an extra self-attention mask (e.g. target padding), combined with the causal one;
    `memory_mask` (True = may attend, broadcastable to (B, T, S)) hides memory positions, e.g.
    source padding as pad[:, None, :].
    """

    def __init__(self, d_model: int, n_head: int, d_ff: int, dropout: float = 0.0,
                 norm_first: bool = False, activation: str = "relu", bias: bool = True):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_head, bias=bias, dropout=dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_head, bias=bias, dropout=dropout)
        self.mlp = MLP(d_model, d_ff, dropout=dropout, activation=activation, bias=bias)
        self.norm1 = LayerNorm(d_model, bias=bias)
        self.norm2 = LayerNorm(d_model, bias=bias)
        self.norm3 = LayerNorm(d_model, bias=bias)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    def _sa(self, x, mask, causal):
        return self.dropout1(self.self_attn(x, x, x, mask=mask, is_causal=causal)[0])

    def _ca(self, x, memory, memory_mask):
        # queries from the decoder, keys and values from the encoder
        return self.dropout2(self.cross_attn(x, memory, memory, mask=memory_mask)[0])

    def _ff(self, x):
        return self.dropout3(self.mlp(x))

    def forward(self, x, memory, mask=None, memory_mask=None, causal=True):
        if self.norm_first:
            x = x + self._sa(self.norm1(x), mask, causal)
            x = x + self._ca(self.norm2(x), memory, memory_mask)
            x = x + self._ff(self.norm3(x))
        else:
            x = self.norm1(x + self._sa(x, mask, causal))
            x = self.norm2(x + self._ca(x, memory, memory_mask))
            x = self.norm3(x + self._ff(x))
        return x

    def load_from_torch(self, layer: nn.TransformerDecoderLayer) -> "DecoderBlock":
        """Copy the weights of a `nn.TransformerDecoderLayer` with the same sizes into self."""
        if layer.norm_first != self.norm_first or _activation_name(layer) != self.mlp.activation:
            raise ValueError("norm_first or activation differ; use DecoderBlock.from_torch")
        self.self_attn.load_from_torch(layer.self_attn)
        self.cross_attn.load_from_torch(layer.multihead_attn)
        _copy_linear(self.mlp.linear1, layer.linear1)
        _copy_linear(self.mlp.linear2, layer.linear2)
        for ours, theirs in zip((self.norm1, self.norm2, self.norm3),
                                (layer.norm1, layer.norm2, layer.norm3), strict=True):
            _copy_norm(ours, theirs)
        return self

    @classmethod
    def from_torch(cls, layer: nn.TransformerDecoderLayer) -> "DecoderBlock":
        """A new block with the configuration, weights, dtype and device of `layer`."""
        return _block_from_torch(cls, layer)


class DecoderOnlyLM(nn.Module):
    """A small GPT: token embeddings + learned positions, causal pre-norm blocks, a final norm
    and a linear head giving next-token logits.

    forward(idx (B, T) token ids) -> logits (B, T, vocab); logits[:, t] predict idx[:, t + 1].
    """

    def __init__(self, vocab: int, d_model: int, n_head: int, d_ff: int, n_layer: int,
                 max_len: int, norm_first: bool = True, dropout: float = 0.0):
        super().__init__()
        self.max_len = max_len
        self.tok_emb = nn.Embedding(vocab, d_model)
        self.pos = LearnedPositionalEncoding(max_len, d_model)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            TransformerBlock(d_model, n_head, d_ff, dropout, norm_first, activation="gelu")
            for _ in range(n_layer)
        )
        self.ln_f = LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, idx):
        x = self.drop(self.pos(self.tok_emb(idx)))  # (B, T, D)
        for block in self.blocks:
            x = block(x, is_causal=True)  # each position sees only itself and the past
        return self.lm_head(self.ln_f(x))  # (B, T, vocab)

    @torch.no_grad()
    def greedy_generate(self, idx, n_new: int):
        """Append n_new tokens to idx (B, T), each the most likely next one. Returns (B, T + n_new).

        Only the last max_len tokens are fed back: the positions table has no more rows.
        """
        for _ in range(n_new):
            logits = self(idx[:, -self.max_len:])  # (B, T', vocab)
            next_id = logits[:, -1].argmax(dim=-1, keepdim=True)  # (B, 1)
            idx = torch.cat([idx, next_id], dim=1)
        return idx
