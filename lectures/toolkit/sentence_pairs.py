"""Real German-English sentence pairs for translation: the example sentences of the Ding dictionary.

Nothing may be downloaded while a lecture runs, so the pairs come from a pinned package: Debian's
`trans-de-en` (`make lecture-data` installs it) puts Frank Richter's German-English dictionary
(TU Chemnitz, 1995-2023, GPL version 2 or later) in /usr/share/trans/de-en, one entry a line:

    Er neigt zu Übertreibungen. :: He tends to exaggerate.
    Aal {m} | Aale {pl} :: eel | eels

German and English sides are split by ' :: ', an entry's parts by ' | ' (the same number on both
sides) and a part's synonyms by '; '. `load_pairs()` keeps the parts that are whole sentences on
both sides (end in '.', '?' or '!', more than one word), each side's first synonym, with the
dictionary's annotations ({f}, [coll.], (...)) removed. On a machine without Debian's package,
point `DING_DE_EN` at the file `de-en.txt` of Ding's own release.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

DEFAULT_PATH = Path("/usr/share/trans/de-en")
_ANNOTATION = re.compile(r"\s*(\{[^}]*\}|\[[^\]]*\]|\([^)]*\))")
_SENTENCE_END = (".", "?", "!")


class MissingCorpus(FileNotFoundError):
    """The dictionary is not installed where the loader looks."""


def dictionary_path(path: str | Path | None = None) -> Path:
    """The dictionary file: the argument, else $DING_DE_EN, else Debian's path."""
    path = Path(path or os.environ.get("DING_DE_EN") or DEFAULT_PATH)
    if not path.is_file():
        raise MissingCorpus(
            f"The German-English dictionary is not at {path}: install Debian's trans-de-en "
            "(`make lecture-data`, or `sudo apt-get install trans-de-en`), or set DING_DE_EN "
            "to the de-en.txt file of the Ding dictionary (dict.tu-chemnitz.de).")
    return path


def clean(part: str) -> str:
    """A part's first synonym without the dictionary's annotations."""
    first = part.split("; ")[0]
    return re.sub(r"\s+", " ", _ANNOTATION.sub("", first)).strip()


def is_sentence(text: str) -> bool:
    return text.endswith(_SENTENCE_END) and " " in text and text[0].isupper()


def pairs_of_line(line: str) -> list[tuple[str, str]]:
    """The (German, English) sentence pairs of one dictionary line; none for other entries."""
    if line.startswith("#") or " :: " not in line:
        return []
    german, english = line.rstrip("\n").split(" :: ", 1)
    german_parts, english_parts = german.split(" | "), english.split(" | ")
    if len(german_parts) != len(english_parts):
        return []
    found = []
    for de, en in zip(german_parts, english_parts, strict=True):
        de, en = clean(de), clean(en)
        if is_sentence(de) and is_sentence(en):
            found.append((de, en))
    return found


def load_pairs(path: str | Path | None = None, max_chars: int = 40) -> list[tuple[str, str]]:
    """Every sentence pair of at most `max_chars` characters a side, in the dictionary's order,
    each pair once."""
    seen: set[tuple[str, str]] = set()
    pairs = []
    with dictionary_path(path).open(encoding="utf-8") as lines:
        for line in lines:
            for pair in pairs_of_line(line):
                if max(map(len, pair)) <= max_chars and pair not in seen:
                    seen.add(pair)
                    pairs.append(pair)
    return pairs
