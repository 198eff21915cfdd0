"""One SQLAlchemy engine per gradebook for a whole grading run.

nbgrader opens the gradebook about twenty times for each notebook it records, and each opening costs
more than the query it is for: a new engine (whose cache of compiled SQL starts empty), a listing of
the database's tables (to know whether it is new), a check of every table (`create_all`), and on
closing, `dispose()`, which closes the connections, so the next opening connects again. Within
`shared_engines()`, nbgrader's gradebooks reuse one engine per database URL, its tables are listed
until they exist and checked once, and its connections stay in its pool until the run ends; each
gradebook still closes its own session. Its course row is checked (found, or made) once per course:
nbgrader checks it at every opening, a query and a commit that are nearly all of an opening's cost,
some eight openings a recorded notebook.
"""

from __future__ import annotations

import contextlib


def _keep_connections(close: bool = True) -> None:
    """A shared engine's dispose() during the run: the pool stays for the next gradebook."""


class _Tables:
    """What nbgrader asks an inspector for when it opens a gradebook: the table names."""

    def __init__(self, names: list[str]):
        self.names = names

    def get_table_names(self, *args, **kwargs) -> list[str]:
        return list(self.names)


@contextlib.contextmanager
def shared_engines():
    import nbgrader.api
    from sqlalchemy import MetaData

    create, metadata = nbgrader.api.create_engine, nbgrader.api.Base.metadata
    inspect, check_course = nbgrader.api.inspect, nbgrader.api.Gradebook.check_course
    engines, checked, courses = {}, set(), set()
    tables = {}  # shared engine -> its tables, once there are some (a run never drops one)

    def create_engine(url, **kwargs):
        key = (str(url), tuple(sorted(kwargs.items())))
        if key not in engines:
            engines[key] = create(url, **kwargs)
            engines[key].dispose = _keep_connections
        return engines[key]

    def create_all(bind, **kwargs):
        if bind not in checked:
            MetaData.create_all(metadata, bind=bind, **kwargs)
            checked.add(bind)

    def inspect_tables(engine):
        if engine in tables:
            return _Tables(tables[engine])
        names = inspect(engine).get_table_names()
        if names and engine in engines.values():
            tables[engine] = names
        return _Tables(names)

    def check_course_once(gradebook, course_id="default_course", **kwargs):
        """nbgrader's check, the first time a shared engine's gradebook asks for a course; later
        openings skip it (its one caller, Gradebook.__init__, discards the row it returns): a
        run deletes no course."""
        key = (gradebook.engine, course_id)
        if key in courses and not kwargs:
            return None
        course = check_course(gradebook, course_id, **kwargs)
        if gradebook.engine in engines.values():
            courses.add(key)
        return course

    nbgrader.api.create_engine, metadata.create_all = create_engine, create_all
    nbgrader.api.inspect = inspect_tables
    nbgrader.api.Gradebook.check_course = check_course_once
    try:
        yield
    finally:
        nbgrader.api.create_engine, nbgrader.api.inspect = create, inspect
        nbgrader.api.Gradebook.check_course = check_course
        del metadata.create_all
        for engine in engines.values():
            del engine.dispose
            engine.dispose()
