"""nbgrader's Validate dialog in JupyterLab wraps a long message (issue 49, section 3): the
grader's servers serve a custom.css (grader/lab_style.py) that JupyterLab links into its page.

JupyterLab is started as `make lab` starts it (grader.lab) on a small soft_select course of its
own; the notebook validated is an answered release whose answer raises an error with a message
of one 900-character word. Without the rule the message's <pre> is seven times wider than the
dialog (measured: 7299 px in 919).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from grader.course import REPO
from grader.demo.sample_class import Edit, Student, make_submission
from tests.browser.conftest import LAB_SETTINGS, WORK, free_port

SOURCE = REPO / "assignments" / "soft_select" / "soft_select.ipynb"
LONG = "unbroken_words_" * 60
DAN = Student("dan", "raises an error with a long message", "partial", edits=[
    Edit("soft_select", "    scores = ", f"    raise ValueError('{LONG}')\n    scores = ")])


@pytest.fixture(scope="module")
def validate_lab(tmp_path_factory):
    """(url, the notebook's path below the repository) of a JupyterLab started by grader.lab."""
    from grader.course import Course
    from grader.release import release

    WORK.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="validate-", dir=WORK))  # below the server's root
    course = Course(root / "course", source=REPO / "assignments")
    released = release(course, "soft_select") / "soft_select.ipynb"
    (root / "work").mkdir()
    nbformat.write(make_submission(SOURCE, released, DAN), root / "work" / "dan.ipynb")

    tmp = tmp_path_factory.mktemp("validate-lab")
    settings = tmp / "settings"
    for name, values in LAB_SETTINGS.items():
        (settings / name).parent.mkdir(parents=True, exist_ok=True)
        (settings / name).write_text(json.dumps(values))
    port = free_port()
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
               JUPYTER_CONFIG_DIR=str(tmp / "config"), JUPYTER_DATA_DIR=str(tmp / "data"),
               JUPYTERLAB_SETTINGS_DIR=str(settings),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"))
    code = ("import sys; from pathlib import Path; from grader.course import Course; "
            "from grader.lab import lab; "
            f"sys.exit(lab(Course(Path({str(course.root)!r})), sys.argv[1:], "
            f"config_dir=Path({str(tmp / 'nbgrader')!r})))")
    log = open(tmp / "lab.log", "w+")
    server = subprocess.Popen(
        [sys.executable, "-c", code, "--no-browser", f"--port={port}",
         "--ServerApp.ip=127.0.0.1", "--IdentityProvider.token=", "--ServerApp.password="],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status", timeout=5):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    pytest.fail(f"JupyterLab did not start:\n{log.read()[-3000:]}")
                time.sleep(0.5)
        yield url, (root / "work" / "dan.ipynb").relative_to(REPO)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
        shutil.rmtree(root, ignore_errors=True)


def test_validate_wraps_a_long_message(validate_lab, page):
    url, notebook = validate_lab
    page.goto(f"{url}/lab/tree/{notebook}")
    css = page.context.request.get(f"{url}/custom/custom.css")
    assert css.ok and "#validation-message pre" in css.text()
    assert page.locator("link[href$='custom/custom.css']").count() == 1

    page.locator(".jp-ToolbarButtonComponent:has-text('Validate')").first.click()
    message = page.locator("#validation-message pre", has_text=LONG[:60]).first
    message.wait_for(timeout=300_000)  # the notebook runs first
    sizes = message.evaluate("e => [e.scrollWidth, e.clientWidth, getComputedStyle(e).whiteSpace]")
    assert sizes[2] == "pre-wrap" and sizes[0] <= sizes[1], f"the message is cut off: {sizes}"
    body = page.locator(".jp-Dialog-body").first
    width = body.evaluate("e => [e.scrollWidth, e.clientWidth]")
    assert width[0] <= width[1], f"the dialog scrolls sideways: {width}"
