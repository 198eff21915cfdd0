"""The course text suits the character-level language model of lecture 7."""

from lectures.toolkit.course_text import ATTENTION_TEXT


def test_plain_text_long_enough_for_training_windows():
    assert ATTENTION_TEXT.isascii()
    assert all(c.isprintable() or c == "\n" for c in ATTENTION_TEXT)
    assert len(ATTENTION_TEXT) > 1000  # many distinct 33-character windows to sample
    assert len(set(ATTENTION_TEXT)) < 64  # a small character vocabulary


def test_lecture_prompts_use_only_characters_of_the_text():
    for prompt in ("Attention ", "A block "):  # the prompts lecture 7 generates from
        assert set(prompt) <= set(ATTENTION_TEXT)
