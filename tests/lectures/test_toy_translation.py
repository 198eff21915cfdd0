"""The toy translation data: deterministic, the reordering rule holds, ids round-trip."""

import torch

from lectures.toolkit.toy_translation import (
    ADJECTIVES,
    BOS,
    DETERMINERS,
    DICTIONARY,
    EOS,
    NOUNS,
    PAD,
    SRC_VOCAB,
    TGT_VOCAB,
    batches,
    collate,
    make_pairs,
    split_unseen,
    translate,
)


def test_same_seed_same_pairs_other_seed_other_pairs():
    a, b, c = make_pairs(50, seed=3), make_pairs(50, seed=3), make_pairs(50, seed=4)
    assert [p.src for p in a] == [p.src for p in b]
    assert [p.src for p in a] != [p.src for p in c]


def test_adjectives_follow_their_noun():
    pair = translate("the big red dog sees a cat".split())
    assert pair.tgt == ["ka", "vosh", "grun", "ruta", "vidat", "mo", "miro"]
    assert pair.align == [0, 3, 1, 2, 4, 5, 6]


def test_reordering_rule_on_random_pairs():
    """Every target word is the dictionary entry of the source word it is aligned to; the
    alignment is a permutation; in the target, adjectives come right after a noun or another
    adjective, never before a noun; and everything but the noun phrases keeps its place."""
    inverse = {v: k for k, v in DICTIONARY.items()}
    for p in make_pairs(200, seed=0):
        assert len(p.tgt) == len(p.src) and sorted(p.align) == list(range(len(p.src)))
        assert [DICTIONARY[p.src[i]] for i in p.align] == p.tgt
        back = [inverse[w] for w in p.tgt]
        for prev, word in zip(back, back[1:], strict=False):
            if word in ADJECTIVES:
                assert prev in NOUNS or prev in ADJECTIVES
            if word in NOUNS:
                assert prev in DETERMINERS
        for j, i in enumerate(p.align):
            if p.src[i] not in ADJECTIVES and p.src[i] not in NOUNS:
                assert i == j  # determiners, verbs, "and" stay put


def test_lengths_grow_with_clauses():
    short = make_pairs(100, seed=0, max_clauses=1)
    long = make_pairs(100, seed=0, min_clauses=3, max_clauses=3)
    assert max(len(p.src) for p in short) <= 9 < min(len(p.src) for p in long)


def test_vocab_round_trip_and_specials():
    for p in make_pairs(20, seed=1):
        assert SRC_VOCAB.decode(SRC_VOCAB.encode(p.src)) == p.src
        assert TGT_VOCAB.decode(TGT_VOCAB.encode(p.tgt) + [EOS, PAD, 7]) == p.tgt
    assert SRC_VOCAB.itos[:3] == TGT_VOCAB.itos[:3] == ["<pad>", "<bos>", "<eos>"]
    assert len(SRC_VOCAB) == len(TGT_VOCAB) == len(DICTIONARY) + 3


def test_collate_pads_and_shifts():
    pairs = make_pairs(5, seed=2)
    b = collate(pairs)
    B, S = b.src.shape
    T = max(len(p.tgt) for p in pairs) + 1
    assert (B, S) == (5, max(len(p.src) for p in pairs)) and b.tgt_out.shape == (5, T)
    assert torch.equal(b.src_mask.sum(-1), torch.tensor([len(p.src) for p in pairs]))
    assert (b.src[~b.src_mask] == PAD).all()
    for i, p in enumerate(pairs):
        n = len(p.tgt)
        assert TGT_VOCAB.decode(b.tgt_out[i]) == p.tgt and b.tgt_out[i, n] == EOS
        assert b.tgt_in[i, 0] == BOS and torch.equal(b.tgt_in[i, 1: n + 1], b.tgt_out[i, :n])
    assert not (b.tgt_in == EOS).any()


def test_batches_cover_everything_once_and_are_seeded():
    pairs = make_pairs(23, seed=0)
    bs = batches(pairs, 5, seed=1)
    assert [len(b.src) for b in bs] == [5, 5, 5, 5, 3]
    seen = sorted(tuple(SRC_VOCAB.decode(row)) for b in bs for row in b.src)
    assert seen == sorted(tuple(p.src) for p in pairs)
    again = batches(pairs, 5, seed=1)
    assert all(torch.equal(x.src, y.src) for x, y in zip(bs, again, strict=True))


def test_split_unseen_drops_overlap():
    pairs = make_pairs(30, seed=0, max_clauses=1)
    kept = split_unseen(pairs, pairs[:10])
    assert {tuple(p.src) for p in kept}.isdisjoint({tuple(p.src) for p in pairs[:10]})
    assert len(kept) >= 20 and all(p in pairs for p in kept)
