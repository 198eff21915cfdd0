"""One SQLAlchemy engine per gradebook for a whole grading run.

nbgrader opens the gradebook about twenty times for each notebook it records, and each opening
costs more than the query it is for: a new engine (whose cache of compiled SQL starts empty),
a check of every table (`create_all`), and on closing, `dispose()`, which closes the
connections, so the next opening connects again. Within `shared_engines()`, nbgrader's
gradebooks reuse one engine per database URL, its tables are checked once, and its connections
stay in its pool until the run ends; each gradebook still closes its own session.
"""

from __future__ import annotations

import contextlib


def _keep_connections(close: bool = True) -> None:
    """A shared engine's dispose() during the run: the pool stays for the next gradebook."""


@contextlib.contextmanager
def shared_engines():
    import nbgrader.api
    from sqlalchemy import MetaData

    create, metadata = nbgrader.api.create_engine, nbgrader.api.Base.metadata
    engines, checked = {}, set()

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

    nbgrader.api.create_engine, metadata.create_all = create_engine, create_all
    try:
        yield
    finally:
        nbgrader.api.create_engine = create
        del metadata.create_all
        for engine in engines.values():
            del engine.dispose
            engine.dispose()
