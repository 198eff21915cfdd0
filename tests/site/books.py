"""Small books built as `make site` builds the course's: for tests that need one page fast."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat

from book import build


def one_page_book(root: Path, page: str, index_md: str, nb) -> Path:
    """A book of an index page and the notebook `nb` as `page`, with the course's _config.yml,
    built by Jupyter Book (Sphinx warnings as errors); returns the built site's folder."""
    src = root / "src"
    src.mkdir()
    shutil.copy2(build.BOOK / "_config.yml", src / "_config.yml")
    (src / "_toc.yml").write_text(f"format: jb-book\nroot: index\nchapters:\n  - file: {page}\n")
    (src / "index.md").write_text(index_md)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nbformat.write(nb, src / f"{page}.ipynb")
    return build.sphinx(src, out=root / "site", work=root / "work")
