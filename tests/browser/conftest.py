"""A real browser on the course: Debian's chromium, driven by Playwright, on `make lab`'s server.

The session's sample classes (`make demo`, graded once a session: tests/conftest.py), whose
self_attention class these tests use; JupyterLab started on them exactly as `make lab` does
(grader.servers.lab) on a free loopback port; one headless chromium. Playwright never downloads a
browser: it launches /usr/bin/chromium, which .ci/run installs (`apt-get install chromium`).
Without it, these tests skip.

Screenshots of every step go to build/screenshots/ (`make screenshots` copies the ones the
README shows into docs/img/).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.course import REPO
from tests.support.chromium import CHROMIUM
from tests.support.lab import running_lab
from tests.support.pages import browser, page  # noqa: F401 (fixtures: one chromium a module)

WORK = REPO / "build" / "browser"  # below the server's root, so JupyterLab can open it
SHOTS = REPO / "build" / "screenshots"

# JupyterLab user settings for the test server: no news pop-up, no autosave (a lecture is
# never written back), and every cell rendered (no virtual scrolling) so locators see them all.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


def pytest_collection_modifyitems(items):
    """Everything here is `browser` (and `slow`: a JupyterLab server or a kernel), so that
    `make test-fast` (-m "not slow and not browser") leaves it out; without chromium, the tests
    that need it skip."""
    here = Path(__file__).parent
    skip = pytest.mark.skip(reason=f"no chromium at {CHROMIUM} (.ci/run installs Debian's "
                            "`chromium`; or set COURSE_CHROMIUM)")
    for item in items:
        if not item.path.is_relative_to(here):
            continue
        item.add_marker(pytest.mark.browser)
        if item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
        if not CHROMIUM.exists() and {"browser", "page"} & set(item.fixturenames):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def shots() -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS


@pytest.fixture(scope="session")
def sample_class(sample_classes) -> Path:
    """The demo's output (build/demo/'s layout, below the repository): the self_attention
    class released and autograded in course/, its report in reports/. Shared with
    tests/grader/demo/test_demo.py; these tests only add a fetched copy under student/."""
    assert sample_classes.rows["self_attention"], "the demo graded no self_attention class"
    return sample_classes.out


@pytest.fixture(scope="module")  # stopped after its tests: a live server slows later runs
def lab_url(sample_class, tmp_path_factory):
    """JupyterLab as `make lab` starts it (grader.servers.lab), on the sample class, on loopback."""
    with running_lab(sample_class / "course", tmp_path_factory.mktemp("lab"), LAB_SETTINGS,
                     ("--ServerApp.open_browser=False",)) as url:
        yield url
