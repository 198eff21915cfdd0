"""A toy translation task made in code: English-like sentences into an invented language.

Why a toy: a real corpus would need a download and hours of training, and would hide the point.
Here every source word has exactly one translation, so the only thing a model must learn beyond
a dictionary is WHERE to look. The invented target language keeps the clause order of English
(subject, verb, object: attention should run down the diagonal) but puts adjectives after their
noun, as French or Spanish often do ("the big red dog" -> "ka vosh grun ruta": attention
must cross). Sentences are one or more clauses joined by "and", so their length varies from 5 to
about 30 words, enough to show what a fixed-size context vector forgets.

Each example also carries its alignment: the source position every target word translates.

Token ids: 0 = <pad>, 1 = <bos>, 2 = <eos>, then the words. Sources carry no <bos>/<eos>;
targets end with <eos>.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

PAD, BOS, EOS = 0, 1, 2
SPECIALS = ("<pad>", "<bos>", "<eos>")

DETERMINERS = {"the": "ka", "a": "mo"}
ADJECTIVES = {"big": "grun", "small": "tiv", "red": "ruta", "blue": "lazo", "old": "perk",
              "young": "nuvi", "happy": "jolo", "lazy": "snee"}
NOUNS = {"dog": "vosh", "cat": "miro", "bird": "pilu", "fox": "rekka", "horse": "haba",
         "fish": "pesk", "mouse": "tix", "frog": "krob"}
VERBS = {"sees": "vidat", "likes": "amat", "chases": "kurat", "finds": "trovat",
         "bites": "mordat", "helps": "jutat"}
CONJUNCTIONS = {"and": "e"}
DICTIONARY = {**DETERMINERS, **ADJECTIVES, **NOUNS, **VERBS, **CONJUNCTIONS}


class Vocab:
    """Words <-> integer ids, with the three special tokens first (so PAD = 0 everywhere)."""

    def __init__(self, words):
        self.itos = list(SPECIALS) + sorted(set(words))
        self.stoi = {w: i for i, w in enumerate(self.itos)}

    def __len__(self):
        return len(self.itos)

    def encode(self, words) -> list[int]:
        return [self.stoi[w] for w in words]

    def decode(self, ids, strip: bool = True) -> list[str]:
        """ids -> words; with strip, stop at the first <eos> and drop <pad>/<bos>."""
        words = []
        for i in (int(i) for i in ids):
            if strip and i == EOS:
                break
            if strip and i in (PAD, BOS):
                continue
            words.append(self.itos[i])
        return words


SRC_VOCAB = Vocab(DICTIONARY.keys())
TGT_VOCAB = Vocab(DICTIONARY.values())


@dataclass
class Pair:
    """One sentence pair; align[j] is the source position that target word j translates."""

    src: list[str]
    tgt: list[str]
    align: list[int]


def noun_phrase(rng: random.Random, max_adjectives: int = 2) -> list[str]:
    """det adj* noun, with distinct adjectives."""
    n_adj = rng.randint(0, max_adjectives)
    return [rng.choice(list(DETERMINERS)), *rng.sample(list(ADJECTIVES), n_adj),
            rng.choice(list(NOUNS))]


def sentence(rng: random.Random, n_clauses: int, max_adjectives: int = 2) -> list[str]:
    """Clauses "NP verb NP" joined by "and"."""
    words = []
    for c in range(n_clauses):
        if c:
            words.append("and")
        words += [*noun_phrase(rng, max_adjectives), rng.choice(list(VERBS)),
                  *noun_phrase(rng, max_adjectives)]
    return words


def translate(src: list[str]) -> Pair:
    """The reordering rule: in every noun phrase the noun moves right after the determiner, the
    adjectives follow it in their original order; everything else keeps its place. Each word
    is then replaced by its dictionary entry."""
    order, i = [], 0
    while i < len(src):
        if src[i] in DETERMINERS:
            j = i + 1
            while src[j] in ADJECTIVES:
                j += 1  # src[j] is the noun
            order += [i, j, *range(i + 1, j)]
            i = j + 1
        else:
            order.append(i)
            i += 1
    return Pair(src, [DICTIONARY[src[k]] for k in order], order)


def make_pairs(n: int, seed: int, min_clauses: int = 1, max_clauses: int = 3,
               max_adjectives: int = 2) -> list[Pair]:
    """n random sentence pairs, the number of clauses uniform in [min_clauses, max_clauses].
    The same seed always gives the same pairs."""
    rng = random.Random(seed)
    return [translate(sentence(rng, rng.randint(min_clauses, max_clauses), max_adjectives))
            for _ in range(n)]


def split_unseen(pairs: list[Pair], exclude: list[Pair]) -> list[Pair]:
    """The pairs whose source sentence does not occur in `exclude` (a held-out set that the
    model has really never seen)."""
    seen = {tuple(p.src) for p in exclude}
    return [p for p in pairs if tuple(p.src) not in seen]


@dataclass
class Batch:
    """Padded tensors for a list of pairs.

    src (B, S) and src_mask (B, S) (True at real words); tgt_in (B, T) starts with <bos> and is
    what teacher forcing feeds the decoder; tgt_out (B, T) is what it must predict (ends with
    <eos>, then <pad>).
    """

    src: torch.Tensor
    src_mask: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor

    @property
    def inputs(self):
        """What the model takes before tgt_in: model(*batch.inputs, batch.tgt_in)."""
        return self.src, self.src_mask


def collate(pairs: list[Pair]) -> Batch:
    """Pad a list of pairs into one Batch."""
    S = max(len(p.src) for p in pairs)
    T = max(len(p.tgt) for p in pairs) + 1  # + <eos>
    src = torch.full((len(pairs), S), PAD, dtype=torch.long)
    tgt_out = torch.full((len(pairs), T), PAD, dtype=torch.long)
    for b, p in enumerate(pairs):
        src[b, : len(p.src)] = torch.tensor(SRC_VOCAB.encode(p.src))
        tgt_out[b, : len(p.tgt) + 1] = torch.tensor(TGT_VOCAB.encode(p.tgt) + [EOS])
    tgt_in = torch.cat([torch.full((len(pairs), 1), BOS), tgt_out[:, :-1]], dim=1)
    tgt_in[tgt_in == EOS] = PAD  # <eos> is never an input
    return Batch(src, src != PAD, tgt_in, tgt_out)


def batches(pairs: list[Pair], batch_size: int, seed: int | None = None) -> list[Batch]:
    """Cut the pairs into Batches, shuffled first when a seed is given. Sorting each chunk is
    not needed: padding is masked out of both the attention and the loss."""
    order = list(range(len(pairs)))
    if seed is not None:
        random.Random(seed).shuffle(order)
    return [collate([pairs[i] for i in order[k: k + batch_size]])
            for k in range(0, len(order), batch_size)]
