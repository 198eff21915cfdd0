"""nbformat's notebook schema validators, stored once (`make bytecode`) and handed to nbformat
(grader/startup/notebook_schema.py): they must check exactly as nbformat's own, and anything stored
that
does not fit must leave nbformat compiling its own."""

import copy
import logging

import nbformat
import pytest
from nbformat import validator
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader.startup import notebook_schema


@pytest.fixture
def fresh(monkeypatch):
    """nbformat's cache of validators, empty for the test (it is per process)."""
    monkeypatch.setattr(validator, "validators", {})
    monkeypatch.delenv("NBFORMAT_VALIDATOR", raising=False)
    return validator.validators


def notebooks() -> dict[str, dict]:
    """A valid notebook and notebooks each broken in one way, as plain JSON."""
    good = new_notebook(cells=[new_markdown_cell("# x", id="words"),
                               new_code_cell("1 + 1", id="code")])
    good = nbformat.from_dict(copy.deepcopy(good))
    cases = {"valid": good}
    no_source = copy.deepcopy(good)
    del no_source.cells[1]["source"]
    cases["a code cell without source"] = no_source
    extra = copy.deepcopy(good)
    extra["surprise"] = 1
    cases["a property the schema does not allow"] = extra
    bad_type = copy.deepcopy(good)
    bad_type.cells[0]["cell_type"] = "picture"
    cases["an unknown cell type"] = bad_type
    wrong = copy.deepcopy(good)
    wrong.cells[1]["execution_count"] = "three"
    cases["an execution count that is text"] = wrong
    return cases


def verdicts(relaxed: bool) -> dict[str, str]:
    """Each case's verdict from whatever validator nbformat now hands out: 'ok' or the error."""
    out = {}
    for name, nb in notebooks().items():
        try:
            nbformat.validate(copy.deepcopy(nb), relax_add_props=relaxed)
            out[name] = "ok"
        except nbformat.ValidationError as e:
            out[name] = str(e.message)
    return out


@pytest.mark.parametrize("relaxed", [False, True])
def test_stored_validators_give_nbformats_own_verdicts(fresh, tmp_path, relaxed):
    own = verdicts(relaxed)  # nbformat compiles its own into the (fresh) cache
    assert own["valid"] == "ok" and sum(v != "ok" for v in own.values()) >= 3
    fresh.clear()
    notebook_schema.store(tmp_path)
    assert notebook_schema.install(tmp_path) == 2
    stored = validator.validators[notebook_schema._key(relaxed)]
    assert stored._validator.__code__.co_filename.startswith("<nbformat-schema-")
    assert verdicts(relaxed) == own


def test_the_relaxed_one_lets_an_extra_property_through_and_the_strict_one_does_not(
        fresh, tmp_path):
    notebook_schema.store(tmp_path)
    notebook_schema.install(tmp_path)
    assert verdicts(relaxed=True)["a property the schema does not allow"] == "ok"
    assert verdicts(relaxed=False)["a property the schema does not allow"] != "ok"


def test_nothing_stored_leaves_nbformat_compiling_its_own(fresh, tmp_path):
    assert notebook_schema.install(tmp_path) == 0
    assert fresh == {}
    assert verdicts(relaxed=False)["a code cell without source"] != "ok"
    assert not validator.validators[("fastjsonschema", 4, nbformat.v4.nbformat_minor, False)] \
        ._validator.__code__.co_filename.startswith("<nbformat-schema-")


def test_a_file_that_cannot_be_loaded_is_passed_over_by_name(fresh, tmp_path, caplog):
    for path in notebook_schema.store(tmp_path):
        path.write_bytes(b"not marshalled code")
    with caplog.at_level(logging.WARNING, logger="grader.startup.notebook_schema"):
        assert notebook_schema.install(tmp_path) == 0
    assert "nbformat-schema-" in caplog.text and "nbformat compiles its own" in caplog.text
    assert verdicts(relaxed=False)["valid"] == "ok"


def test_another_schema_or_fastjsonschema_finds_no_file(tmp_path, monkeypatch):
    import fastjsonschema

    schema = notebook_schema._schema(relaxed=False)
    path = notebook_schema.path_for(schema, tmp_path)
    changed = copy.deepcopy(schema)
    changed["description"] = "another version"
    assert notebook_schema.path_for(changed, tmp_path) != path
    monkeypatch.setattr(fastjsonschema, "VERSION", "0.0.1")
    assert notebook_schema.path_for(schema, tmp_path) != path


def test_a_validator_already_made_is_kept(fresh, tmp_path):
    notebook_schema.store(tmp_path)
    assert notebook_schema.install(tmp_path) == 2
    made = dict(fresh)
    assert notebook_schema.install(tmp_path) == 0  # a second run in the same process
    assert fresh == made


def test_nbformat_set_to_check_with_jsonschema_is_left_alone(fresh, tmp_path, monkeypatch):
    notebook_schema.store(tmp_path)
    monkeypatch.setenv("NBFORMAT_VALIDATOR", "jsonschema")
    assert notebook_schema.install(tmp_path) == 0
    assert fresh == {}


def test_a_students_check_reads_the_notebook_with_the_stored_validator(fresh, tmp_path,
                                                                        monkeypatch):
    # `grader check` validates the student's notebook once as it reads it: with the validator
    # `make bytecode` stored (make test runs it first), not one compiled for the check.
    from grader.selfcheck import run as check

    class NoKernel:  # the visible tests' run is not what this test is about
        def __init__(self, nb, **kwargs):
            pass

        def execute(self, **kwargs):
            pass

    monkeypatch.setattr(check, "NotebookClient", NoKernel)
    path = tmp_path / "student.ipynb"
    nbformat.write(notebooks()["valid"], path)
    fresh.clear()  # (writing it validated it)
    check.run_visible_tests(path)
    strict = validator.validators[notebook_schema._key(relaxed=False)]
    assert strict._validator.__code__.co_filename.startswith("<nbformat-schema-")
