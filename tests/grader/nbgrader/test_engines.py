"""Gradebooks opened during a grading run share one engine, its table check (and listing) and
its connections."""

from __future__ import annotations

import nbgrader.api
import pytest
import sqlalchemy
from nbgrader.api import Gradebook
from sqlalchemy import MetaData, event

from grader.nbgrader.config import setup_process
from grader.nbgrader.patches import shared_engines


def test_gradebooks_of_a_run_share_one_engine_one_table_check_and_their_connections(
        tmp_path, monkeypatch):
    setup_process()  # nbgrader runs `alembic` when it creates a gradebook
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    checks, connects, engines, listings = [], [], set(), []
    check = MetaData.create_all

    def counted(self, bind, **kwargs):
        checks.append(bind)
        return check(self, bind=bind, **kwargs)

    monkeypatch.setattr(MetaData, "create_all", counted)
    with shared_engines():
        with Gradebook(url, "course") as gb:
            gb.add_student("ada")
            event.listen(gb.engine, "connect", lambda *args: connects.append(args))
            event.listen(gb.engine, "before_cursor_execute", lambda *args: listings.append(
                args[2]) if "sqlite_master" in args[2] else None)
        for _ in range(5):
            with Gradebook(url, "course") as gb:
                engines.add(gb.engine)
                assert gb.find_student("ada").id == "ada"  # what an earlier one wrote
    assert len(engines) == 1 and len(checks) == 1, (len(engines), len(checks))
    assert not connects, f"{len(connects)} new connections for five openings"
    # listed until there are tables: the first opening made them, the second lists them
    assert len(listings) == 1, f"the tables listed {len(listings)} times for five openings"
    # The run over, nbgrader is as it was: each opening makes its own engine and checks again.
    assert nbgrader.api.create_engine is sqlalchemy.create_engine
    assert nbgrader.api.inspect is sqlalchemy.inspect
    assert "create_all" not in vars(nbgrader.api.Base.metadata)
    with Gradebook(url, "course") as gb:
        assert gb.engine not in engines
    assert len(checks) == 2


def test_a_run_checks_each_course_once_and_makes_a_missing_one(tmp_path):
    setup_process()
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    queries = []
    with shared_engines():
        with Gradebook(url, "course") as gb:
            gb.add_student("ada")
            event.listen(gb.engine, "before_cursor_execute", lambda *args: queries.append(
                args[2]) if "FROM course" in args[2] else None)
        for _ in range(5):
            with Gradebook(url, "course") as gb:
                assert gb.find_student("ada").id == "ada"
        with Gradebook(url, "other") as gb:  # another course: checked, and made
            assert [c.id for c in gb.db.query(nbgrader.api.Course).order_by("id")] == [
                "course", "other"]
        with Gradebook(url, "other"):
            pass
    assert len(queries) == 2, f"the course table asked {len(queries)} times: {queries}"
    # The run over, nbgrader's own check is back.
    assert Gradebook.check_course.__qualname__ == "Gradebook.check_course"


def _stamps(tmp_path, names) -> list[str]:
    from sqlalchemy import text

    stamps = []
    for name in names:
        with Gradebook(f"sqlite:///{tmp_path / name}.db", "course") as gb:
            stamps.append(gb.db.execute(text("SELECT version_num FROM alembic_version"))
                          .scalar_one())
    return stamps


@pytest.mark.parametrize("heads", [["f00dcafe1234"], ["f00dcafe1234", "0ddba11"]])
def test_a_process_asks_for_nbgraders_migration_head_once(tmp_path, monkeypatch, heads):
    # nbgrader stamps each new gradebook with its migrations' head, which it gets by running
    # the `alembic` command (nbgraders_way here); the grader asks alembic's Python API, once a
    # process, and nbgrader's way only where that finds more than one head.
    import grader.nbgrader.patches as ours

    asked, listed = [], []

    def nbgraders_way():
        asked.append(1)
        return "abad1dea"

    def alembics_api():
        listed.append(1)
        return heads

    monkeypatch.setattr(nbgrader.api, "get_alembic_version", nbgraders_way)
    monkeypatch.setattr(ours, "alembic_heads", alembics_api)
    ours.remember_alembic_head()
    ours.remember_alembic_head()  # a second call does not wrap it again
    stamps = _stamps(tmp_path, ["a", "b"])
    assert stamps == [heads[0] if len(heads) == 1 else "abad1dea"] * 2
    assert len(listed) == 1, f"asked alembic {len(listed)} times for two new gradebooks"
    assert len(asked) == (0 if len(heads) == 1 else 1)


@pytest.mark.slow  # runs the `alembic` command: seconds
def test_alembics_python_api_gives_the_head_nbgrader_asks_its_command_for():
    import subprocess
    import sys

    from grader.nbgrader.patches import alembic_heads

    done = subprocess.run([sys.executable, "-c",
                           "from grader.nbgrader.config import setup_process; "
                           "setup_process(); import nbgrader.api; "
                           "print(nbgrader.api.get_alembic_version())"],
                          capture_output=True, text=True, check=True)
    assert alembic_heads() == [done.stdout.strip()], (alembic_heads(), done.stdout)
