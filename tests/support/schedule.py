"""How `make test` spreads the suite over its pytest-xdist workers.

Each family in FAMILIES runs whole on one worker (its tests share a server or a build that
another worker would start again), in the order listed, the longest first; every other test
file is a unit of its own, after them, in the order collected. The lectures' execution keeps
both cores busy, so the hub's tests, which mostly wait on servers, come next, to run beside it.

pytest-xdist's own `--dist loadgroup` cannot be used: it names a group by rewriting an item's
`_nodeid`, which pytest 9 no longer reads, so every test would be a unit of its own. The
scheduler here is xdist's LoadScopeScheduling with the unit of work named by `unit` instead,
through xdist's documented hook `pytest_xdist_make_scheduler` (tests/conftest.py).
"""

from __future__ import annotations

FAMILIES = {
    "lectures": ("tests/lectures/test_lectures.py", "tests/site/"),
    "hub": ("tests/hub/",),
    "catalogue": ("tests/catalogue/",),
    "browser": ("tests/browser/",),
    "capstone-experiments": ("tests/solutions/test_written_experiments.py",),
    "startup": ("tests/grader/startup/",),
    "check": ("tests/grader/selfcheck/",),
    # both run `make student-wheel`, which rebuilds build/student-src and build/dist
    "student-wheel": ("tests/grader/test_install.py", "tests/grader/test_student_env.py"),
}


def unit(nodeid: str) -> tuple[int, str]:
    """(rank, name) of the unit of work a test belongs to: its family, or else its file."""
    path = nodeid.split("::", 1)[0]
    for rank, (name, prefixes) in enumerate(FAMILIES.items()):
        if path.startswith(prefixes):
            return rank, name
    return len(FAMILIES), path


def longest_first(items: list) -> None:
    """Sort collected items in place: the families in FAMILIES' order, then every other file
    (stable: collection order within each)."""
    items.sort(key=lambda item: unit(item.nodeid)[0])


def scheduler(config, log):
    """xdist's scheduler that hands each worker whole units (`unit`), in collection order."""
    from xdist.scheduler import LoadScopeScheduling

    class ByUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit(nodeid)[1]

    config.option.loadscopereorder = False  # the order `longest_first` gave
    return ByUnit(config, log)
