"""The data the notebooks read at grading time, where the grader's environment points
($PYTHON_DOCS_SOURCES: tiny_gpt's text, grader/sandbox/data.py): bound read-only in the sandbox
at the same path, readable under Landlock, and the variable passed on to the student's process,
while the folder around it stays out of sight."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest

from grader.judge.remote import Link
from grader.pipeline.autograde import autograde
from grader.sandbox import data, launcher, namespaces
from grader.sandbox.session import Session
from grader.submission import Limits
from tests.support.classes import released_class, write_assignment
from tests.support.notebooks import grade_cell, nbgrader_cell, nbgrader_notebook, solution_cell

TEXT = "Whetting Your Appetite\n======================\n\nIf you do much work on computers.\n"


@pytest.fixture
def docs(tmp_path, monkeypatch):
    """A `_sources` folder of the documentation under tmp, named by $PYTHON_DOCS_SOURCES, with a
    file beside it that the sandbox must not show; the sandbox's server started afresh (one
    started before holds the environment and the binds it was started with)."""
    sources = tmp_path / "python-docs" / "_sources"
    (sources / "tutorial").mkdir(parents=True)
    (sources / "tutorial" / "appetite.rst.txt").write_text(TEXT)
    (tmp_path / "python-docs" / "beside.txt").write_text("not data")
    monkeypatch.setenv(data.PYTHON_DOCS_SOURCES, str(sources))
    monkeypatch.setattr(launcher, "_zygotes", {})
    yield sources
    for server in launcher._zygotes.values():
        server.stop()


def test_the_folder_is_read_only_in_the_sandbox_and_the_variable_reaches_it(docs):
    if namespaces.probe() is not None:
        pytest.skip("no sandbox on this machine")
    assert namespaces.data_paths() == [str(docs)]
    assert namespaces.environment()[data.PYTHON_DOCS_SOURCES] == str(docs)
    s = Session({}, Limits(cell_timeout=10, notebook_timeout=60))
    s.start()
    try:
        assert s.confined.sandboxed
        reply = s.request({"op": "run", "source": f"""
import os
from grader.sandbox.data import python_tutorial

def tried(call):
    try:
        return call()
    except OSError as e:
        return type(e).__name__

seen = {{"variable": os.environ.get("PYTHON_DOCS_SOURCES"),
        "text": (python_tutorial() / "appetite.rst.txt").read_text(),
        "write": tried(lambda: open(python_tutorial() / "appetite.rst.txt", "a").write("x")),
        "new file": tried(lambda: open(python_tutorial() / "new.txt", "w").write("x")),
        "beside": tried(lambda: open({str(docs.parent / "beside.txt")!r}).read())}}
"""})
        assert reply["error"] is None, reply["error"]
        seen = Link(s).get("seen")
    finally:
        s.close()
    assert seen["variable"] == str(docs)
    assert seen["text"] == TEXT
    refused = ("OSError", "PermissionError")  # a read-only bind, or Landlock
    assert seen["write"] in refused and seen["new file"] in refused, seen
    assert seen["beside"] in ("FileNotFoundError", "PermissionError"), seen
    assert (docs / "tutorial" / "appetite.rst.txt").read_text() == TEXT


def test_a_folder_that_is_not_the_documentation_is_not_bound(tmp_path, monkeypatch):
    """What the variable names is bound only where it holds tutorial/, and never a folder that
    holds the grader's checkout (the course, the reference solutions); the variable itself is
    passed on all the same."""
    import grader

    monkeypatch.setenv(data.PYTHON_DOCS_SOURCES, str(tmp_path))
    assert data.shown() == {} and namespaces.data_paths() == []
    # passed on as it is, unbound: the notebook misses its data in the sandbox as the grader's
    # side does, rather than reading Debian's copy that the grader's side never saw
    assert namespaces.environment()[data.PYTHON_DOCS_SOURCES] == str(tmp_path)
    checkout = Path(grader.__file__).resolve().parents[1]
    monkeypatch.setenv(data.PYTHON_DOCS_SOURCES, str(checkout))
    assert data.shown() == {}
    monkeypatch.delenv(data.PYTHON_DOCS_SOURCES)
    assert data.shown() == {} and namespaces.data_paths() == []


@pytest.mark.parametrize("folder", ["/tmp", "/dev", "/home", namespaces.SCRATCH])
def test_a_folder_over_the_sandboxs_own_places_is_not_bound(folder, monkeypatch):
    """Bound over /tmp (or a folder holding it, /dev/shm, the scratch folder...), the machine's
    own would show through the sandbox's private one."""
    monkeypatch.setattr(data, "shown", lambda: {data.PYTHON_DOCS_SOURCES: folder})
    assert namespaces.data_folders() == {} and namespaces.data_paths() == []
    assert data.PYTHON_DOCS_SOURCES not in namespaces.environment()
    if shutil.which("bwrap"):
        cmd = namespaces.command(["true"])
        assert not any(cmd[i:i + 3] == ["--ro-bind", folder, folder] for i in range(len(cmd)))


def test_the_tutorials_absence_names_the_path_the_package_and_the_variable(tmp_path,
                                                                            monkeypatch):
    monkeypatch.setenv(data.PYTHON_DOCS_SOURCES, str(tmp_path / "absent"))
    with pytest.raises(FileNotFoundError) as raised:
        data.python_tutorial()
    said = str(raised.value)
    assert str(tmp_path / "absent" / "tutorial") in said
    assert "python3.11-doc" in said and "sudo apt-get install python3.11-doc" in said
    assert "PYTHON_DOCS_SOURCES" in said
    monkeypatch.delenv(data.PYTHON_DOCS_SOURCES)
    assert data.python_docs_sources() == data.DEFAULT_PYTHON_DOCS


def data_notebook():
    """tiny_gpt's shape: an instructor's cell reads the text (in the student's process and on
    the grader's side), the student's function reads the file again when a test calls it."""
    read = nbgrader_cell(nbformat.v4.new_code_cell(
        "from grader.sandbox.data import python_tutorial\n\n"
        "TEXT = (python_tutorial() / 'appetite.rst.txt').read_text()"), "data")
    return nbgrader_notebook([
        read,
        solution_cell("def first_line():\n    ### BEGIN SOLUTION\n"
                      "    return (python_tutorial() / 'appetite.rst.txt').read_text()"
                      ".splitlines()[0]\n    ### END SOLUTION", "first_line"),
        grade_cell("assert first_line() == TEXT.splitlines()[0] == 'Whetting Your Appetite', "
                   "first_line()", "test_first_line", points=1),
    ])


def test_a_notebook_reading_the_folder_is_graded_in_the_sandbox(docs, tmp_path):
    """Through autograde, as an instructor grades: full marks, every cell without an error."""
    if namespaces.probe() is not None:
        pytest.skip("no sandbox on this machine")
    write_assignment(tmp_path / "src", "docs", data_notebook())
    mine = released_class(tmp_path, "docs", source=tmp_path / "src",
                          submissions=tmp_path / "subs")
    nb = nbformat.read(mine.released, as_version=4)
    next(c for c in nb.cells if c.metadata["nbgrader"]["solution"]).source = (
        "def first_line():\n    return (python_tutorial() / 'appetite.rst.txt').read_text()"
        ".splitlines()[0]")
    mine.write("ann", nb)
    [result] = autograde(mine.course, "docs", mine.submissions, workers=1,
                         limits=Limits(cell_timeout=30, notebook_timeout=120))
    graded = nbformat.read(mine.course.autograded / "ann" / "docs" / "docs.ipynb", as_version=4)
    errors = [o for c in graded.cells for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert result.error is None and not errors, json.dumps(errors)[:2000]
    assert result.auto_score == result.auto_max == 1
