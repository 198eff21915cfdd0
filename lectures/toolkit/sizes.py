"""Count the parameters of a Transformer from its hyper-parameters, without building it.

Why: "BERT-Base has 110M parameters" becomes arithmetic one can check. Almost all of the count
is 12 * n_layer * d_model**2 (4 d^2 in the attention projections, 8 d^2 in an MLP with
d_ff = 4 d) plus vocab * d_model for the token embeddings. The number of heads does not change
the count: the heads split d_model between them.

The conventions are those of the `solutions` package (and of PyTorch):
- attention: q, k, v and output projections, each d_model x d_model (+ bias);
- MLP: d_model -> d_ff -> d_model (+ biases);
- LayerNorm: a scale and (with bias=True) a shift of d_model each;
- output head: a linear layer vocab x d_model without bias; zero extra parameters when tied to
  the token embedding (GPT-2, the original Transformer, BERT);
- learned positions: a (positions, d_model) table; sinusoidal positions have none (positions=0).
"""

from __future__ import annotations

KINDS = ("encoder-decoder", "encoder", "decoder")


def attention_params(d_model: int, bias: bool = True) -> int:
    """q, k, v and output projections of multi-head attention."""
    return 4 * d_model * d_model + (4 * d_model if bias else 0)


def mlp_params(d_model: int, d_ff: int, bias: bool = True) -> int:
    """The position-wise MLP: two linear layers."""
    return 2 * d_model * d_ff + (d_ff + d_model if bias else 0)


def norm_params(d_model: int, bias: bool = True) -> int:
    """One LayerNorm: scale (and shift)."""
    return 2 * d_model if bias else d_model


def block_params(d_model: int, d_ff: int, cross: bool = False, bias: bool = True) -> int:
    """One block: self-attention, MLP and two norms; a decoder block (cross=True) adds
    cross-attention and a third norm."""
    n_att = 2 if cross else 1
    return (n_att * attention_params(d_model, bias) + mlp_params(d_model, d_ff, bias)
            + (n_att + 1) * norm_params(d_model, bias))


def param_breakdown(n_layer: int, d_model: int, n_head: int, d_ff: int, vocab: int,
                    positions: int = 0, *, kind: str = "decoder", tied: bool = True,
                    final_norm: bool = False, embed_norm: bool = False, segments: int = 0,
                    pooler: bool = False, bias: bool = True) -> dict[str, int]:
    """Parameters of a Transformer, part by part (a dict of name -> count).

    n_layer: blocks per stack (an encoder-decoder has n_layer encoder AND n_layer decoder
      blocks: Transformer-Base is n_layer=6).
    n_head: checked to divide d_model; it does not change the count.
    vocab: size of the (shared) token vocabulary.
    positions: rows of a learned position table per stack (0 for sinusoidal positions).
    kind: "encoder-decoder" (decoder blocks with cross-attention), "encoder" or "decoder"
      (decoder-only: causal self-attention blocks, no cross-attention).
    tied: the output layer reuses the token embedding (no extra parameters); for an
      encoder-decoder it also means one embedding shared by source and target. Untied: an
      output layer of vocab x d_model (and separate source and target embeddings).
      An encoder-only model with tied=True has no output layer counted (BERT's published size
      leaves out its pre-training heads).
    final_norm: a LayerNorm after each stack (pre-norm models: GPT-2, GPT-3).
    embed_norm: a LayerNorm after the embeddings (BERT).
    segments: rows of a segment ("token type") table (BERT: 2).
    pooler: BERT's d_model x d_model (+ bias) layer on the first token.
    bias: biases in linear layers and shifts in norms.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if d_model % n_head != 0:
        raise ValueError(f"d_model={d_model} is not divisible by n_head={n_head}")
    n_stack = 2 if kind == "encoder-decoder" else 1
    n_emb = 1 if tied or kind != "encoder-decoder" else 2  # source and target tables
    parts = {
        "token embeddings": n_emb * vocab * d_model,
        "positions": n_stack * positions * d_model,
        "segments": segments * d_model,
        "embedding norm": norm_params(d_model, bias) if embed_norm else 0,
        "encoder blocks": 0,
        "decoder blocks": 0,
        "final norms": n_stack * norm_params(d_model, bias) if final_norm else 0,
        "pooler": d_model * d_model + (d_model if bias else 0) if pooler else 0,
        "output layer": 0 if tied else vocab * d_model,
    }
    if kind in ("encoder", "encoder-decoder"):
        parts["encoder blocks"] = n_layer * block_params(d_model, d_ff, bias=bias)
    if kind == "decoder":
        parts["decoder blocks"] = n_layer * block_params(d_model, d_ff, bias=bias)
    if kind == "encoder-decoder":
        parts["decoder blocks"] = n_layer * block_params(d_model, d_ff, cross=True, bias=bias)
    return parts


def transformer_params(n_layer: int, d_model: int, n_head: int, d_ff: int, vocab: int,
                       positions: int = 0, **options) -> int:
    """Total parameter count; the arguments are those of `param_breakdown`."""
    return sum(param_breakdown(n_layer, d_model, n_head, d_ff, vocab, positions,
                               **options).values())


# Published sizes and the hyper-parameters from each paper. "published" is the number the
# authors (or the released checkpoints' names) give; the computed count differs by a few
# percent where the paper rounds or where details (the exact vocabulary) are not stated.
PUBLISHED = {
    # Vaswani et al. 2017: 6 + 6 layers, shared 37k BPE vocabulary (en-de), sinusoidal positions
    "Transformer-Base": (65e6, dict(n_layer=6, d_model=512, n_head=8, d_ff=2048, vocab=37000,
                                    kind="encoder-decoder")),
    "Transformer-Big": (213e6, dict(n_layer=6, d_model=1024, n_head=16, d_ff=4096, vocab=37000,
                                    kind="encoder-decoder")),
    # Devlin et al. 2019: WordPiece vocabulary of 30522, 512 positions, 2 segments
    "BERT-Base": (110e6, dict(n_layer=12, d_model=768, n_head=12, d_ff=3072, vocab=30522,
                              positions=512, kind="encoder", segments=2, embed_norm=True,
                              pooler=True)),
    "BERT-Large": (340e6, dict(n_layer=24, d_model=1024, n_head=16, d_ff=4096, vocab=30522,
                               positions=512, kind="encoder", segments=2, embed_norm=True,
                               pooler=True)),
    # Radford et al. 2019: byte-level BPE of 50257, 1024 positions, pre-norm with a final norm;
    # the released checkpoints are named 124M, 355M, 774M and 1558M
    "GPT-2 small": (124e6, dict(n_layer=12, d_model=768, n_head=12, d_ff=3072, vocab=50257,
                                positions=1024, final_norm=True)),
    "GPT-2 medium": (355e6, dict(n_layer=24, d_model=1024, n_head=16, d_ff=4096, vocab=50257,
                                 positions=1024, final_norm=True)),
    "GPT-2 large": (774e6, dict(n_layer=36, d_model=1280, n_head=20, d_ff=5120, vocab=50257,
                                positions=1024, final_norm=True)),
    "GPT-2 XL": (1558e6, dict(n_layer=48, d_model=1600, n_head=25, d_ff=6400, vocab=50257,
                              positions=1024, final_norm=True)),
    # Brown et al. 2020: 96 layers of width 12288, 2048 positions, GPT-2's vocabulary
    "GPT-3": (175e9, dict(n_layer=96, d_model=12288, n_head=96, d_ff=49152, vocab=50257,
                          positions=2048, final_norm=True)),
}


def size_table() -> list[tuple[str, float, int]]:
    """(model, published, computed) for every entry of PUBLISHED."""
    return [(name, published, transformer_params(**config))
            for name, (published, config) in PUBLISHED.items()]
