"""The docs' commands, typed into the hub's terminals as each role, in chromium.

The commands are read from the docs themselves: the bash block of docs/hub.md's "The flow of a
term" and README's "A term at a glance" (the instructor's), and the `python -m grader check`
the same block gives a student. Each is typed as written into a JupyterLab terminal (File > New
Launcher > Terminal), and what the terminal shows is read back (xterm's screen-reader rows):
every one finishes with no "command not found", no missing module, no traceback. Around them: the
terminal starts in the folder the file browser shows, `python` is the server's own (the student
edition for a student: no `solutions`), the formgrader opens from the Nbgrader menu inside
JupyterLab and its assignment link opens the folder, and the class report lands where the
instructor's file browser shows it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pytest

from grader.course import REPO
from tests.hub.conftest import LOGS, require_hub, started_hub
from tests.support import pages
from tests.support.pages import chromium_browser, hub_login

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ASSIGNMENT = "self_attention"
TIMEOUT_MS = 90_000
SLOW_MS = 300_000  # a server's first start; autograde of the class
FAILURES = ("command not found", "No module named", "Traceback (most recent call last)",
            "No such file or directory", "error: unrecognized arguments", "usage: ")


def bash_block(path: Path, heading: str) -> str:
    """The first ```bash block after the line holding `heading`."""
    text = path.read_text()
    start = text.index(heading)
    match = re.search(r"```bash\n(.*?)```", text[start:], flags=re.S)
    assert match, f"no bash block after {heading!r} in {path}"
    return match.group(1)


def commands(block: str) -> list[str]:
    """The command lines of a block, as a reader would type them (the comment off)."""
    out = []
    for line in block.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        words = shlex.split(line, comments=True)
        out.append(shlex.join(words))
    return out


def instructor_commands() -> list[str]:
    """The flow of a term, then what README's term at a glance adds to it."""
    flow = commands(bash_block(REPO / "docs" / "hub.md", "## The flow of a term"))
    glance = commands(bash_block(REPO / "README.md", "A term at a glance"))
    return flow + [c for c in glance if c not in flow]


def student_check_command() -> str:
    """The `python -m grader check NOTEBOOK` that the flow of a term gives students."""
    block = bash_block(REPO / "docs" / "hub.md", "## The flow of a term")
    match = re.search(r"`(python -m grader check [A-Z]+)`", block)
    assert match, "docs/hub.md no longer tells students how to check a notebook"
    return match.group(1)


def expect(locator):
    return pages.expect(locator, TIMEOUT_MS)


# The text of the terminal on show: xterm's rows for screen readers (JupyterLab's terminal
# setting screenReaderMode), of the one terminal that is visible (a hidden one's has no lines).
SCREEN = """() => {
  const shown = [...document.querySelectorAll('.jp-Terminal')].find(t => t.checkVisibility());
  const rows = shown && shown.querySelector('.xterm-accessibility-tree');
  return rows ? rows.innerText.replace(/\\u00a0/g, ' ') : '';
}"""


class XTerm:
    """A JupyterLab terminal in a page, typed into as a person does; its screen read back."""

    def __init__(self, page):
        """File > New Launcher > Terminal."""
        self.page = page
        page.get_by_role("menuitem", name="File", exact=True).click()
        page.get_by_role("menuitem", name=re.compile(r"^New Launcher")).click()
        page.locator(".jp-LauncherCard:visible", has_text=re.compile("^Terminal$")).click()
        self.wait_until("s => /[$#] *$/m.test(s.trim())")  # a prompt
        # Each prompt says how the line before it ended, and counts: "[exit 0, #1]" (the line
        # typed here shows "[exit $s, #$n]": only output matches). Nothing is added to the
        # commands themselves.
        self.count = 0
        self.focus()
        self.page.keyboard.type("PROMPT_COMMAND='s=$?; n=$((n+1)); echo \"[exit $s, #$n]\"'\n")
        self.finished()

    def focus(self) -> None:
        self.page.locator(".jp-Terminal:visible .xterm-helper-textarea").focus()

    def screen(self) -> str:
        return self.page.evaluate(SCREEN)

    def wait_until(self, predicate: str, timeout_ms: float = TIMEOUT_MS) -> None:
        """Until predicate(the screen's text), a JavaScript function, holds."""
        self.page.wait_for_function(f"() => ({predicate})(({SCREEN})())", timeout=timeout_ms)

    def finished(self, timeout_ms: float = TIMEOUT_MS) -> re.Match:
        """The next prompt's "[exit STATUS, #N]" on the screen."""
        self.count += 1
        self.wait_until(f"s => /\\[exit \\d+, #{self.count}\\]/.test(s)", timeout_ms)
        return re.search(rf"\[exit (\d+), #{self.count}\]", self.screen())

    def type(self, command: str, timeout_ms: float = TIMEOUT_MS) -> tuple[int, str]:
        """Type `command` as it is and Enter (on a cleared screen); (its exit status, what the
        terminal showed)."""
        self.focus()
        self.page.keyboard.type("clear\n")
        self.finished()
        self.page.keyboard.type(command + "\n")
        status = self.finished(timeout_ms)
        return int(status.group(1)), status.string[:status.start()]


def login(browser, hub, user: str):
    page = hub_login(browser, hub.hub.url, user, hub.passwords[user], height=2200,
                     timeout_ms=TIMEOUT_MS)
    page.wait_for_url(re.compile(rf"/user/{re.escape(user)}/lab"), timeout=SLOW_MS)
    page.wait_for_selector("#jp-main-statusbar", timeout=SLOW_MS)
    # the terminal's screen as text (xterm's rows for screen readers), no news toast
    for plugin, settings in (("terminal-extension:plugin", {"screenReaderMode": True}),
                             ("apputils-extension:notification", {"fetchNews": "false"})):
        server_request(page, hub, user, "PUT", f"/lab/api/settings/@jupyterlab/{plugin}",
                       {"raw": json.dumps(settings)})
    page.reload()
    page.wait_for_selector("#jp-main-statusbar")
    return page


def server_request(page, hub, user: str, method: str, path: str, body: dict | None = None):
    base = f"{hub.hub.url}/user/{user}"
    xsrf = [c["value"] for c in page.context.cookies(base + "/") if c["name"] == "_xsrf"]
    r = page.request.fetch(base + path, method=method,
                           data=None if body is None else json.dumps(body),
                           headers={"X-XSRFToken": xsrf[0] if xsrf else "",
                                    "Content-Type": "application/json"})
    assert r.ok, f"{method} {path} as {user}: {r.status} {r.text()[:500]}"
    return r


def lines(shown: str) -> list[str]:
    return [line.strip() for line in shown.splitlines()]


TRANSCRIPT = LOGS / "journeys.txt"  # what each terminal showed, for a person to read


def assert_ran(command: str, status: int, shown: str, allowed=(0,)) -> None:
    with open(TRANSCRIPT, "a") as f:
        f.write(f"$ {command}\n{shown.strip()}\n[exit {status}]\n\n")
    bad = [f for f in FAILURES if f in shown]
    assert status in allowed and not bad, \
        f"`{command}` typed into the terminal: exit {status}, {bad}:\n{shown[-3000:]}"


def file_browser_root(page) -> str:
    """The folder at the top of the file browser, as the server knows it (its root_dir)."""
    return page.evaluate("() => JSON.parse(document.getElementById("
                         "'jupyter-config-data').textContent).serverRoot")


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as b:
        yield b


@pytest.fixture(scope="module")
def journey(browser):
    """A hub of its own (the flow releases, collects and grades self_attention, which the
    session's hub keeps for test_walkthrough's class): NAME-j, set up like the session's."""
    require_hub()
    LOGS.mkdir(parents=True, exist_ok=True)
    TRANSCRIPT.write_text("")
    with started_hub(os.environ.get("HUB_TEST_NAME", "hubt") + "j") as hub:
        yield {"hub": hub, "browser": browser}


def test_the_docs_commands_parse():
    """What this module types: the docs still give the flow's commands."""
    typed = instructor_commands()
    for step in ("release", "collect", "autograde", "feedback", "report", "export"):
        assert any(c.startswith(f"python -m grader {step}") for c in typed), step
    assert student_check_command().startswith("python -m grader check")


def test_instructor_types_the_flow_of_a_term(journey):
    hub, browser = journey["hub"], journey["browser"]
    teacher, student = hub.hub.instructor, hub.hub.students[0]
    page = login(browser, hub, teacher)
    term = XTerm(page)

    status, shown = term.type("pwd")
    assert str(hub.hub.instructor_root) == file_browser_root(page)
    assert str(hub.hub.instructor_root) in lines(shown), \
        f"the terminal starts elsewhere than the file browser:\n{shown}"
    status, shown = term.type("type python python3 jupyter")
    for name in ("python", "python3", "jupyter"):
        assert f"{name} is {hub.hub.env / 'bin' / name}" in shown, shown

    flow = instructor_commands()
    release, rest = flow[0], flow[1:]
    assert_ran(release, *term.type(release, SLOW_MS))

    # a student, meanwhile: fetches from the Assignment List, checks in their terminal, submits
    spage = login(browser, hub, student)
    sterm = XTerm(spage)
    status, shown = sterm.type("pwd")
    assert file_browser_root(spage) in lines(shown), shown
    status, shown = sterm.type("python -c 'import grader, sys; print(grader.__file__)'; "
                               "python -c 'import solutions'")
    assert f"{hub.hub.env}/" in shown and "No module named 'solutions'" in shown, shown
    spage.get_by_role("menuitem", name="Nbgrader", exact=True).click()
    spage.get_by_role("menuitem", name=re.compile("^Assignment List")).click()
    row = spage.locator("#released_assignments_list .list_item", has_text=ASSIGNMENT)
    row.get_by_role("button", name="Fetch").click()
    fetched = spage.locator("#fetched_assignments_list > .list_item", has_text=ASSIGNMENT)
    expect(fetched).to_be_visible()
    check = student_check_command().replace("NOTEBOOK", f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb")
    sterm = XTerm(spage)  # a terminal again, in front of the Assignment List
    status, shown = sterm.type(check, SLOW_MS)
    # the fetched notebook is unanswered: its checks fail (1), and say so
    assert_ran(check, status, shown, allowed=(0, 1))
    assert ASSIGNMENT in shown, shown
    spage.get_by_role("menuitem", name="Nbgrader", exact=True).click()
    spage.get_by_role("menuitem", name=re.compile("^Assignment List")).click()
    fetched.get_by_role("button", name="Submit").click()
    expect(spage.locator("#submitted_assignments_list .nested_list_item")).to_have_count(1)

    page.bring_to_front()
    for command in rest:
        assert_ran(command, *term.type(command, SLOW_MS))

    # the report where the instructor's file browser shows it
    report = hub.hub.course / "reports" / f"{ASSIGNMENT}.html"
    assert report.is_file(), f"no {report}"
    listing = server_request(page, hub, teacher, "GET", "/api/contents/course/reports").json()
    assert f"{ASSIGNMENT}.html" in [item["name"] for item in listing["content"]]
    # a condition of the machine (the instructor's server has no cgroup of its own to give
    # each student's turn one) is said once, not as a flag on each student
    status = json.loads((hub.hub.course / "status" / f"{ASSIGNMENT}.json").read_text())
    assert not [f for row in status.values() for f in row["flags"]
                if "not a cgroup" in f["detail"]], status
    assert report.read_text().count("not a cgroup") <= 1


def test_formgrader_opens_from_the_nbgrader_menu(journey):
    hub, browser = journey["hub"], journey["browser"]
    teacher = hub.hub.instructor
    page = login(browser, hub, teacher)
    refused = []
    page.on("console", lambda m: refused.append(m.text) if "frame-ancestors" in m.text else None)
    page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
    page.get_by_role("menuitem", name="Formgrader", exact=True).click()
    frame = page.frame_locator("iframe[src*='formgrader']")
    link = frame.locator("tr", has_text=ASSIGNMENT).locator("a", has_text=ASSIGNMENT).first
    expect(link).to_be_visible()
    assert not refused, refused
    link.click()  # the assignment's source folder, in JupyterLab's file browser
    expect(page.locator(".jp-BreadCrumbs")).to_contain_text(ASSIGNMENT)
    # outside JupyterLab (the formgrader in a tab of its own) its links are /tree/PATH
    response = page.request.get(f"{hub.hub.url}/tree/course/source/{ASSIGNMENT}")
    assert response.ok and f"/user/{teacher}/lab/tree/course/source/{ASSIGNMENT}" in \
        response.url, (response.status, response.url)
