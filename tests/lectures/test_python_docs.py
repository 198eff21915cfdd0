"""The Python documentation's prose for the character models (lectures/toolkit/python_docs.py):
what `paragraphs` keeps and drops from reStructuredText, the installed corpus, and the error
when it is missing."""

import pytest

from lectures.toolkit.python_docs import (
    MissingCorpus,
    load_python_docs,
    paragraphs,
    plain,
    sources_dir,
)

PAGE = """\
Reading files
=============

An ordinary paragraph of prose that runs over
two lines and ends like a sentence.

For example, a loop that prints each item::

    for item in items:
        print(item)

After the literal block the prose goes on, long enough to be kept.

   >>> total = sum([1, 2, 3])
   >>> print(total)
   6

.. function:: frobnicate(x, *, strict=False)

   Return the frobnicated value of *x*, as :func:`len` and ``x + 1`` describe it.

.. code-block:: python

   This body is indented like prose but belongs to a code block, so it is dropped.

A paragraph with a caf\u00e9 in it, long enough to be kept if it were ASCII.

Quotes \u201clike these\u201d and a dash \u2013 become plain ASCII in this sentence.
"""


def test_paragraphs_keep_prose_and_drop_code_doctests_and_headings():
    assert paragraphs(PAGE) == [
        "An ordinary paragraph of prose that runs over two lines and ends like a sentence.",
        "For example, a loop that prints each item:",      # '::' becomes ':', the code goes
        "After the literal block the prose goes on, long enough to be kept.",
        "Return the frobnicated value of x, as len and x + 1 describe it.",
        'Quotes "like these" and a dash - become plain ASCII in this sentence.',
    ]


def test_nothing_of_the_dropped_parts_leaks_into_the_text():
    text = " ".join(paragraphs(PAGE))
    for dropped in ("Reading files", "print(item)", "sum([1, 2, 3])", ">>>", "frobnicate(",
                    "code block", "caf", ":func:", "``", "*x*"):
        assert dropped not in text, dropped


def test_markup_roles_become_text():
    assert plain(":func:`len` and :class:`~collections.OrderedDict`") == (
        "len and collections.OrderedDict")
    assert plain("see :pep:`8` and `the tutorial <https://docs.python.org/>`_") == (
        "see PEP 8 and the tutorial")
    assert plain("``x + 1`` is *emphasised* and **strong**") == "x + 1 is emphasised and strong"


def test_short_or_unfinished_paragraphs_are_left_out():
    assert paragraphs("Short, but a sentence.\n\nA long line that does not end like a sentence"
                      " at all, nor ever will\n") == []


def test_the_installed_documentation_is_megabytes_of_printable_ascii():
    text = load_python_docs()
    assert len(text) > 4_000_000
    assert text.isascii()
    assert all(c.isprintable() or c == "\n" for c in set(text))
    assert text.endswith("\n") and "\n\n" not in text       # one paragraph a line


def test_a_folder_of_sources_is_read_in_sorted_order(tmp_path):
    (tmp_path / "tutorial").mkdir()
    (tmp_path / "tutorial" / "b.rst.txt").write_text(
        "The second file's paragraph comes after the first one.\n")
    (tmp_path / "tutorial" / "a.rst.txt").write_text(
        "The first file's paragraph comes before the second one.\n")
    assert load_python_docs(tmp_path, sections=("tutorial",)) == (
        "The first file's paragraph comes before the second one.\n"
        "The second file's paragraph comes after the first one.\n")


def test_a_missing_folder_raises_an_error_naming_the_package(tmp_path, monkeypatch):
    with pytest.raises(MissingCorpus, match="python3.11-doc"):
        load_python_docs(tmp_path / "absent")
    monkeypatch.setenv("PYTHON_DOCS_SOURCES", str(tmp_path))   # a folder without tutorial/
    with pytest.raises(MissingCorpus, match="PYTHON_DOCS_SOURCES"):
        sources_dir()
    assert issubclass(MissingCorpus, FileNotFoundError)
