"""Character-level translation data and scores: ids round-trip, batches are shifted right, the
split is disjoint and repeatable, and the scores are sacrebleu's."""

import sacrebleu
import torch

from lectures.toolkit.char_translation import (
    BOS,
    EOS,
    PAD,
    Alphabet,
    batches,
    collate,
    copy_baseline,
    nearest_baseline,
    normalise,
    scores,
    split,
    translate,
)

PAIRS = [("Das geht.", "That works."), ("Er kommt morgen.", "He comes tomorrow."),
         ("Wie nett von Ihnen!", "How kind of you!"), ("Ich bin müde.", "I'm tired."),
         ("Wände haben Ohren.", "Walls have ears."), ("Das ist gut.", "That's good."),
         ("Sie kommt morgen.", "She comes tomorrow."), ("Halt den Mund!", "Shut up!")]


def test_alphabet_round_trip_and_specials_first():
    alphabet = Alphabet.from_pairs(PAIRS)
    assert alphabet.itos[:3] == ["<pad>", "<bos>", "<eos>"] and (PAD, BOS, EOS) == (0, 1, 2)
    for de, en in PAIRS:
        assert alphabet.decode(alphabet.encode(de)) == de
        assert alphabet.decode([BOS, *alphabet.encode(en), EOS, PAD, *alphabet.encode("Das")]) == en
    assert "ü" in alphabet.stoi and len(alphabet) == 3 + len(set("".join(sum(PAIRS, ()))))


def test_normalise_gives_one_apostrophe():
    assert normalise("It’s “so” – well…") == "It's \"so\" - well..."


def test_batch_is_padded_and_shifted_right():
    alphabet = Alphabet.from_pairs(PAIRS)
    batch = collate(PAIRS[:3], alphabet)
    assert batch.src.shape == (3, 19) and batch.tgt_out.shape == (3, 19)  # longest + <eos>
    assert batch.src_mask.sum(-1).tolist() == [9, 16, 19]
    assert (batch.src[~batch.src_mask] == PAD).all()
    for b, (de, en) in enumerate(PAIRS[:3]):
        assert alphabet.decode(batch.src[b]) == de
        T = len(en)
        assert batch.tgt_out[b, :T].tolist() == alphabet.encode(en)
        assert batch.tgt_out[b, T] == EOS and (batch.tgt_out[b, T + 1:] == PAD).all()
        assert batch.tgt_in[b, 0] == BOS
        assert batch.tgt_in[b, 1: T + 1].tolist() == batch.tgt_out[b, :T].tolist()
        assert (batch.tgt_in[b] != EOS).all()


def test_batches_cover_every_pair_once_and_repeat():
    alphabet = Alphabet.from_pairs(PAIRS)
    one, two = batches(PAIRS, alphabet, 3, seed=0), batches(PAIRS, alphabet, 3, seed=0)
    assert [len(b.src) for b in one] == [3, 3, 2]
    assert all(torch.equal(a.src, b.src) for a, b in zip(one, two, strict=True))
    seen = sorted(alphabet.decode(row) for b in one for row in b.src)
    assert seen == sorted(de for de, _ in PAIRS)


def test_split_is_disjoint_deterministic_and_about_the_fraction():
    pairs = [(f"Satz Nummer {i}.", f"Sentence number {i}.") for i in range(2000)]
    pairs += [("Satz Nummer 7.", "Sentence seven.")]  # the same German, another English
    train, test = split(pairs)
    assert (train, test) == split(list(pairs))
    assert not {de for de, _ in train} & {de for de, _ in test}
    assert len(train) + len(test) == len(pairs)
    assert 0.07 < len(test) / len(pairs) < 0.13
    assert split(pairs, held_out=0.3)[1] != test


def test_chrf_of_perfect_outputs_is_100_and_of_the_copy_baseline_is_sacrebleus():
    references = [en for _, en in PAIRS]
    perfect = scores(references, references)
    assert perfect["chrF"] == 100.0 and round(perfect["BLEU"], 6) == 100.0
    copied = copy_baseline(PAIRS)
    assert copied == [de for de, _ in PAIRS]
    got = scores(copied, references)
    assert got["chrF"] == sacrebleu.corpus_chrf(copied, [references]).score
    assert got["BLEU"] == sacrebleu.corpus_bleu(copied, [references]).score
    assert 0 < got["chrF"] < 50


def test_nearest_baseline_finds_the_most_similar_german():
    train = PAIRS[1:]
    test = [("Er kommt morgen!", "He comes tomorrow!"), ("Das ist gut!", "That's good!")]
    assert nearest_baseline(train, test) == ["He comes tomorrow.", "That's good."]


def test_translate_decodes_greedy_outputs_and_cuts_the_weights():
    alphabet = Alphabet.from_pairs(PAIRS)

    class Echo:
        # writes its source back, then <eos>; all attention on the character it copies
        def eval(self):
            return self

        def greedy(self, src, src_mask, max_len):
            B, S = src.shape
            tokens = torch.cat([src, torch.full((B, 1), PAD)], dim=1)[:, :max_len]
            tokens[torch.arange(B), src_mask.sum(-1).clamp(max=max_len - 1)] = EOS
            att = torch.eye(max_len, S).expand(B, max_len, S)
            return tokens, att

    sources = [de for de, _ in PAIRS]
    texts, weights = translate(Echo(), sources, alphabet, max_len=25, batch_size=3)
    assert texts == sources
    assert [w.shape for w in weights] == [(len(s) + 1, len(s)) for s in sources]
