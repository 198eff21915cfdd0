"""What each kind of server on the hub offers: a student's has the student edition (the grader's
`check` works, `solutions` does not exist) and nbgrader's assignment list but no formgrader; the
instructor's has the formgrader on the course. Logged in over HTTP as each user, through
JupyterHub's PAM login, as a browser would."""

from __future__ import annotations

import json
import re
import time

import requests

ASSIGNMENT = "soft_select"


def logged_in(course_hub, user: str) -> requests.Session:
    """A session logged in as `user`, whose server has started."""
    hub = course_hub.hub
    s = requests.Session()
    s.get(f"{hub.url}/hub/login", timeout=30)
    r = s.post(f"{hub.url}/hub/login", timeout=120, data={
        "username": user, "password": course_hub.passwords[user], "_xsrf": s.cookies["_xsrf"]})
    assert r.status_code == 200, f"login as {user}: {r.status_code}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        r = s.get(f"{hub.url}/user/{user}/lab", timeout=30)
        if r.status_code == 200 and "JupyterLab" in r.text:
            return s
        time.sleep(1)
    raise AssertionError(f"{user}'s server did not start; see {course_hub.log}")


def page_config(s: requests.Session, url: str) -> dict:
    """JupyterLab's page configuration, as the page hands it to the browser."""
    html = s.get(url, timeout=30).text
    data = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>',
                     html, re.S)
    assert data, f"no page configuration in {url}"
    return json.loads(data.group(1))


def test_a_wrong_password_is_refused(course_hub):
    hub, user = course_hub.hub, course_hub.hub.students[0]
    s = requests.Session()
    s.get(f"{hub.url}/hub/login", timeout=30)
    r = s.post(f"{hub.url}/hub/login", timeout=60, data={
        "username": user, "password": "not-" + course_hub.passwords[user],
        "_xsrf": s.cookies["_xsrf"]})
    assert "Invalid username or password" in r.text
    assert s.get(f"{hub.url}/user/{user}/lab", timeout=30).url.startswith(f"{hub.url}/hub/login")


def test_a_student_server_has_the_assignment_list_but_no_formgrader(course_hub):
    hub, ada = course_hub.hub, course_hub.hub.students[0]
    course_hub.run_as(hub.instructor, str(hub.python), "-m", "grader", "release", ASSIGNMENT,
                      "--publish")
    s = logged_in(course_hub, ada)
    listing = s.get(f"{hub.url}/user/{ada}/assignments?course_id=attention-course", timeout=60)
    assert listing.status_code == 200
    assert ASSIGNMENT in {a["assignment_id"] for a in listing.json()["value"]}
    assert s.get(f"{hub.url}/user/{ada}/formgrader", timeout=30).status_code == 404
    disabled = page_config(s, f"{hub.url}/user/{ada}/lab")["disabledExtensions"]
    assert {"@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment"} <= set(
        disabled), f"the formgrader's parts are not disabled in the student's Lab: {disabled}"
    # ... and another student's server is not theirs to open
    ben = hub.students[1]
    assert s.get(f"{hub.url}/user/{ben}/api/contents", timeout=30).status_code in (403, 404)


def test_the_instructor_server_has_the_formgrader(course_hub):
    hub = course_hub.hub
    s = logged_in(course_hub, hub.instructor)
    disabled = page_config(s, f"{hub.url}/user/{hub.instructor}/lab")["disabledExtensions"]
    assert not [d for d in disabled if "nbgrader" in d], disabled
    r = s.get(f"{hub.url}/user/{hub.instructor}/formgrader", timeout=120)
    assert r.status_code == 200 and "formgrade" in r.text.lower()
    r = s.get(f"{hub.url}/user/{hub.instructor}/formgrader/api/assignments", timeout=120)
    assert ASSIGNMENT in {a["name"] for a in r.json()}


def test_grader_check_runs_in_a_students_terminal(course_hub):
    hub, ada = course_hub.hub, course_hub.hub.students[0]
    notebook = f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
    course_hub.run_as(hub.instructor, str(hub.python), "-m", "grader", "release", ASSIGNMENT,
                      "--publish")
    course_hub.run_as(ada, str(hub.env / "bin" / "nbgrader"), "fetch_assignment", ASSIGNMENT,
                      check=False)  # already fetched by an earlier test: fine
    done = course_hub.run_as(ada, str(hub.python), "-m", "grader", "check", notebook,
                             check=False)
    assert done.returncode == 1, done.stdout + done.stderr  # the release, unanswered: failures
    assert re.search(r"0 of \d+ visible tests pass", done.stdout), done.stdout
    assert "No module named" not in done.stdout + done.stderr
    assert "hidden, run when graded" in done.stdout
