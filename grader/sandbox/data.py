"""The data the assignments' notebooks read from disk: where it is, and what the sandbox shows.

tiny_gpt trains on the Python tutorial's prose: the reStructuredText sources of the Python 3.11
documentation, from Debian's `python3.11-doc` (/usr/share/doc/python3.11/html/_sources, under
/usr, which the sandbox binds whole), or from the `_sources` folder that $PYTHON_DOCS_SOURCES
names, as for the lectures (lectures/toolkit/python_docs.py). The notebook's cell asks here
rather than reading the environment itself: it runs in every student's process, where the
grader's code scan would flag a cell that reads environment variables; and the student edition
of the `grader` package ships this module, where the lectures' toolkit is not installed.

While a notebook is graded, its cells run in the sandbox (namespaces.py), whose environment and
files are the sandbox's own: `shown()` is what the grader's environment points to that the
sandbox binds, read-only, and passes on by the same variable.
"""

from __future__ import annotations

import os
from pathlib import Path

PYTHON_DOCS_SOURCES = "PYTHON_DOCS_SOURCES"
DEFAULT_PYTHON_DOCS = Path("/usr/share/doc/python3.11/html/_sources")
# The variables naming a data folder, and what such a folder holds (a folder without it is not
# the data: it is neither read nor bound into the sandbox).
FOLDERS = {PYTHON_DOCS_SOURCES: "tutorial"}


def python_docs_sources() -> Path:
    """The `_sources` folder of the Python 3.11 documentation: $PYTHON_DOCS_SOURCES, else
    Debian's."""
    return Path(os.environ.get(PYTHON_DOCS_SOURCES) or DEFAULT_PYTHON_DOCS)


def python_tutorial() -> Path:
    """The tutorial's sources (`tutorial/` of python_docs_sources()); raises FileNotFoundError,
    saying where it looked and what to install or set, when the folder is not there."""
    tutorial = python_docs_sources() / FOLDERS[PYTHON_DOCS_SOURCES]
    if not tutorial.is_dir():
        raise FileNotFoundError(
            f"the Python tutorial's sources are not in {tutorial}: install Debian's "
            "python3.11-doc (`sudo apt-get install python3.11-doc`; `make lecture-data` does "
            f"it), or set {PYTHON_DOCS_SOURCES} to the _sources folder of the Python 3.11 "
            "documentation (docs.python.org/3.11/download.html, 'HTML' archive)")
    return tutorial


def shown() -> dict[str, str]:
    """{variable: folder} for each data folder the grader's environment names (FOLDERS) that is
    there and holds what it should; never a folder that holds the grader itself (its checkout,
    with the reference solutions and the courses under build/). The sandbox binds each one
    read-only and sets the variable to it."""
    import grader

    package = os.path.realpath(Path(grader.__file__).parent)
    found = {}
    for variable, inside in FOLDERS.items():
        value = os.environ.get(variable)
        if not value:
            continue
        folder = os.path.abspath(value)  # the sandbox's working folder is its own
        real = os.path.realpath(folder)
        if os.path.isdir(os.path.join(folder, inside)) and not (
                package == real or package.startswith(real.rstrip("/") + "/")):
            found[variable] = folder
    return found
