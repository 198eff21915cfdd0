"""lectures/toolkit/scaling.py: the scaling table's figures, their sources and the two rules."""

import pytest

from lectures.toolkit.scaling import (
    CHINCHILLA_OPTIMAL,
    MODELS,
    PAPERS,
    block_params_with_biases,
    by_name,
    compute_ratio,
    dense_params,
    six_nd,
    source_ratio,
    table_rows,
)
from lectures.toolkit.sizes import transformer_params

TWELVE = ["BERT-Large", "GPT-2", "XLNet-Large", "RoBERTa-Large", "Megatron-LM", "T5-11B",
          "Turing-NLG", "GPT-3", "Gopher", "Chinchilla", "PaLM", "LLaMA-65B"]


def test_the_twelve_models_in_order_of_year_each_with_its_paper():
    assert [m.name for m in MODELS] == TWELVE
    assert [m.year for m in MODELS] == sorted(m.year for m in MODELS)
    for m in MODELS:
        assert m.paper in PAPERS
        assert not m.compute_source or m.compute_source in PAPERS
        assert m.n_head is None or m.d_model % m.n_head == 0 or m.name == "T5-11B"
        assert (m.tokens is None) == (not m.tokens_note), m.name
        # a count the paper does not state says where its schedule is stated
        if m.tokens_note.startswith("derived"):
            assert "Section" in m.tokens_note or "Appendix" in m.tokens_note, m.name


def test_token_counts_derived_from_the_schedules_the_papers_give():
    # BERT, Appendix A.2: 90% of 1M steps at 128 tokens, 10% at 512, 256 sequences a step
    assert by_name("BERT-Large").tokens == pytest.approx(42.6e9, rel=0.001)
    assert by_name("XLNet-Large").tokens == pytest.approx(2.10e12, rel=0.002)  # Section 3.1
    assert by_name("Megatron-LM").tokens == pytest.approx(1.573e11, rel=0.001)  # Section 4.2
    # the 8.3B model of Megatron-LM's results has 24 heads; the note names the other config
    megatron = by_name("Megatron-LM")
    assert megatron.n_head == 24 and "32" in megatron.heads_note


def test_the_compute_optimal_rule_is_about_twenty_tokens_a_parameter():
    ratios = [d / n for n, d in CHINCHILLA_OPTIMAL]
    assert all(19 < r < 23 for r in ratios)
    chinchilla = by_name("Chinchilla")
    assert chinchilla.tokens / chinchilla.params == pytest.approx(20)
    assert chinchilla.compute == by_name("Gopher").compute  # Gopher's budget


def test_dense_params_defaults_to_twelve_l_d_squared_plus_embeddings():
    assert dense_params(96, 12288) == 12 * 96 * 12288 ** 2
    assert dense_params(2, 8, vocab=10) == 12 * 2 * 64 + 80
    # the same weights as toolkit.sizes counts, less biases and norms
    extra = block_params_with_biases(64) - 12 * 64 ** 2
    assert extra == 4 * 64 + (4 * 64 + 64) + 4 * 64
    assert transformer_params(3, 64, 4, 256, 10, final_norm=False, tied=True) == (
        dense_params(3, 64, 10) + 3 * extra)


def test_six_nd_and_the_ratios():
    assert six_nd(2, 3) == 36
    gpt3 = by_name("GPT-3")
    assert compute_ratio(gpt3) == pytest.approx(1, abs=0.01)
    assert source_ratio(by_name("T5-11B")) == pytest.approx(0.5, abs=0.01)  # 3 N D
    assert source_ratio(by_name("BERT-Large")) == pytest.approx(1, abs=0.01)
    assert source_ratio(by_name("RoBERTa-Large")) == pytest.approx(1, abs=0.01)
    assert compute_ratio(by_name("BERT-Large")) == pytest.approx(6.13, abs=0.01)
    assert compute_ratio(by_name("Gopher")) == pytest.approx(1.14, abs=0.01)
    assert compute_ratio(by_name("Chinchilla")) == pytest.approx(0.98, abs=0.01)
    assert compute_ratio(by_name("PaLM")) == pytest.approx(1.01, abs=0.01)
    assert compute_ratio(by_name("GPT-2")) is None and compute_ratio(by_name("LLaMA-65B")) is None


def test_published_counts_recomputed_from_layers_and_width():
    megatron = by_name("Megatron-LM")
    assert dense_params(72, 3072, 51200) / megatron.params == pytest.approx(1, abs=0.01)
    turing = by_name("Turing-NLG")
    assert dense_params(78, 4256) / turing.params == pytest.approx(1, abs=0.01)
    gopher = by_name("Gopher")
    assert dense_params(80, 16384, 32000) / gopher.params == pytest.approx(0.92, abs=0.01)
    assert dense_params(80, 16384, 32000, extra_dd=1) / gopher.params == pytest.approx(
        1, abs=0.005)
    t5 = (dense_params(24, 1024, 32128, d_ff=65536, d_attn=16384)
          + dense_params(24, 1024, d_ff=65536, d_attn=16384, cross=True))
    assert t5 / by_name("T5-11B").params == pytest.approx(1.03, abs=0.01)


def test_table_rows_have_every_column():
    rows = table_rows()
    assert len(rows) == 12
    for row in rows:
        assert {"model", "params", "layers", "d_model", "heads", "tokens", "compute", "ratio",
                "sources"} <= row.keys()
        assert all(s in PAPERS for s in row["sources"])
