"""What the site tests share: the site, built once a session, and a browser with no network.

`site` is `make site` (book/build.py) run once a session on the lectures tests/conftest.py
executed. `offline_page` opens a page of a built site in Debian's headless chromium (launched
as in tests/browser/conftest.py, through Playwright, which never downloads a browser), served
from a local HTTP server on loopback, with every other request aborted and recorded: a page
that works there works with no network at all.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from grader.course import REPO
from tests.support.chromium import CHROMIUM, chromium

# As tests/browser, plus a resolver that finds no host but loopback: a second wall behind the
# route that aborts every request not to the local server.
HOST_RULES = ("--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",)

SITE = REPO / "build" / "site"
LECTURES = sorted((REPO / "lectures").glob("*.ipynb"))


def pytest_collection_modifyitems(items):
    """Tests that use the browser are `browser` (and `slow`, like the whole folder); without
    chromium they skip, as tests/browser's do."""
    here = Path(__file__).parent
    skip = pytest.mark.skip(reason=f"no chromium at {CHROMIUM} (.ci/run installs Debian's "
                            "`chromium`; or set COURSE_CHROMIUM)")
    for item in items:
        if not item.path.is_relative_to(here) or "browser" not in item.fixturenames:
            continue
        item.add_marker(pytest.mark.browser)
        if not CHROMIUM.exists():
            item.add_marker(skip)


@pytest.fixture(scope="session")
def site_build(executed_lectures, run_log) -> subprocess.CompletedProcess:
    """`make site`, after every lecture has been executed into build/lectures/ this session."""
    for lecture in LECTURES:
        executed_lectures(lecture)  # once a session; tests/lectures checks each run
    done = subprocess.run([sys.executable, "book/build.py"], cwd=REPO, capture_output=True,
                          text=True, timeout=1500)
    for lecture in LECTURES:
        if f"  {lecture.name}: executed in" in done.stdout:
            run_log.site_lectures[lecture.stem] += 1
    return done


@pytest.fixture(scope="session")
def site(site_build) -> Path:
    done = site_build
    assert done.returncode == 0, f"make site failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    assert (SITE / "index.html").exists()
    return SITE


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # no access log in the test output
        pass


@pytest.fixture(scope="session")
def serve():
    """serve(folder) -> the URL of a loopback HTTP server on that folder (stopped at the end)."""
    servers = {}

    def start(folder: Path) -> str:
        if folder not in servers:
            handler = functools.partial(_Quiet, directory=str(folder))
            servers[folder] = ThreadingHTTPServer(("127.0.0.1", 0), handler)
            threading.Thread(target=servers[folder].serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{servers[folder].server_address[1]}/"

    yield start
    for server in servers.values():
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")  # like tests/browser's: one Playwright at a time
def browser():
    """One headless chromium (Debian's), with a fresh profile, for a test module."""
    with chromium(HOST_RULES) as context:
        yield context


@dataclass
class Traffic:
    """Every request a page made: those to the local server, and those aborted."""
    origin: str
    local: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # local requests that got no answer
    not_found: list[str] = field(default_factory=list)  # local requests answered 4xx/5xx


@pytest.fixture
def offline_page(browser):
    """offline_page(url) -> (page, traffic): the page loaded with nothing but its own server
    reachable; every other request is aborted and listed in traffic.blocked."""
    pages = []

    def open_page(url: str):
        origin = url[: url.index("/", len("http://"))]
        traffic = Traffic(origin)
        page = browser.new_page()
        pages.append(page)

        def route(r):
            request_url = r.request.url
            if request_url.startswith(origin + "/") or request_url.startswith("data:"):
                traffic.local.append(request_url)
                r.continue_()
            else:
                traffic.blocked.append(request_url)
                r.abort()

        page.route("**/*", route)
        page.on("requestfailed", lambda req: req.url.startswith(origin)
                and traffic.failed.append(req.url))
        page.on("response", lambda resp: resp.status >= 400
                and traffic.not_found.append(f"{resp.status} {resp.url}"))
        page.goto(url, wait_until="load")
        return page, traffic

    yield open_page
    for page in pages:
        page.close()
