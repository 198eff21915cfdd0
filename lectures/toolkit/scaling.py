"""The scaling table of lecture 9: twelve Transformers from BERT to LLaMA, with their sources.

Why: "GPT-3 took 3.14e23 FLOPs" is only worth teaching if one can check it. Each figure here is
stored with the paper it comes from, so the lecture can print a sources column and test the
figures against two rules of thumb:

- training compute C ~ 6 N D FLOPs for N parameters and D training tokens (2 N D for the
  forward pass: one multiply and one add per weight and token; twice that for the backward
  pass), the rule Kaplan et al. (2020) and Brown et al. (2020) use;
- parameters N ~ 12 L d^2 + V d for L blocks of width d and a vocabulary of V (lecture 7,
  `toolkit.sizes`), true when the MLP is 4 d wide and the heads together are d wide.

Numbers that a paper does not give are None, never guessed. A token count a paper does not
state but whose training schedule it gives (steps x batch x sequence length) is derived, and its
note shows the product and where the schedule is stated. Where a figure comes from a later paper
(compute for BERT, RoBERTa and T5 is given by Brown et al. 2020, Table D.1; for Gopher and
Chinchilla by Hoffmann et al. 2022), its source says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from .sizes import attention_params, mlp_params

PAPERS = {
    "BERT": "Devlin, Chang, Lee and Toutanova, 'BERT: Pre-training of Deep Bidirectional "
            "Transformers for Language Understanding', NAACL 2019",
    "GPT-2": "Radford, Wu, Child, Luan, Amodei and Sutskever, 'Language Models are "
             "Unsupervised Multitask Learners', OpenAI report 2019",
    "XLNet": "Yang, Dai, Yang, Carbonell, Salakhutdinov and Le, 'XLNet: Generalized "
             "Autoregressive Pretraining for Language Understanding', NeurIPS 2019",
    "RoBERTa": "Liu, Ott, Goyal, Du, Joshi, Chen, Levy, Lewis, Zettlemoyer and Stoyanov, "
               "'RoBERTa: A Robustly Optimized BERT Pretraining Approach', arXiv 2019",
    "Megatron-LM": "Shoeybi, Patwary, Puri, LeGresley, Casper and Catanzaro, 'Megatron-LM: "
                   "Training Multi-Billion Parameter Language Models Using Model "
                   "Parallelism', arXiv 2019",
    "T5": "Raffel, Shazeer, Roberts, Lee, Narang, Matena, Zhou, Li and Liu, 'Exploring the "
          "Limits of Transfer Learning with a Unified Text-to-Text Transformer', JMLR 2020",
    "Turing-NLG": "Rosset, 'Turing-NLG: A 17-billion-parameter language model by Microsoft', "
                  "Microsoft Research blog, February 2020",
    "GPT-3": "Brown, Mann, Ryder, Subbiah, Kaplan, Dhariwal et al., 'Language Models are "
             "Few-Shot Learners', NeurIPS 2020",
    "Gopher": "Rae, Borgeaud, Cai, Millican, Hoffmann, Song et al., 'Scaling Language Models: "
              "Methods, Analysis & Insights from Training Gopher', arXiv 2021",
    "Chinchilla": "Hoffmann, Borgeaud, Mensch, Buchatskaya, Cai, Rutherford et al., 'Training "
                  "Compute-Optimal Large Language Models', NeurIPS 2022",
    "PaLM": "Chowdhery, Narang, Devlin, Bosma, Mishra, Roberts et al., 'PaLM: Scaling Language "
            "Modeling with Pathways', JMLR 2023 (arXiv 2022)",
    "LLaMA": "Touvron, Lavril, Izacard, Martinet, Lachaux, Lacroix et al., 'LLaMA: Open and "
             "Efficient Foundation Language Models', arXiv 2023",
    "Kaplan": "Kaplan, McCandlish, Henighan, Brown, Chess, Child et al., 'Scaling Laws for "
              "Neural Language Models', arXiv 2020",
}


@dataclass(frozen=True)
class Model:
    """One row of the table. Sizes from `paper`; `tokens` = tokens processed in training."""

    name: str
    year: int
    paper: str                      # a key of PAPERS
    params: float                   # as published
    n_layer: int                    # blocks (per stack for an encoder-decoder)
    d_model: int
    n_head: int | None              # None: not stated in the paper
    data: str                       # the training corpus, as the paper describes it
    heads_note: str = ""            # which of the paper's configurations, where it has two
    tokens: float | None = None     # training tokens processed (None: not stated)
    tokens_note: str = ""
    compute: float | None = None    # training FLOPs (None: not reported)
    compute_source: str = ""        # a key of PAPERS, when it is not `paper`
    # the sizes the compute figure was computed from, where its source used other ones
    compute_params: float | None = None
    compute_tokens: float | None = None


MODELS = [
    Model("BERT-Large", 2018, "BERT", 340e6, 24, 1024, 16,
          "BooksCorpus (800M words) + English Wikipedia (2,500M words)",
          tokens=900_000 * 256 * 128 + 100_000 * 256 * 512,
          tokens_note="derived from Appendix A.2: 1M steps of 256 sequences, 90% of them of 128 "
                      "tokens and the last 10% of 512 (the paper's own '128,000 tokens/batch' "
                      "counts every step at 512), padding included",
          compute=5.33e20, compute_source="GPT-3", compute_params=355e6, compute_tokens=250e9),
    Model("GPT-2", 2019, "GPT-2", 1542e6, 48, 1600, None,
          "WebText, 40 GB of text from 8M web pages"),
    Model("XLNet-Large", 2019, "XLNet", 340e6, 24, 1024, 16,
          "five corpora, 32.89B subword pieces in all",
          tokens=500_000 * 8192 * 512,
          tokens_note="derived from Section 3.1: 500K steps of 8,192 sequences, always of the "
                      "full 512 tokens"),
    Model("RoBERTa-Large", 2019, "RoBERTa", 355e6, 24, 1024, 16,
          "160 GB of text (BERT's corpora + CC-News, OpenWebText, Stories)",
          tokens=500_000 * 8192 * 512,
          tokens_note="500K steps of 8K sequences of 512 tokens",
          compute=4.26e21, compute_source="GPT-3", compute_tokens=2000e9),
    Model("Megatron-LM", 2019, "Megatron-LM", 8.3e9, 72, 3072, 24,
          "174 GB of deduplicated text",
          heads_note="the 8.3B language model of its results (Table 2; Section 5.2: '24 "
                     "attention heads instead of 32'); its scaling study (Table 1) ran an 8.3B "
                     "configuration with 32 heads of 96",
          tokens=300_000 * 512 * 1024,
          tokens_note="derived from Section 4.2: 300K iterations of 512 sequences of 1,024 "
                      "tokens (about 4.4 passes over the corpus)"),
    Model("T5-11B", 2019, "T5", 11e9, 24, 1024, 128,
          "C4, about 750 GB of cleaned Common Crawl",
          tokens=1_000_000 * 2**11 * 512,
          tokens_note="1M steps of 2^11 sequences of 512 tokens (about 1T)",
          compute=3.30e22, compute_source="GPT-3", compute_tokens=1000e9),
    Model("Turing-NLG", 2020, "Turing-NLG", 17e9, 78, 4256, 28,
          "the same kind of data as Megatron-LM's, as the announcement describes it"),
    Model("GPT-3", 2020, "GPT-3", 175e9, 96, 12288, 96,
          "filtered Common Crawl, WebText2, two book corpora, Wikipedia",
          tokens=300e9, tokens_note="300B tokens, stated in the paper",
          compute=3.14e23),
    Model("Gopher", 2021, "Gopher", 280e9, 80, 16384, 128,
          "MassiveText, 10.5 TB of text", tokens=300e9,
          tokens_note="300B tokens, stated in the paper",
          compute=5.76e23, compute_source="Chinchilla"),
    Model("Chinchilla", 2022, "Chinchilla", 70e9, 80, 8192, 64,
          "MassiveText, as Gopher", tokens=1.4e12,
          tokens_note="1.4T tokens, stated in the paper (Table 1)",
          compute=5.76e23),  # Section 4: "the same number of FLOPs" as Gopher (Figure 2)
    Model("PaLM", 2022, "PaLM", 540.35e9, 118, 18432, 48,
          "filtered web pages, books, Wikipedia, news articles, source code and social media "
          "conversations (Section 3)",
          heads_note="48 query heads sharing one key and one value head (multi-query "
                     "attention, Section 2)",
          tokens=780e9, tokens_note="780B tokens, stated in the paper (Section 3)",
          compute=2.56e24),  # Table 22, rematerialisation not counted
    Model("LLaMA-65B", 2023, "LLaMA", 65.2e9, 80, 8192, 64,
          "publicly available data only: English CommonCrawl (67%), C4 (15%), GitHub, "
          "Wikipedia and books (4.5% each), ArXiv (2.5%), StackExchange (2%) (Table 1)",
          tokens=1.4e12, tokens_note="1.4T tokens, stated in the paper (Table 2)"),
]

# Hoffmann et al. (2022), Table 3 (their first approach): the compute-optimal number of training
# tokens D for a model of N parameters (the rows this lecture uses).
CHINCHILLA_OPTIMAL = [  # (N, D)
    (400e6, 8.0e9), (1e9, 20.2e9), (10e9, 205.1e9), (67e9, 1.5e12), (175e9, 3.7e12),
    (280e9, 5.9e12), (1e12, 21.2e12),
]


def by_name(name: str) -> Model:
    """The row called `name`."""
    return next(m for m in MODELS if m.name == name)


def six_nd(params: float, tokens: float) -> float:
    """Training FLOPs by the rule of thumb C = 6 N D."""
    return 6 * params * tokens


def compute_ratio(model: Model) -> float | None:
    """Reported compute / 6 N D with the model's own paper's N and D (None if either is
    missing). 1 means the rule holds exactly."""
    if model.compute is None or model.tokens is None:
        return None
    return model.compute / six_nd(model.params, model.tokens)


def source_ratio(model: Model) -> float | None:
    """Reported compute / 6 N D with the N and D its source used (the source's own
    arithmetic, checked)."""
    if model.compute is None or model.tokens is None:
        return None
    n = model.compute_params or model.params
    d = model.compute_tokens or model.tokens
    return model.compute / six_nd(n, d)


def dense_params(n_layer: int, d_model: int, vocab: int = 0, *, d_ff: int | None = None,
                 d_attn: int | None = None, cross: bool = False, extra_dd: int = 0) -> int:
    """Weights of `n_layer` blocks plus a `vocab` x d_model embedding, biases and norms left out.

    d_ff: MLP width (default 4 d_model); d_attn: n_head * d_head, the width of q, k and v
    (default d_model; T5-11B uses 128 heads of 128 on a 1024-wide model). cross: each block
    also has cross-attention (an encoder-decoder's decoder). extra_dd: further d_model x d_model
    matrices per block (1 for the relative-position projection of Transformer-XL-style
    attention). With the defaults this is 12 n_layer d_model^2 + vocab d_model.
    """
    d_ff = 4 * d_model if d_ff is None else d_ff
    d_attn = d_model if d_attn is None else d_attn
    attention = 4 * d_model * d_attn  # q, k, v: d_model -> d_attn; output: d_attn -> d_model
    block = (2 if cross else 1) * attention + 2 * d_model * d_ff + extra_dd * d_model ** 2
    return n_layer * block + vocab * d_model


def block_params_with_biases(d_model: int) -> int:
    """One block with d_ff = 4 d_model, biases and norms included (`toolkit.sizes`): how much
    the biases and norms add to 12 d^2."""
    return attention_params(d_model) + mlp_params(d_model, 4 * d_model) + 4 * d_model


def table_rows() -> list[dict]:
    """The table as dicts, ready to print (None where the paper is silent)."""
    rows = []
    for m in MODELS:
        sources = [m.paper] + ([m.compute_source] if m.compute_source else [])
        rows.append(dict(model=m.name, year=m.year, params=m.params, layers=m.n_layer,
                         d_model=m.d_model, heads=m.n_head, tokens=m.tokens,
                         compute=m.compute, ratio=compute_ratio(m), data=m.data,
                         sources=sources))
    return rows
