"""A term on the course hub, in a real browser: the whole flow of one assignment.

The instructor logs in and releases self_attention; student A fetches it from JupyterLab's
Assignment List, hands in a wrong answer (validation fails), then the right one (it passes);
the due date passes; student B hands in late; the instructor collects, autogrades, grades A's
written answer by hand in the formgrader and publishes the feedback; A fetches and reads their
feedback (their score, no hidden tests); the gradebook and the exported CSVs agree.

Each user has their own browser context (their own hub login); the steps run in order, sharing
the module's state, and each one leaves a screenshot in build/screenshots/hub_NN_<step>.png.
"""

from __future__ import annotations

import csv
import json
import os
import pwd
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import nbformat
import pytest

from grader.course import REPO, Course
from grader.demo.sample_class import SELF_ATTENTION_CLASS, make_submission
from tests.support import pages
from tests.support.notebooks import cell_of
from tests.support.pages import chromium_browser, hub_login

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ASSIGNMENT = "self_attention"
SOURCE = REPO / "assignments" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
NOTEBOOK = f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb"  # in a student's server (their home)
SHOTS = REPO / "build" / "screenshots"
TIMEOUT_MS = 90_000  # one wait (CI has two cores)
SLOW_MS = 180_000  # a server's first start, a validation (a kernel runs the whole notebook)
STORY = {s.id: s for s in SELF_ATTENTION_CLASS}


def home(user: str) -> Path:
    return Path(pwd.getpwnam(user).pw_dir)


def expect(locator):
    return pages.expect(locator, TIMEOUT_MS)


def points(nb) -> tuple[float, float]:
    """(autograded points, points marked by hand) of a source notebook."""
    auto = manual = 0.0
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            if cell.cell_type == "code":
                auto += meta["points"]
            else:
                manual += meta["points"]
    return auto, manual


def written_cells(nb) -> list[tuple[str, float]]:
    """(grade_id, points) of each answer marked by hand, in the notebook's order."""
    return [(c.metadata["nbgrader"]["grade_id"], c.metadata["nbgrader"]["points"])
            for c in nb.cells if c.cell_type == "markdown"
            and c.metadata.get("nbgrader", {}).get("grade")]


def hidden_lines(nb) -> list[str]:
    """The lines of the source's hidden tests (long enough to be unmistakable)."""
    lines = []
    for cell in nb.cells:
        inside = False
        for line in cell.source.splitlines():
            if "BEGIN HIDDEN TESTS" in line:
                inside = True
            elif "END HIDDEN TESTS" in line:
                inside = False
            elif inside and len(line.strip()) >= 20:
                lines.append(line.strip())
    return lines


@dataclass
class Flow:
    """What the steps share: the hub, one page per user, what happened when."""
    h: object  # tests.hub.conftest.RunningHub
    browser: object
    pages: dict = field(default_factory=dict)
    done: set = field(default_factory=set)
    shot_count: int = 0
    times: dict = field(default_factory=dict)

    @property
    def instructor(self) -> str:
        return self.h.hub.instructor

    @property
    def a(self) -> str:
        return self.h.hub.students[0]

    @property
    def b(self) -> str:
        return self.h.hub.students[1]

    def server(self, user: str) -> str:
        return f"{self.h.hub.url}/user/{user}"

    def shot(self, page, step: str) -> Path:
        self.shot_count += 1
        path = SHOTS / f"hub_{self.shot_count:02d}_{step}.png"
        page.screenshot(path=path)
        return path

    def needs(self, *steps: str) -> None:
        missing = [s for s in steps if s not in self.done]
        if missing:
            pytest.skip(f"an earlier step did not finish: {', '.join(missing)}")

    def grader(self, *args: str) -> str:
        """`python -m grader ARGS` in the instructor's terminal; its output."""
        done = self.h.run_as(self.instructor, str(self.h.hub.python), "-m", "grader", *args)
        return done.stdout + done.stderr

    def login(self, user: str):
        """A fresh browser context for `user`, logged in at the hub, in their JupyterLab."""
        page = hub_login(self.browser, self.h.hub.url, user, self.h.passwords[user],
                         height=1000, timeout_ms=TIMEOUT_MS)
        try:  # the hub starts their server (spawn-pending), then sends them to it
            page.wait_for_url(re.compile(rf"/user/{re.escape(user)}/lab"), timeout=SLOW_MS)
            page.wait_for_selector("#jp-main-statusbar", timeout=SLOW_MS)
            self.pages[user] = page
            # No "official Jupyter news?" toast over the screenshots: answered no, as they
            # would, in their JupyterLab settings; then JupyterLab again.
            self.request(user, "PUT", "/lab/api/settings/@jupyterlab/apputils-extension:"
                         "notification", {"raw": json.dumps({"fetchNews": "false"})})
            page.reload()
            page.wait_for_selector("#jp-main-statusbar")
        except Exception:
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=SHOTS / f"hub_failed_login_{user}.png")
            raise AssertionError(f"{user} did not reach JupyterLab ({page.url}); the hub's "
                                 f"log:\n{self.h.log.read_text()[-4000:]}") from None
        return page

    def request(self, user: str, method: str, path: str, body: dict):
        """A request to the user's own server from their browser, authenticated as them (their
        cookies, and its _xsrf token as JupyterLab sends it)."""
        page = self.pages[user]
        base = self.server(user)
        xsrf = [c["value"] for c in page.context.cookies(base + "/") if c["name"] == "_xsrf"]
        assert xsrf, f"no _xsrf cookie for {base}"
        r = page.request.fetch(base + path, method=method, data=json.dumps(body),
                               headers={"X-XSRFToken": xsrf[0],
                                        "Content-Type": "application/json"})
        assert r.ok, f"{method} {path} as {user}: {r.status} {r.text()[:500]}"
        return r

    def put_notebook(self, user: str, nb) -> None:
        """Save `nb` as the user's fetched notebook through their server's contents API."""
        body = {"type": "notebook", "format": "json", "content": json.loads(nbformat.writes(nb))}
        self.request(user, "PUT", f"/api/contents/{NOTEBOOK}", body)
        saved = nbformat.read(home(user) / NOTEBOOK, as_version=4)
        assert [c.source for c in saved.cells] == [c.source for c in nb.cells]


@pytest.fixture(scope="module")
def browser():
    with chromium_browser(bool(os.environ.get("GRADER_REQUIRE_SERVICES")),
                          " (.ci/run installs Debian's `chromium`)") as b:
        yield b


@pytest.fixture(scope="module")
def flow(course_hub, browser):
    SHOTS.mkdir(parents=True, exist_ok=True)
    for old in SHOTS.glob("hub_*.png"):
        old.unlink()
    return Flow(course_hub, browser)


def assignment_list(page):
    """Open nbgrader's Assignment List from JupyterLab's Nbgrader menu."""
    page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
    page.get_by_role("menuitem", name=re.compile("^Assignment List")).click()
    expect(page.locator("#released_assignments_list")).to_be_visible()
    return page


def formgrader_row(flow, page):
    """The assignment's row on the instructor's formgrader (Manage Assignments)."""
    page.goto(f"{flow.server(flow.instructor)}/formgrader")
    return page.locator("tr", has_text=ASSIGNMENT)


def fetched_row(page):
    return page.locator("#fetched_assignments_list > .list_item", has_text=ASSIGNMENT)


def validate(page):
    """Validate the fetched notebook from the Assignment List; returns the results dialog."""
    row = fetched_row(page)
    button = row.locator(".nested_list_item").get_by_role("button", name="Validate")
    if not button.is_visible():
        row.locator("a.assignment-notebooks-link").click()  # show the assignment's notebooks
    button.click()
    dialog = page.locator(".jp-Dialog", has=page.locator("#validation-message"))
    expect(dialog).to_be_visible(timeout=SLOW_MS)
    return dialog


def validated(flow: Flow, user: str, page, fetched: Path, story: str):
    """The sample class's STORY handed in as USER's notebook, validated from the Assignment
    List; (the results dialog, its message)."""
    flow.put_notebook(user, make_submission(SOURCE, fetched, STORY[story]))
    dialog = validate(page)
    return dialog, dialog.locator("#validation-message")


def close_dialog(page, dialog):
    dialog.get_by_role("button", name=re.compile("^ok$", re.I)).click()
    expect(dialog).to_have_count(0)


def submit(page, count_before: int) -> tuple[float, float]:
    """Click Submit; returns (just before, just after) the submission appears in the list."""
    # this assignment's submissions only (the same student may have handed in others)
    submitted = page.locator("#submitted_assignments_list > .list_item",
                             has_text=ASSIGNMENT).locator(".nested_list_item")
    expect(submitted).to_have_count(count_before)
    start = time.time()
    fetched_row(page).get_by_role("button", name="Submit").click()
    expect(submitted).to_have_count(count_before + 1)
    return start, time.time()


def fetch(flow: Flow, user: str, who: str):
    """USER logs in and fetches the assignment from the Assignment List; (the page, the fetched
    notebook's path)."""
    flow.login(user)
    page = assignment_list(flow.pages[user])
    row = page.locator("#released_assignments_list .list_item", has_text=ASSIGNMENT)
    expect(row).to_be_visible()  # the instructor's release, in the exchange
    flow.shot(page, f"{who}_assignment_list")
    row.get_by_role("button", name="Fetch").click()
    expect(fetched_row(page)).to_be_visible()
    fetched = home(user) / NOTEBOOK
    assert fetched.is_file(), f"Fetch put nothing at {fetched}"
    released = nbformat.read(fetched, as_version=4)
    assert not any("BEGIN SOLUTION" in c.source or "BEGIN HIDDEN TESTS" in c.source
                   for c in released.cells), "the student got the source, not the release"
    return page, fetched


# -- 1. the instructor releases ------------------------------------------------------------

def test_1_instructor_releases_the_assignment(flow):
    page = flow.login(flow.instructor)
    flow.shot(page, "instructor_lab")
    out = flow.grader("release", ASSIGNMENT, "--publish")
    assert f"{ASSIGNMENT}: published to" in out, out
    assert (flow.h.hub.course_exchange / "outbound" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
            ).is_file()

    row = formgrader_row(flow, page)
    expect(row.locator(".status")).to_have_text("released")
    flow.shot(page, "formgrader_released")
    flow.done.add("released")


# -- 2. student A: a wrong answer, then the right one ----------------------------------------

def test_2_student_hands_in_twice_and_the_last_counts(flow):
    flow.needs("released")
    a = flow.a
    page, fetched = fetch(flow, a, "student_a")
    flow.shot(page, "student_a_fetched")

    # The wrong answer (the softmax over the queries): validation names the failing test.
    released = nbformat.read(fetched, as_version=4)
    distribution_test = cell_of(released, "test_sdpa_distribution")
    dialog, message = validated(flow, a, page, fetched, "carol")
    expect(message).to_have_class(re.compile(r"\bvalidation-failed\b"))
    expect(message).to_contain_text(distribution_test.source.splitlines()[0])
    expect(message).to_contain_text("normalised along that axis, not the last")
    flow.shot(page, "student_a_validate_fails")
    close_dialog(page, dialog)
    flow.times["a_submit_1"] = submit(page, 0)
    flow.shot(page, "student_a_submitted_wrong")

    # The right answer: validation passes; handed in again.
    dialog, message = validated(flow, a, page, fetched, "alice")
    expect(message).to_have_class(re.compile(r"\bvalidation-success\b"))
    expect(message).to_contain_text("Success! Your notebook passes all the tests.")
    flow.shot(page, "student_a_validate_passes")
    close_dialog(page, dialog)
    flow.times["a_submit_2"] = submit(page, 1)
    flow.shot(page, "student_a_submitted_again")
    assert flow.times["a_submit_2"][0] > flow.times["a_submit_1"][1]
    flow.done.add("a_submitted")


# -- 3. the due date passes ----------------------------------------------------------------

def test_3_instructor_sets_the_due_date_to_now(flow):
    flow.needs("a_submitted")
    time.sleep(max(0.0, flow.times["a_submit_2"][1] + 1.5 - time.time()))  # A's is before it
    due = datetime.now(UTC).replace(microsecond=0)
    out = flow.grader("release", ASSIGNMENT, "--due", due.strftime("%Y-%m-%d %H:%M:%S"))
    assert f"{ASSIGNMENT}: student version in" in out, out
    assert "published" not in out  # the release in the exchange stays as it was
    flow.times["due"] = due.timestamp()
    page = flow.pages[flow.instructor]
    row = formgrader_row(flow, page)
    expect(row.locator(".duedate")).to_contain_text(due.strftime("%Y-%m-%d %H:%M:%S"))
    flow.shot(page, "formgrader_due_date")
    time.sleep(1.5)  # B's submission is in a later second than the due date
    flow.done.add("due")


# -- 4. student B hands in late ------------------------------------------------------------

def test_4_second_student_hands_in_after_the_due_date(flow):
    flow.needs("due")
    b = flow.b
    page, fetched = fetch(flow, b, "student_b")
    flow.put_notebook(b, make_submission(SOURCE, fetched, STORY["alice"]))
    flow.times["b_submit"] = submit(page, 0)
    assert flow.times["b_submit"][0] > flow.times["due"]
    flow.shot(page, "student_b_submitted_late")
    flow.done.add("b_submitted")


# -- 5. collect, autograde, grade by hand, publish feedback --------------------------------

def test_5_instructor_collects_grades_and_publishes_feedback(flow):
    flow.needs("a_submitted", "b_submitted")
    a, b = flow.a, flow.b
    auto, manual = points(nbformat.read(SOURCE, as_version=4))
    assert manual > 0, "the assignment has no written answer to mark by hand"

    out = flow.grader("collect", ASSIGNMENT)
    for student in (a, b):
        assert re.search(rf"^\s+{re.escape(student)}\s+submitted ", out, re.M), out
    assert re.search(r"^2 submission\(s\) collected\b.*; 0 refused\.$", out, re.M), out

    out = flow.grader("autograde", ASSIGNMENT)
    for student in (a, b):  # both handed in the right answer last: every autograded point
        line = re.search(rf"{re.escape(student)}\s+(\S+) / (\S+) autograded(.*)$", out, re.M)
        assert line, out
        assert float(line.group(1)) == float(line.group(2)) == auto, line.group(0)
        assert f"{manual:g} more points for written answers" in line.group(3), line.group(0)
        assert "ERROR" not in line.group(3), line.group(0)
    assert re.search(r"Summary: 2 graded, 0 unchanged and skipped, 0 could not be graded", out), \
        out

    # The written answers, by hand: Manual Grading > assignment > notebook > A's submission.
    page = flow.pages[flow.instructor]
    page.goto(f"{flow.server(flow.instructor)}/formgrader")
    page.get_by_role("link", name="Manual Grading").click()
    for level in (ASSIGNMENT, f"{ASSIGNMENT}/{ASSIGNMENT}"):  # the assignment, its notebook
        page.locator("table").get_by_role("link", name=ASSIGNMENT, exact=True).click()
        page.wait_for_url(re.compile(rf"/formgrader/gradebook/{level}$"))
    submissions = page.locator("table tbody tr")
    expect(submissions).to_have_count(2)
    page.click("#toggle_names")  # names instead of "Submission #n"
    flow.shot(page, "formgrader_manual_grading")
    page.get_by_role("link", name=a, exact=True).click()
    written = written_cells(nbformat.read(SOURCE, as_version=4))
    assert sum(p for _, p in written) == manual
    for grade_id, full in written:  # each answer its full points
        score = page.locator(f"input.score#{grade_id}")
        expect(score).to_be_visible()
        score.scroll_into_view_if_needed()
        with page.expect_response(lambda r: "/formgrader/api/grade/" in r.url
                                  and r.request.method == "PUT") as saved:
            score.fill(f"{full:g}")
            score.press("Tab")  # leaving the field saves it
        assert saved.value.ok, saved.value.text()
        assert float(saved.value.json()["manual_score"]) == full
    page.evaluate("() => document.activeElement.blur()")
    score.evaluate("e => e.closest('.nbgrader_cell').scrollIntoView({block: 'center'})")
    flow.shot(page, "formgrader_written_answer_graded")

    out = flow.grader("feedback", ASSIGNMENT, "--publish")
    for student in (a, b):
        assert re.search(rf"^\s+{re.escape(student)}\s+published$", out, re.M), out
    flow.done.add("graded")


# -- 6. A reads their feedback ---------------------------------------------------------------

def test_6_student_fetches_and_reads_feedback(flow):
    flow.needs("graded")
    a = flow.a
    page = flow.pages[a]
    page.goto(f"{flow.server(a)}/lab?reset")
    page.wait_for_selector("#jp-main-statusbar")
    expect(page.locator(".jp-DirListing-item", has_text=ASSIGNMENT)).to_be_visible()
    assignment_list(page)
    row = page.locator("#submitted_assignments_list > .list_item", has_text=ASSIGNMENT)
    expect(row).to_contain_text("feedback available to fetch")
    row.get_by_role("button", name="Fetch Feedback").click()
    expect(row).to_contain_text("(view feedback)")
    flow.shot(page, "student_a_feedback_fetched")

    # One page, for the submission that was graded: the last of A's two.
    submissions = row.locator(".nested_list_item")
    expect(submissions).to_have_count(2)
    stamps = [t.replace("(view feedback)", "").strip() for t in submissions.all_inner_texts()]
    with_feedback = [t for t in submissions.all_inner_texts() if "(view feedback)" in t]
    assert len(with_feedback) == 1 and with_feedback[0].startswith(max(stamps)), stamps
    pages = sorted((home(a) / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html"))
    assert [p.parent.name for p in pages] == [max(stamps)], (pages, stamps)
    stamp = pages[0].parent.name
    feedback = page.context.new_page()
    feedback.goto(f"{flow.server(a)}/files/{ASSIGNMENT}/feedback/{quote(stamp)}/"
                  f"{ASSIGNMENT}.html")
    auto, manual = points(nbformat.read(SOURCE, as_version=4))
    total = auto + manual
    expect(feedback.locator("body")).to_contain_text(f"(Score: {total:.1f} / {total:.1f})")
    written = written_cells(nbformat.read(SOURCE, as_version=4))
    for _, full in written:  # each named by its question (its formulas, as MathML, span lines)
        expect(feedback.locator("#toc")).to_contain_text(re.compile(
            rf"Graded\s*Written answer: .*\(Score: {full:.1f} / {full:.1f}\)", re.S))
    assert feedback.locator("#toc").inner_text().count("Written answer:") == len(written)
    flow.shot(feedback, "student_a_feedback_page")

    text = feedback.locator("body").inner_text()
    assert "expect_rows_sum_to_one(att)" in text  # visible tests' code reads as text here ...
    assert "BEGIN HIDDEN TESTS" not in text
    hidden = hidden_lines(nbformat.read(SOURCE, as_version=4))
    assert len(hidden) > 10
    shown = [line for line in hidden if line in text]
    assert not shown, f"hidden tests in A's feedback: {shown[:5]}"  # ... hidden ones never
    feedback.close()
    flow.done.add("feedback")


# -- 7. the grades ---------------------------------------------------------------------------

def test_7_gradebook_and_exports(flow):
    flow.needs("graded")

    a, b = flow.a, flow.b
    auto, manual = points(nbformat.read(SOURCE, as_version=4))
    with Course(flow.h.hub.course).gradebook() as gb:
        sa = gb.find_submission(ASSIGNMENT, a)
        sb = gb.find_submission(ASSIGNMENT, b)
        written = [gb.find_grade(grade_id, ASSIGNMENT, ASSIGNMENT, a)
                   for grade_id, _ in written_cells(nbformat.read(SOURCE, as_version=4))]
        a_score, a_max, a_code = sa.score, sa.max_score, sa.code_score
        a_late, b_late = sa.total_seconds_late, sb.total_seconds_late
        a_time, b_time = sa.timestamp, sb.timestamp
        written_score = sum(grade.manual_score for grade in written)
        due = gb.find_assignment(ASSIGNMENT).duedate
    assert written_score == manual
    assert a_code == auto and a_score == a_max == auto + manual
    assert a_late == 0, f"A handed in before the due date, yet is {a_late} s late"
    assert b_late > 0, "B handed in after the due date, yet is not late"

    def utc(t: datetime) -> float:
        return (t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp()

    assert abs(utc(due) - flow.times["due"]) < 1
    # The time of A's last submit (the file system's), not of the first.
    first_end = flow.times["a_submit_1"][1]
    start, end = flow.times["a_submit_2"]
    assert start - 0.5 <= utc(a_time) <= end + 0.5, (a_time, flow.times)
    assert utc(a_time) > first_end, "the gradebook has A's first submission, not the last"
    assert flow.times["b_submit"][0] - 0.5 <= utc(b_time) <= flow.times["b_submit"][1] + 0.5

    folder = home(flow.instructor)
    for name in ("grades.csv", "canvas.csv"):
        (folder / name).unlink(missing_ok=True)
    out = flow.grader("export", "--to", "grades.csv")
    assert "grades written to" in out, out
    with open(folder / "grades.csv", newline="") as f:
        rows = {(r["assignment"], r["student_id"]): r for r in csv.DictReader(f)}
    assert float(rows[(ASSIGNMENT, a)]["score"]) == auto + manual
    assert float(rows[(ASSIGNMENT, b)]["score"]) == auto  # the written answer not marked yet

    out = flow.grader("export", "--format", "canvas", "--to", "canvas.csv")
    assert "canvas format" in out, out
    with open(folder / "canvas.csv", newline="") as f:
        table = list(csv.reader(f))
    assert table[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    column = table[0].index(ASSIGNMENT)
    by_login = {row[3]: row for row in table[2:]}
    assert table[1][0] == "Points Possible" and float(table[1][column]) == auto + manual
    assert float(by_login[a][column]) == auto + manual
    assert float(by_login[b][column]) == auto
