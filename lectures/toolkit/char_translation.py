"""Character-level German-to-English translation of real sentence pairs, and its scores.

The pairs are the example sentences of the Ding dictionary (`toolkit.sentence_pairs.load_pairs`,
GPL-2+). Here they become a translation task a small model can attempt on a CPU:

- `load`: the pairs of at most `max_chars` characters a side, with one spelling for
  apostrophes, quotes and dashes (the dictionary mixes ’ and ');
- `Alphabet`: the characters of both languages, after <pad>, <bos>, <eos> (the ids of
  `toolkit.toy_translation`, so PAD = 0 everywhere);
- `split`: training and held-out pairs, decided by a checksum of the German sentence, so the
  split is the same on every machine and no German sentence is on both sides;
- `collate` / `batches`: padded `toolkit.toy_translation.Batch`es (src, src_mask, tgt_in,
  tgt_out), the form `toolkit.training.train` and `solutions.Seq2Seq` take;
- `translate`: greedy decoding of a model's `greedy(src, src_mask, max_len)` into strings;
- `scores`: corpus chrF and BLEU from sacrebleu, the library most papers report with;
- two baselines to read the scores against: `copy_baseline` (the German unchanged) and
  `nearest_baseline` (the English of the training sentence whose German shares the most
  character trigrams with the source).
"""

from __future__ import annotations

import math
import random
import zlib
from collections import Counter

import sacrebleu
import torch

from .sentence_pairs import load_pairs
from .toy_translation import BOS, EOS, PAD, SPECIALS, Batch

__all__ = ["BOS", "EOS", "PAD", "Alphabet", "batches", "collate", "copy_baseline",
           "load", "nearest_baseline", "normalise", "scores", "split", "translate"]

# typographic quotes and dashes: the dictionary writes both ’ and ' for the same apostrophe
_PLAIN = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "„": '"', "–": "-", "…": "..."})


def normalise(text: str) -> str:
    """One spelling for apostrophes, quotes, dashes and the ellipsis."""
    return text.translate(_PLAIN)


def load(max_chars: int = 30, path=None) -> list[tuple[str, str]]:
    """The dictionary's sentence pairs of at most `max_chars` characters a side, normalised,
    each pair once, in the dictionary's order."""
    pairs = [(normalise(de), normalise(en)) for de, en in load_pairs(path, max_chars)]
    return list(dict.fromkeys(pairs))


class Alphabet:
    """Characters <-> ids, the three special tokens first."""

    def __init__(self, chars):
        self.itos = list(SPECIALS) + sorted(set(chars))
        self.stoi = {c: i for i, c in enumerate(self.itos)}

    @classmethod
    def from_pairs(cls, pairs: list[tuple[str, str]]) -> Alphabet:
        return cls("".join(de + en for de, en in pairs))

    def __len__(self):
        return len(self.itos)

    def encode(self, text: str) -> list[int]:
        return [self.stoi[c] for c in text]

    def decode(self, ids) -> str:
        """ids -> text, stopping at the first <eos> and skipping <pad> and <bos>."""
        chars = []
        for i in (int(i) for i in ids):
            if i == EOS:
                break
            if i not in (PAD, BOS):
                chars.append(self.itos[i])
        return "".join(chars)


def split(pairs: list[tuple[str, str]], held_out: float = 0.1
          ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(training, held-out) pairs. A pair is held out when the CRC-32 checksum of its German
    sentence falls in the first `held_out` of the range: the same pairs on every run and every
    machine, and a German sentence with two translations lands on one side with both."""
    cut = held_out * 2**32
    train, test = [], []
    for pair in pairs:
        (test if zlib.crc32(pair[0].encode("utf-8")) < cut else train).append(pair)
    return train, test


def collate(pairs: list[tuple[str, str]], alphabet: Alphabet) -> Batch:
    """Pad (German, English) pairs into one Batch: src (B, S) with src_mask (B, S) True at real
    characters; tgt_out (B, T) the English then <eos> then <pad>; tgt_in (B, T) the same shifted
    right by one, starting with <bos> (what teacher forcing feeds the decoder)."""
    S = max(len(de) for de, _ in pairs)
    T = max(len(en) for _, en in pairs) + 1  # + <eos>
    src = torch.full((len(pairs), S), PAD, dtype=torch.long)
    tgt_out = torch.full((len(pairs), T), PAD, dtype=torch.long)
    for b, (de, en) in enumerate(pairs):
        src[b, : len(de)] = torch.tensor(alphabet.encode(de))
        tgt_out[b, : len(en) + 1] = torch.tensor(alphabet.encode(en) + [EOS])
    tgt_in = torch.cat([torch.full((len(pairs), 1), BOS), tgt_out[:, :-1]], dim=1)
    tgt_in[tgt_in == EOS] = PAD  # <eos> is never an input
    return Batch(src, src != PAD, tgt_in, tgt_out)


def batches(pairs: list[tuple[str, str]], alphabet: Alphabet, batch_size: int,
            seed: int = 0) -> list[Batch]:
    """Shuffle the pairs (seeded), then sort them by length, so that a batch holds sentences of
    about the same length (little padding: a recurrent decoder runs as many steps as its longest
    target) and cut them into Batches. `toolkit.training.train` shuffles the batch order."""
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    order.sort(key=lambda i: len(pairs[i][1]))  # stable: ties keep the shuffled order
    return [collate([pairs[i] for i in order[k: k + batch_size]], alphabet)
            for k in range(0, len(order), batch_size)]


@torch.no_grad()
def translate(model, sources: list[str], alphabet: Alphabet, max_len: int,
              batch_size: int = 256) -> tuple[list[str], list[torch.Tensor]]:
    """Greedy translations of German `sources`, with the model's attention while writing each:
    (texts, weights), weights[i] of shape (characters written + 1 for <eos>, len(sources[i])).
    The model's `greedy(src, src_mask, max_len)` returns tokens (B, max_len) and attention
    weights (B, max_len, S), as `solutions.Seq2Seq.greedy` does."""
    model.eval()
    texts, weights = [], []
    for k in range(0, len(sources), batch_size):
        chunk = sources[k: k + batch_size]
        batch = collate([(de, "") for de in chunk], alphabet)
        tokens, att = model.greedy(batch.src, batch.src_mask, max_len)
        for b, de in enumerate(chunk):
            text = alphabet.decode(tokens[b])
            texts.append(text)
            weights.append(att[b, : min(len(text) + 1, max_len), : len(de)])
    return texts, weights


def scores(hypotheses: list[str], references: list[str]) -> dict[str, float]:
    """Corpus chrF (character n-grams up to 6, recall weighted twice as much as precision) and
    corpus BLEU (word n-grams up to 4, with a brevity penalty), both 0 to 100, from sacrebleu's
    defaults, one reference per sentence."""
    return {"chrF": sacrebleu.corpus_chrf(hypotheses, [references]).score,
            "BLEU": sacrebleu.corpus_bleu(hypotheses, [references]).score}


def copy_baseline(test: list[tuple[str, str]]) -> list[str]:
    """The German sentence, unchanged: what shared names, numbers and cognates earn alone."""
    return [de for de, _ in test]


def trigrams(text: str) -> Counter:
    padded = f"  {text.lower()} "
    return Counter(padded[i: i + 3] for i in range(len(padded) - 2))


def nearest_baseline(train: list[tuple[str, str]], test: list[tuple[str, str]]) -> list[str]:
    """For each held-out pair, the English of the training pair whose German is the most
    similar: the cosine of their character-trigram counts (ties: the first in training order).
    A translator that only remembers its training sentences does this well."""
    index: dict[str, list[tuple[int, int]]] = {}  # trigram -> (training pair, count)
    norms = []
    for k, (de, _) in enumerate(train):
        grams = trigrams(de)
        norms.append(math.sqrt(sum(c * c for c in grams.values())))
        for g, c in grams.items():
            index.setdefault(g, []).append((k, c))
    found = []
    for de, _ in test:
        grams = trigrams(de)
        dot = Counter()
        for g, c in grams.items():
            for k, c_train in index.get(g, ()):
                dot[k] += c * c_train
        best = max(dot, key=lambda k: (dot[k] / norms[k], -k)) if dot else 0
        found.append(train[best][1])
    return found
