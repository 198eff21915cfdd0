"""The German-English sentence pairs: what one dictionary line gives, and the installed file."""

import pytest

from lectures.toolkit.sentence_pairs import (
    DEFAULT_PATH,
    MissingCorpus,
    dictionary_path,
    load_pairs,
    pairs_of_line,
)


def test_a_sentence_pair_is_kept():
    line = "Er neigt zu Übertreibungen. :: He tends to exaggerate.\n"
    assert pairs_of_line(line) == [("Er neigt zu Übertreibungen.", "He tends to exaggerate.")]


def test_annotations_and_further_synonyms_are_removed():
    line = ("Das ist mir Wurst. {ugs.}; Das ist mir egal. :: "
            "I don't care. [coll.]; It's all the same to me.")
    assert pairs_of_line(line) == [("Das ist mir Wurst.", "I don't care.")]


def test_word_entries_and_comments_give_nothing():
    assert pairs_of_line("Aal {m} | Aale {pl} :: eel | eels") == []
    assert pairs_of_line("# Version :: 1.9") == []
    assert pairs_of_line("no separator here.") == []


def test_only_the_parts_that_are_sentences_on_both_sides():
    line = "Hund {m} | Der Hund bellt. :: dog | The dog barks."
    assert pairs_of_line(line) == [("Der Hund bellt.", "The dog barks.")]


def test_unequal_parts_are_dropped():
    line = "Er kommt. | Sie kommt. | Es kommt. :: He comes. | She comes."
    assert pairs_of_line(line) == []


needs_file = pytest.mark.skipif(not DEFAULT_PATH.is_file(), reason="trans-de-en not installed")


@needs_file
def test_the_installed_dictionary_gives_thousands_of_short_sentences():
    pairs = load_pairs(max_chars=40)
    assert len(pairs) >= 3000
    assert len(set(pairs)) == len(pairs)
    for de, en in pairs:
        for side in (de, en):
            assert len(side) <= 40 and side[0].isupper() and " " in side
            assert side.endswith((".", "?", "!"))
            assert "{" not in side and "[" not in side
    shorter = load_pairs(max_chars=25)
    assert 0 < len(shorter) < len(pairs) and set(shorter) <= set(pairs)


def test_a_missing_file_names_the_package(tmp_path, monkeypatch):
    monkeypatch.delenv("DING_DE_EN", raising=False)
    with pytest.raises(MissingCorpus, match="trans-de-en"):
        load_pairs(tmp_path / "absent.txt")
    monkeypatch.setenv("DING_DE_EN", str(tmp_path / "also-absent.txt"))
    with pytest.raises(MissingCorpus, match="trans-de-en"):
        dictionary_path()


def test_the_environment_variable_points_at_another_file(tmp_path, monkeypatch):
    own = tmp_path / "de-en.txt"
    own.write_text("# comment\nDas geht. :: That works.\nAal {m} :: eel\n", encoding="utf-8")
    monkeypatch.setenv("DING_DE_EN", str(own))
    assert load_pairs() == [("Das geht.", "That works.")]
