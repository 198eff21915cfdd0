"""`make lab`: JupyterLab on the course with nbgrader's extension pointed at build/course."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from grader.course import DEFAULT_COURSE, REPO, Course
from grader.servers import lab_style

CONFIG = '''\
# Written by `python -m grader lab`; regenerated on every start.
from pathlib import Path

from grader.course import Course
from grader.nbgrader.config import nbgrader_config

c = get_config()  # noqa: F821
c.merge(nbgrader_config(Course(Path({root!r}))))
# The assignment list (the student's side): "Fetch" puts a copy here, not in the repository.
c.Exchange.assignment_dir = {student!r}
'''

SERVER_EXTENSIONS = {
    "ServerApp": {"jpserver_extensions": {"grader.servers.formgrader_policy": True}}}


def student_dir(course: Course) -> Path:
    """Where the assignment list fetches to: build/student for the course in build/course."""
    return course.root.parent / "student"


def write_config(course: Course = DEFAULT_COURSE, folder: Path | None = None) -> Path:
    """A Jupyter config folder whose nbgrader_config.py points the extension at `course`."""
    course.prepare()
    folder = folder or REPO / "build" / "jupyter"
    folder.mkdir(parents=True, exist_ok=True)
    student_dir(course).mkdir(parents=True, exist_ok=True)  # the assignment list needs it
    (folder / "nbgrader_config.py").write_text(
        CONFIG.format(root=str(course.root), student=str(student_dir(course))))
    # The formgrader's submission pages get their Content-Security-Policy from our server
    # extension (grader/servers/formgrader_policy.py); Jupyter reads extensions enabled here.
    extensions = folder / "jupyter_server_config.d"
    extensions.mkdir(exist_ok=True)
    # and JupyterLab loads the grader's custom.css (Validate's long messages wrap)
    server = {"ServerApp": {"jpserver_extensions": {
        **SERVER_EXTENSIONS["ServerApp"]["jpserver_extensions"], **lab_style.EXTENSION}}}
    (extensions / "grader.json").write_text(json.dumps(server, indent=1))
    (folder / "jupyter_lab_config.json").write_text(json.dumps(lab_style.LAB, indent=1))
    return folder


def release_for_students(course: Course = DEFAULT_COURSE) -> list[str]:
    """Release every assignment whose student version (course/release/) is missing or older
    than its source notebooks, and publish it to the course's exchange, where the assignment
    list finds it; return the names released."""
    from grader.course import COURSE_ID
    from grader.nbgrader.config import setup_process
    from grader.nbgrader.release import publish, release

    setup_process()
    released = []
    for assignment in course.assignments():
        sources = list((course.source / assignment).glob("*.ipynb"))
        copies = list((course.release / assignment).glob("*.ipynb"))
        outbound = course.exchange / COURSE_ID / "outbound" / assignment
        if len(copies) < len(sources) or (
                min(p.stat().st_mtime for p in copies) < max(p.stat().st_mtime for p in sources)):
            release(course, assignment)
            released.append(assignment)
            publish(course, assignment)
        elif not outbound.exists():
            publish(course, assignment)
    return released


def lab(course: Course = DEFAULT_COURSE, extra_args: list[str] | None = None,
        config_dir: Path | None = None) -> int:
    """Run JupyterLab until it stops. config_dir: where to write the nbgrader config (default
    build/jupyter; the browser tests use their own, so they never change the instructor's)."""
    if not course.root.resolve().is_relative_to(REPO):
        raise ValueError(f"the course directory {course.root} must be inside {REPO}: nbgrader's "
                         "formgrader only works on a course below the server's root")
    folder = write_config(course, config_dir)
    released = release_for_students(course)
    if released:
        print(f"Student versions released to {course.release}: {', '.join(released)}")
    env = dict(os.environ)
    # JUPYTER_CONFIG_PATH adds our folder in front of the usual ones (user settings still apply).
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(
        p for p in (str(folder), env.get("JUPYTER_CONFIG_PATH")) if p)
    env.setdefault("JUPYTER_PLATFORM_DIRS", "1")
    cmd = [sys.executable, "-m", "jupyter", "lab", f"--ServerApp.root_dir={REPO}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # containers and CI often run as root
        cmd.append("--ServerApp.allow_root=True")
    cmd += extra_args or []
    print(f"JupyterLab on {REPO} (nbgrader course: {course.root}); Ctrl-C to stop.", flush=True)
    # Become the server (exec), rather than wait for it as a child: whoever stops this process
    # (Ctrl-C, a test's terminate()) stops JupyterLab and its kernels, and nothing is orphaned.
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(cmd[0], cmd, env)
    return 0  # not reached
