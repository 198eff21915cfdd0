"""Real English text for the character-level language models: the prose of Python's documentation.

Nothing may be downloaded while a lecture runs, so the text comes from a pinned package: Debian's
`python3.11-doc` (`make lecture-data` installs it) puts the reStructuredText sources of the whole
Python 3.11 documentation under /usr/share/doc/python3.11/html/_sources/. The documentation is
the Python Software Foundation's, under the PSF License Version 2 (its own `license.rst`, "Terms
and conditions for accessing or otherwise using Python"); its examples are also 0BSD.

`load_python_docs()` keeps the prose and drops what is not English sentences: code blocks and
doctests (indented), directives and their bodies, headings' underlines, tables and comments; it
turns markup such as :func:`len` and ``x`` into plain text and joins each paragraph into one line.
On a machine without Debian's package, point `PYTHON_DOCS_SOURCES` at the `_sources` folder of the
Python 3.11 documentation's HTML download (https://docs.python.org/3.11/download.html).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

DEFAULT_SOURCES = Path("/usr/share/doc/python3.11/html/_sources")
# The parts of the documentation that are mostly prose (the C API's pages are mostly signatures).
SECTIONS = ("tutorial", "library", "reference", "howto", "faq", "using", "whatsnew", "extending")

_ROLE = re.compile(r":[\w:+-]+:`~?!?([^`<]*?)(?:\s*<[^>]*>)?`")        # :func:`~os.path.join`
_PEP = re.compile(r":pep:`(\d+)[^`]*`")
_LINK = re.compile(r"`([^`<]+?)\s*<[^>]*>`_{1,2}")                     # `text <url>`_
_REF = re.compile(r"`([^`]+)`_{1,2}")                                  # `name`_
_LITERAL = re.compile(r"``(.+?)``")
_EMPHASIS = re.compile(r"\*{1,2}([^*\s][^*]*?)\*{1,2}")
_SUBST = re.compile(r"\|([\w-]+)\|")
# Typographic punctuation as ASCII; a paragraph with any other non-ASCII character is left out,
# so that the models' alphabet is printable ASCII.
_TO_ASCII = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                           "\u2013": "-", "\u2014": "--", "\u2026": "...", "\u00a0": " "})
_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+.:_])\1{2,}\s*$")


class MissingCorpus(FileNotFoundError):
    """The documentation's sources are not installed where the loader looks."""


def sources_dir(sources: str | Path | None = None) -> Path:
    """The `_sources` folder: the argument, else $PYTHON_DOCS_SOURCES, else Debian's path."""
    path = Path(sources or os.environ.get("PYTHON_DOCS_SOURCES") or DEFAULT_SOURCES)
    if not (path / "tutorial").is_dir():
        raise MissingCorpus(
            f"The Python documentation's sources are not in {path}: install Debian's "
            "python3.11-doc (`make lecture-data`, or `sudo apt-get install python3.11-doc`), or "
            "set PYTHON_DOCS_SOURCES to the _sources folder of the Python 3.11 documentation "
            "(docs.python.org/3.11/download.html, 'HTML' archive).")
    return path


def plain(line: str) -> str:
    """One line of reStructuredText with its inline markup turned into plain text."""
    line = _PEP.sub(r"PEP \1", line)
    line = _ROLE.sub(r"\1", line)
    line = _LINK.sub(r"\1", line)
    line = _REF.sub(r"\1", line)
    line = _LITERAL.sub(r"\1", line)
    line = _EMPHASIS.sub(r"\1", line)
    line = _SUBST.sub(r"\1", line)
    return line


# Directives whose bodies are prose (a function's description, a note); every other directive's
# body (code, tables, indexes, images, comments) is skipped.
PROSE_DIRECTIVES = {
    "function", "method", "class", "attribute", "data", "exception", "decorator", "classmethod",
    "staticmethod", "abstractmethod", "coroutinefunction", "coroutinemethod", "describe",
    "opcode", "option", "cmdoption", "envvar", "note", "warning", "tip", "important", "caution",
    "seealso", "versionadded", "versionchanged", "deprecated", "impl-detail", "glossary",
}
_DIRECTIVE = re.compile(r"\.\. ([\w:-]+)::")
_BULLET = re.compile(r"([*+-]|#\.|\d+\.|\(?[a-z]\))\s")
_FIELD = re.compile(r":[^:`]+:(\s|$)")


def paragraphs(rst: str) -> list[str]:
    """The prose paragraphs of one reStructuredText file, each joined into one plain line.

    Kept: paragraphs at any indentation outside code, including the bodies of describing
    directives (a function's text under `.. function::`), list items and notes. Skipped: the
    literal block after a paragraph ending in '::', doctests, other directives' bodies
    (code, tables, images, indexes), comments, headings and their underlines, tables and
    option lines. A paragraph is kept when it has at least 40 characters and ends like a
    sentence ('.', '?', '!' or ':').
    """
    out: list[str] = []
    current: list[str] = []
    indent_of_current = 0

    def flush() -> None:
        text = " ".join(current).strip()
        current.clear()
        if text.endswith("::"):                     # "for example::" introduces code
            text = text[:-1]
        text = re.sub(r"\s+", " ", plain(text)).translate(_TO_ASCII)
        if len(text) >= 40 and text[-1] in ".?!:" and text.isascii():
            out.append(text)

    skip_deeper_than: int | None = None             # skipping a block indented beyond this
    in_doctest = False
    lines = rst.splitlines()
    for i, line in enumerate(lines):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if skip_deeper_than is not None:
            if not stripped or indent > skip_deeper_than:
                continue
            skip_deeper_than = None
        if not stripped:
            flush()
            in_doctest = False
            continue
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if stripped.startswith(".. "):
            flush()
            directive = _DIRECTIVE.match(stripped)
            if not (directive and directive.group(1).split(":")[-1] in PROSE_DIRECTIVES):
                skip_deeper_than = indent               # a comment, label or code directive
            continue                                     # the directive's own line: a signature
        if in_doctest or stripped.startswith(">>>"):
            flush()
            in_doctest = True
            continue
        if (_UNDERLINE.match(stripped) or stripped.startswith(("+-", "+=", "|"))
                or _FIELD.match(stripped)
                or (_UNDERLINE.match(nxt) and len(nxt) >= len(stripped) * 0.5)):
            flush()                                     # underline, table, option, heading
            continue
        continuing = current and not _BULLET.match(stripped) and (
            indent == indent_of_current
            or (indent > indent_of_current and _BULLET.match(current[0])))
        if not continuing:
            flush()
            indent_of_current = indent
        current.append(stripped)
        if stripped.endswith("::"):
            flush()
            skip_deeper_than = indent                   # the literal block that follows
    flush()
    return out


def load_python_docs(sources: str | Path | None = None,
                     sections: tuple[str, ...] = SECTIONS) -> str:
    """The documentation's prose, one paragraph a line, files in a fixed (sorted) order.

    About 5 MB of printable ASCII from the 3.11 documentation's default sections.
    """
    root = sources_dir(sources)
    texts = []
    for section in sections:
        for path in sorted((root / section).rglob("*.rst.txt")):
            texts.extend(paragraphs(path.read_text(encoding="utf-8")))
    return "\n".join(texts) + "\n"
