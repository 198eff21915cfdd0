"""The parameter counter agrees exactly with real `solutions` models, and roughly with the
published sizes of famous Transformers."""

import pytest
from torch import nn

from lectures.toolkit.sizes import (
    PUBLISHED,
    block_params,
    param_breakdown,
    size_table,
    transformer_params,
)
from solutions import (
    DecoderBlock,
    DecoderOnlyLM,
    LayerNorm,
    LearnedPositionalEncoding,
    TransformerBlock,
    TransformerEncoder,
)

VOCAB, D, H, FF, L, T = 13, 8, 2, 20, 3, 9


def numel(module: nn.Module) -> int:
    # parameters() lists a shared (tied) tensor once, which is what a count should do
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize("bias", [True, False])
def test_block_counts_match_solutions_blocks(bias):
    assert block_params(D, FF, bias=bias) == numel(TransformerBlock(D, H, FF, bias=bias))
    assert block_params(D, FF, cross=True, bias=bias) == numel(DecoderBlock(D, H, FF, bias=bias))


def test_decoder_only_lm_untied():
    lm = DecoderOnlyLM(VOCAB, D, H, FF, L, max_len=T)
    assert transformer_params(L, D, H, FF, VOCAB, T, kind="decoder", tied=False,
                              final_norm=True) == numel(lm)


def test_decoder_only_lm_tied():
    lm = DecoderOnlyLM(VOCAB, D, H, FF, L, max_len=T)
    lm.lm_head.weight = lm.tok_emb.weight  # GPT-2's weight tying
    assert transformer_params(L, D, H, FF, VOCAB, T, kind="decoder", tied=True,
                              final_norm=True) == numel(lm)


class BertLike(nn.Module):
    """Token, position and segment embeddings, an embedding norm, post-norm blocks, a pooler."""

    def __init__(self, bias=True):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D)
        self.pos = LearnedPositionalEncoding(T, D)
        self.seg = nn.Embedding(2, D)
        self.norm = LayerNorm(D, bias=bias)
        self.encoder = TransformerEncoder(L, D, H, FF, norm_first=False, bias=bias)
        self.pooler = nn.Linear(D, D, bias=bias)


@pytest.mark.parametrize("bias", [True, False])
def test_encoder_only_bert_like(bias):
    assert transformer_params(L, D, H, FF, VOCAB, T, kind="encoder", segments=2,
                              embed_norm=True, pooler=True, bias=bias) == numel(BertLike(bias))


def test_encoder_only_pre_norm_with_final_norm():
    model = nn.ModuleList([nn.Embedding(VOCAB, D), LearnedPositionalEncoding(T, D),
                           TransformerEncoder(L, D, H, FF, norm_first=True)])
    assert model[2].norm is not None
    assert transformer_params(L, D, H, FF, VOCAB, T, kind="encoder",
                              final_norm=True) == numel(model)


class EncoderDecoder(nn.Module):
    """Embeddings, an encoder stack, a decoder stack and an output layer, tied or not."""

    def __init__(self, tied, norm_first, positions):
        super().__init__()
        self.src_emb = nn.Embedding(VOCAB, D)
        self.tgt_emb = self.src_emb if tied else nn.Embedding(VOCAB, D)
        if positions:
            self.src_pos = LearnedPositionalEncoding(positions, D)
            self.tgt_pos = LearnedPositionalEncoding(positions, D)
        self.encoder = TransformerEncoder(L, D, H, FF, norm_first=norm_first)
        self.decoder = nn.ModuleList(DecoderBlock(D, H, FF, norm_first=norm_first)
                                     for _ in range(L))
        self.dec_norm = LayerNorm(D) if norm_first else None
        self.out = nn.Linear(D, VOCAB, bias=False)
        if tied:
            self.out.weight = self.src_emb.weight


@pytest.mark.parametrize("tied", [True, False])
@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("positions", [0, T])
def test_encoder_decoder(tied, norm_first, positions):
    model = EncoderDecoder(tied, norm_first, positions)
    assert transformer_params(L, D, H, FF, VOCAB, positions, kind="encoder-decoder", tied=tied,
                              final_norm=norm_first) == numel(model)


def test_heads_do_not_change_the_count_but_must_divide_d_model():
    assert transformer_params(L, 12, 1, FF, VOCAB) == transformer_params(L, 12, 4, FF, VOCAB)
    with pytest.raises(ValueError, match="divisible"):
        transformer_params(L, 12, 5, FF, VOCAB)
    with pytest.raises(ValueError, match="kind"):
        transformer_params(L, D, H, FF, VOCAB, kind="seq2seq")


def test_blocks_dominate_a_large_model_as_12_n_layer_d_squared():
    parts = param_breakdown(96, 12288, 96, 4 * 12288, 50257, 2048, final_norm=True)
    approx = 12 * 96 * 12288**2
    assert abs(parts["decoder blocks"] - approx) / approx < 1e-3


def test_published_sizes_within_a_few_percent():
    table = size_table()
    assert [name for name, _, _ in table] == list(PUBLISHED)
    for name, published, computed in table:
        assert abs(computed - published) / published < 0.035, (name, published, computed)
    exact = {name: computed for name, _, computed in table}
    assert exact["BERT-Base"] == 109_482_240  # the count of the released checkpoint
    assert exact["GPT-2 small"] == 124_439_808
