"""The Jupyter and nbgrader configuration of the two kinds of server on the hub.

Both run from the same runtime (grader.hub.runtime); each gets its own folder on
JUPYTER_CONFIG_PATH, which comes before the runtime's own configuration:
  - student: the assignment list (fetch, validate, submit, fetch feedback); no formgrader, no
    course list, no create-assignment toolbar;
  - instructor: everything of nbgrader's, with the course of grader.course (our pipeline and
    the collect that trusts the file system) on the shared exchange.
"""

from __future__ import annotations

import json
from pathlib import Path

from grader.course import COURSE_ID
from grader.hub.layout import Hub
from grader.servers import lab_style
from grader.startup.threads import ONE_THREAD

STUDENT_NBGRADER = '''\
# Written by `python -m grader hub`: a student's server.
import os

c = get_config()  # noqa: F821
c.CourseDirectory.course_id = {course_id!r}
c.Exchange.root = {exchange!r}
c.Exchange.assignment_dir = os.path.expanduser("~")
# Submissions readable by the student and the instructor's group only (grader/nbgrader/submit.py).
c.ExchangeFactory.submit = "grader.nbgrader.submit.PrivateSubmit"
'''

INSTRUCTOR_NBGRADER = '''\
# Written by `python -m grader hub`: the instructor's server (grader comes from {lib}).
from pathlib import Path

from grader.course import Course
from grader.nbgrader.config import nbgrader_config

c = get_config()  # noqa: F821
c.merge(nbgrader_config(Course(Path({course!r}), shared_exchange=Path({exchange!r}))))
'''

# The shell of a server's terminals. Jupyter's own default on a hub is a login shell (`bash -l`),
# whose /etc/profile sets the system's PATH again: `python` was then not the runtime's (or not
# there at all). Instead an interactive bash reads the system's and the user's bashrc, then puts
# the runtime first, so what the docs say to type runs on the server's own Python.
BASHRC = '''\
# Written by `python -m grader hub`: read by each terminal of a {role}'s server.
[ -r /etc/bash.bashrc ] && . /etc/bash.bashrc
[ -r "$HOME/.bashrc" ] && . "$HOME/.bashrc"
export PATH="{bin}:$PATH"
'''

# JupyterHub's servers send `frame-ancestors 'none'` on every page; JupyterLab shows the
# formgrader (Nbgrader > Formgrader) in a frame of its own page, which that refused ("refused
# to connect"). The instructor's server lets its own origin frame it. (Every server of this hub
# shares one origin, which can script another's pages with or without frames: JupyterHub's
# subdomains, c.JupyterHub.subdomain_host, are what separates them.)
INSTRUCTOR_HEADERS = {"Content-Security-Policy": "frame-ancestors 'self'"}

NBGRADER_EXTENSIONS = ("formgrader", "course_list", "assignment_list", "validate_assignment")
STUDENT_HIDDEN_PLUGINS = ("formgrader", "course-list", "create-assignment")


def write_role_configs(hub: Hub) -> None:
    student, instructor = hub.config("student"), hub.config("instructor")
    allowed = {"student": ("assignment_list", "validate_assignment"),
               "instructor": NBGRADER_EXTENSIONS}
    for role, folder in (("student", student), ("instructor", instructor)):
        (folder / "labconfig").mkdir(parents=True, exist_ok=True)
        server = {"ServerApp": {"jpserver_extensions": {
            f"nbgrader.server_extensions.{ext}": ext in allowed[role]
            for ext in NBGRADER_EXTENSIONS}}}
        # the Content-Security-Policy of the formgrader's submission pages (the instructor's)
        server["ServerApp"]["jpserver_extensions"]["grader.servers.formgrader_policy"] = \
            role == "instructor"
        # the grader's custom.css: nbgrader's Validate dialog wraps long messages
        server["ServerApp"]["jpserver_extensions"].update(lab_style.EXTENSION)
        _write(folder / "jupyter_lab_config.json", json.dumps(lab_style.LAB, indent=1))
        server["ServerApp"]["terminado_settings"] = {
            "shell_command": ["/bin/bash", "--rcfile", str(folder / "bashrc")]}
        if role == "instructor":
            server["ServerApp"]["tornado_settings"] = {"headers": INSTRUCTOR_HEADERS}
        _write(folder / "bashrc", BASHRC.format(role=role, bin=hub.env / "bin"))
        _write(folder / "jupyter_server_config.json", json.dumps(server, indent=1))
        hidden = STUDENT_HIDDEN_PLUGINS if role == "student" else ()
        page = {"disabledExtensions": {f"@jupyter/nbgrader:{p}": True for p in hidden}}
        _write(folder / "labconfig" / "page_config.json", json.dumps(page, indent=1))
    _write(student / "nbgrader_config.py", STUDENT_NBGRADER.format(
        course_id=COURSE_ID, exchange=str(hub.exchange)))
    _write(instructor / "nbgrader_config.py", INSTRUCTOR_NBGRADER.format(
        lib=hub.lib, course=str(hub.course), exchange=str(hub.exchange)))


def _write(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o644)


def server_environment(hub: Hub, user: str) -> dict[str, str]:
    """The environment of `user`'s server (the spawner adds HOME, USER, SHELL)."""
    env = {"PATH": f"{hub.env / 'bin'}:/usr/local/bin:/usr/bin:/bin",
           "JUPYTER_PLATFORM_DIRS": "1", **ONE_THREAD}
    if user == hub.instructor:
        env.update(JUPYTER_CONFIG_PATH=str(hub.config("instructor")), PYTHONPATH=str(hub.lib),
                   GRADER_COURSE=str(hub.course), GRADER_EXCHANGE=str(hub.exchange))
    else:
        env.update(JUPYTER_CONFIG_PATH=str(hub.config("student")))
    return env
