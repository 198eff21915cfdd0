"""Pages the grader writes (feedback pages, the class report), read as text or opened in
Debian's chromium (tests/support/chromium.py), and the hub's pages as a user's browser shows them.

Fixtures, for a module to import (`from tests.support.pages import browser, open_page`):
- `browser`: one headless chromium with a fresh profile, for a module's tests;
- `page`: a new page of it, closed after the test;
- `open_page`: a factory, `open_page(path_or_url)` loads a page; each is closed after the test.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from tests.support.chromium import CHROMIUM, CHROMIUM_ARGS, chromium
from tests.support.cli import grader


@pytest.fixture(scope="module")
def browser():
    """One headless chromium (Debian's), with a fresh profile, for a module's tests."""
    with chromium() as context:
        yield context


@pytest.fixture
def page(browser):
    page = browser.new_page()
    yield page
    page.close()


@pytest.fixture
def open_page(browser):
    """`open_page(where)`: a new page of `browser` at WHERE (a file's path, or a URL), loaded."""
    pages = []

    def opened(where: Path | str):
        page = browser.new_page()
        pages.append(page)
        page.goto(where.as_uri() if isinstance(where, Path) else where)
        page.wait_for_load_state("load")
        return page

    yield opened
    for page in pages:
        page.close()


def feedback_pages(folder: Path, students) -> dict[str, str]:
    """{student: their feedback page's HTML} from a `feedback --to FOLDER`."""
    return {s: (folder / f"{s}.html").read_text() for s in students}


def flags_section(course_root: Path, assignment: str, folder: Path) -> str:
    """The class report's "Flags for review" section, the report made through the CLI into
    FOLDER/report.html."""
    page = folder / "report.html"
    run = grader("--course", str(course_root), "report", assignment, "--to", str(page),
                 timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    text = page.read_text()
    return text[text.index("Flags for review"):text.index("<h2>Students")]


# ----- the hub, in chromium: a browser context per user -----------------------------------------

@contextlib.contextmanager
def chromium_browser(required: bool = False, why: str = ""):
    """One headless chromium, a Playwright Browser (a context of its own for each user, each
    logged in apart). Without chromium the test is skipped ("no chromium at PATH" + `why`), or
    failed where `required`."""
    if not CHROMIUM.exists():
        if required:
            pytest.fail(f"no chromium at {CHROMIUM}")
        pytest.skip(f"no chromium at {CHROMIUM}{why}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def expect(locator, timeout_ms: float):
    """Playwright's expect, each wait `timeout_ms` at the most."""
    from playwright.sync_api import expect

    expect.set_options(timeout=timeout_ms)
    return expect(locator)


def hub_login(browser, hub_url: str, user: str, password: str, *, height: int,
              timeout_ms: float):
    """A new browser context for USER (1400 x HEIGHT), at the hub's login page, the form sent;
    the page (the hub is starting their server: wait for it)."""
    context = browser.new_context(viewport={"width": 1400, "height": height})
    context.set_default_timeout(timeout_ms)
    page = context.new_page()
    page.goto(f"{hub_url}/hub/login")
    page.fill("#username_input", user)
    page.fill("#password_input", password)
    page.click("#login_submit")
    return page
