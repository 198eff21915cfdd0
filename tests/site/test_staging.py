"""What `make site` stages before Sphinx runs (no kernel, no browser): a site without the worked
solutions, for instructors who publish it during a term, links to no solution and lists none."""

from __future__ import annotations

import nbformat

from book import build


def _tiny_lecture(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A lecture")])
    path = tmp_path / "01_select_to_attention.ipynb"
    nbformat.write(nb, path)
    return path


def test_a_site_without_solutions_names_none(tmp_path):
    staged = build.stage([_tiny_lecture(tmp_path)], [], to=tmp_path / "stage")
    toc = (staged / "_toc.yml").read_text()
    index = (staged / "index.md").read_text()
    assert "solutions/" not in toc and build.SOLUTIONS_PART not in toc
    assert "lectures/01_select_to_attention" in toc
    assert "solutions/" not in index, "the contents page still links a worked solution"
    assert "`soft_select`" in index, "the assignment's name should stay, as plain text"
    assert not (staged / "solutions").exists()


def test_a_full_site_keeps_its_solutions_behind_toggles(tmp_path):
    source = build.assignments()[0]
    staged = build.stage([_tiny_lecture(tmp_path)], [source], to=tmp_path / "stage")
    assert "solutions/" in (staged / "_toc.yml").read_text()
    nb = nbformat.read(staged / "solutions" / source.name, as_version=4)
    answers = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert answers, f"{source.name} has no solution cells?"
    for cell in answers:
        if cell.cell_type == "code":
            assert {"worked-answer", "hide-cell"} <= set(cell.metadata["tags"])
            assert cell.metadata["mystnb"]["code_prompt_show"] == build.SHOW_CODE
        else:
            assert cell.source.startswith("::::{admonition} " + build.MODEL_ANSWER)
            assert ":class: dropdown worked-answer" in cell.source
