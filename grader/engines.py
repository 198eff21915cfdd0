"""One SQLAlchemy engine per gradebook for a whole grading run.

nbgrader opens the gradebook about a dozen times for each notebook it records, each time with a
new engine, and an engine's cache of compiled SQL starts empty: the same queries were compiled
again and again (a third of the time spent recording). Within `shared_engines()`, nbgrader's
gradebooks reuse one engine per database URL; each still closes its own session and connections.
"""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def shared_engines():
    import nbgrader.api

    create = nbgrader.api.create_engine
    engines = {}

    def create_engine(url, **kwargs):
        key = (str(url), tuple(sorted(kwargs.items())))
        if key not in engines:
            engines[key] = create(url, **kwargs)
        return engines[key]

    nbgrader.api.create_engine = create_engine
    try:
        yield
    finally:
        nbgrader.api.create_engine = create
        for engine in engines.values():
            engine.dispose()
