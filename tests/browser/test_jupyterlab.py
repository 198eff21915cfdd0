"""The course in JupyterLab, in a real browser: a lecture's widgets, a student's checks, the
formgrader and the class report. Each step leaves a screenshot in build/screenshots/."""

from __future__ import annotations

import io
import re
import shutil
import time

import nbformat
import numpy as np
import pytest
from PIL import Image

from grader.checks.notebook import MARK
from grader.course import REPO

pytestmark = pytest.mark.slow
WORK = REPO / "build" / "browser"  # as in conftest.py: below the server's root
TIMEOUT_MS = 90_000

# Every shown input's prompt is numbered. (A collapsed cell, such as a lecture's worked answer,
# shows an empty placeholder prompt instead: `.jp-InputArea-prompt` leaves it out.)
ALL_RAN = """() => {
  const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')]
    .map(e => e.textContent);
  return prompts.length > 0 && prompts.every(t => /\\[\\d+\\]/.test(t));
}"""


def expect(locator):
    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT_MS)
    return expect(locator)


def open_notebook(page, lab_url: str, path: str):
    page.goto(f"{lab_url}/lab/tree/{path}?reset")
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    expect(page.locator("#jp-main-statusbar")).to_contain_text("Idle")  # the kernel is up
    return page.locator(".jp-Notebook .jp-Cell")


def run_all(page):
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()


def write_cell(page, cell, code: str):
    """Replace a cell's code as a student would: click into it, select all, type."""
    cell.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(code)


def show(locator):
    locator.evaluate("e => e.scrollIntoView({block: 'center'})")


def settle(page, image, quiet_ms: int = 1500, timeout_s: float = 60):
    """Wait until the image's data has stopped changing for `quiet_ms`."""
    deadline = time.monotonic() + timeout_s
    src = image.get_attribute("src")
    while time.monotonic() < deadline:
        page.wait_for_timeout(quiet_ms)
        now = image.get_attribute("src")
        if now == src:
            return
        src = now
    raise AssertionError("the plot kept changing")


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)


def test_lecture_slider_redraws_the_plot(page, lab_url, shots):
    # A copy of lecture 1 (next to the toolkit it imports), so the lecture itself is never saved.
    folder = WORK / "lectures"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shutil.copy(REPO / "lectures" / "01_select_to_attention.ipynb", folder)
    (folder / "toolkit").symlink_to(REPO / "lectures" / "toolkit", target_is_directory=True)
    open_notebook(page, lab_url, "build/browser/lectures/01_select_to_attention.ipynb")
    page.screenshot(path=shots / "lecture_1_opened.png")

    run_all(page)
    page.wait_for_function(ALL_RAN, timeout=180_000)
    errors = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
    assert errors.count() == 0, errors.all_inner_texts()

    # The temperature slider (an ipywidgets FloatLogSlider) and the live plot below it.
    cell = page.locator(".jp-CodeCell").filter(
        has=page.locator(".widget-slider .widget-label", has_text=re.compile(r"^T$")))
    slider = cell.locator(".widget-slider")
    plot = cell.locator(".jp-OutputArea-output img")
    expect(plot).to_have_count(1)
    readout = slider.locator(".widget-readout")
    expect(readout).to_have_text("1.00")
    show(slider)
    before_src, before = plot.get_attribute("src"), plot.screenshot()
    page.screenshot(path=shots / "lecture_2_slider_at_T_1.png")

    # Drag the handle towards the right end (T = 10**(-2 + 4 * 0.85), about 25).
    handle = slider.locator(".noUi-handle")
    track, knob = slider.locator(".noUi-target").bounding_box(), handle.bounding_box()
    y = knob["y"] + knob["height"] / 2
    page.mouse.move(knob["x"] + knob["width"] / 2, y)
    page.mouse.down()
    page.mouse.move(track["x"] + 0.85 * track["width"], y, steps=12)
    page.mouse.up()

    expect(plot).not_to_have_attribute("src", before_src)  # the kernel drew a new figure
    settle(page, plot)  # while dragging, each step drew one: wait for the last
    assert float(readout.inner_text()) > 10
    after = plot.screenshot()
    a, b = pixels(before), pixels(after)
    changed = (np.abs(a - b).sum(axis=-1) > 30).mean() if a.shape == b.shape else 1.0
    assert changed > 0.01, f"the plot barely changed ({changed:.2%} of its pixels)"
    show(slider)
    page.screenshot(path=shots / "lecture_3_slider_moved.png")


def pass_line(cell) -> str:
    """What a test cell prints when every check in it passes (its last print)."""
    printed = re.findall(r'print\("([^"]+)"\)', cell.source)
    assert printed, f"this test cell prints no pass message:\n{cell.source}"
    return printed[-1]


def first_cell(nb, start: int, predicate) -> int:
    return next(i for i in range(start, len(nb.cells)) if predicate(nb.cells[i]))


def is_test(cell) -> bool:
    return cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade", False)


CAUSAL_MASK = '''def causal_mask(T, device=None):
    """(T, T) boolean mask: True where query i may attend to key j, that is j <= i."""
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()
'''

SDPA = '''def scaled_dot_product_attention(q, k, v, mask=None):
    """softmax(q k^T / sqrt(d)) v, with masked-out keys given zero weight."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim={dim})
    return weights @ v, weights
'''


def test_student_sees_which_checks_pass_and_why_one_fails(page, lab_url, sample_class, shots):
    released = sample_class / "course" / "release" / "self_attention" / "self_attention.ipynb"
    student = WORK / "student" / "self_attention"  # the student's own copy of the release
    shutil.rmtree(student, ignore_errors=True)
    student.mkdir(parents=True)
    shutil.copy(released, student)
    nb = nbformat.read(released, as_version=4)
    mask_cell = first_cell(nb, 0, lambda c: "def causal_mask" in c.source)
    mask_test = first_cell(nb, mask_cell, is_test)
    sdpa_cell = first_cell(nb, 0, lambda c: "def scaled_dot_product_attention" in c.source)
    sdpa_test = first_cell(nb, sdpa_cell,  # the test that the weights are distributions
                           lambda c: is_test(c) and "expect_rows_sum_to_one" in c.source)

    cells = open_notebook(page, lab_url,
                          "build/browser/student/self_attention/self_attention.ipynb")
    expect(cells).to_have_count(len(nb.cells))
    assert "NotImplementedError" in cells.nth(mask_cell).inner_text(), "not the student version"

    # The student writes the causal mask, and an attention whose softmax runs over the queries.
    write_cell(page, cells.nth(mask_cell), CAUSAL_MASK)
    write_cell(page, cells.nth(sdpa_cell), SDPA.format(dim=-2))
    run_all(page)
    failed = cells.nth(sdpa_test).locator(".jp-OutputArea-output")
    expect(failed).to_contain_text(MARK)  # the check's message, one line, not a traceback
    # the cause, named because the weights prove it (they sum to one along another axis)
    expect(failed).to_contain_text("the softmax was normalised along that axis, not the last")
    expect(failed).not_to_contain_text("Traceback")
    expect(cells.nth(mask_test).locator(".jp-OutputArea-output")).to_have_text(
        pass_line(nb.cells[mask_test]))
    show(cells.nth(sdpa_test))
    page.screenshot(path=shots / "student_1_check_fails.png")

    # Fixed: the softmax over the keys. Running the cell and its test shows the pass line.
    write_cell(page, cells.nth(sdpa_cell), SDPA.format(dim=-1))
    page.keyboard.press("Shift+Enter")  # run the solution cell, move to the next cell
    for _ in range(sdpa_cell + 1, sdpa_test + 1):
        page.keyboard.press("Shift+Enter")
    passed = cells.nth(sdpa_test).locator(".jp-OutputArea-output")
    expect(passed).not_to_contain_text(MARK)
    expect(passed).to_have_text(pass_line(nb.cells[sdpa_test]))
    show(cells.nth(sdpa_test))
    page.screenshot(path=shots / "student_2_check_passes.png")


def test_student_fetches_an_assignment_from_the_list(page, lab_url, sample_class, shots):
    fetched = sample_class / "student" / "self_attention"  # where `make lab` has fetches go
    shutil.rmtree(fetched, ignore_errors=True)
    page.goto(f"{lab_url}/lab?reset")
    page.wait_for_selector("#jp-main-statusbar")
    page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
    page.get_by_role("menuitem", name=re.compile("^Assignment List")).click()
    row = page.locator("#released_assignments_list .list_item", has_text="self_attention")
    expect(row).to_be_visible()  # `make lab` published the release to the course's exchange
    page.screenshot(path=shots / "assignment_list_1_released.png")

    row.get_by_role("button", name="Fetch").click()
    expect(page.locator("#fetched_assignments_list")).to_contain_text("self_attention")
    page.screenshot(path=shots / "assignment_list_2_fetched.png")
    student_copy = nbformat.read(fetched / "self_attention.ipynb", as_version=4)
    assert not any("BEGIN SOLUTION" in c.source or "BEGIN HIDDEN TESTS" in c.source
                   for c in student_copy.cells), "the student got the source, not the release"


def test_formgrader_shows_the_sample_class(page, lab_url, sample_class, shots):
    from grader.demo.sample_class import SAMPLE_CLASSES

    students = [s.id for s in SAMPLE_CLASSES["self_attention"]]
    page.goto(f"{lab_url}/lab?reset")
    page.wait_for_selector("#jp-main-statusbar")
    page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
    page.get_by_role("menuitem", name=re.compile("^Formgrader")).click()
    formgrader = page.frame_locator("iframe").first
    row = formgrader.locator("tr", has_text="self_attention")
    expect(row).to_contain_text(str(len(students)))  # submissions
    # `make lab` released the student versions of every assignment (the demo only one).
    course = sample_class / "course"
    for assignment in sorted(p.name for p in course.joinpath("source").iterdir()
                             if list(p.glob("*.ipynb"))):
        expect(formgrader.locator("table")).to_contain_text(assignment)
        assert (course / "release" / assignment / f"{assignment}.ipynb").exists(), assignment
    page.screenshot(path=shots / "formgrader_1_assignments.png")

    formgrader.get_by_role("link", name="Manage Students").click()
    table = formgrader.locator("table")
    for student in students:
        expect(table).to_contain_text(student)
    page.screenshot(path=shots / "formgrader_2_students.png")

    formgrader.get_by_role("link", name="Manage Assignments").click()
    row.get_by_role("link", name=str(len(students))).click()
    for student in students:
        expect(formgrader.locator("table")).to_contain_text(student)
    page.screenshot(path=shots / "formgrader_3_submissions.png")


def test_class_report_renders(page, sample_class, shots):
    report = sample_class / "reports" / "self_attention.html"
    page.set_viewport_size({"width": 1100, "height": 1000})
    page.goto(report.as_uri())
    expect(page.locator("h1")).to_contain_text("self_attention")
    histogram = page.locator("img").first
    expect(histogram).to_be_visible()
    assert histogram.evaluate("img => img.naturalWidth") > 100
    page.screenshot(path=shots / "report_1_top.png")
    page.screenshot(path=shots / "report_2_full.png", full_page=True)
