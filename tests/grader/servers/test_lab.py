"""`make lab`: JupyterLab starts on the course with nbgrader's formgrader answering."""

import os
import shutil
import subprocess
import sys
import urllib.request

import pytest

from grader.course import REPO
from tests.support.servers import free_port, wait_for

pytestmark = pytest.mark.slow


def get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read().decode(errors="replace")


def test_lab_serves_the_course_with_formgrader(tmp_path):
    course = REPO / "build" / "test-lab-course"  # formgrader needs it below the server root
    shutil.rmtree(course, ignore_errors=True)
    port = free_port()
    log = open(tmp_path / "lab.log", "w+")
    cmd = [sys.executable, "-m", "grader", "--course", str(course), "lab",
           "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
           "--IdentityProvider.token=", "--ServerApp.password="]
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
    lab = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(f"{base}/api/status", 30, lab, tmp_path / "lab.log", "JupyterLab")
        status, page = get(f"{base}/lab")
        assert status == 200 and "JupyterLab" in page
        status, page = get(f"{base}/formgrader")
        assert status == 200, "nbgrader's formgrader is not enabled"
        status, listing = get(f"{base}/api/contents/assignments")
        assert "self_attention" in listing, "the server should be rooted at the repository"
    finally:
        lab.terminate()
        lab.wait(timeout=20)
    log.seek(0)
    output = log.read()
    assert "/usr/local/share/nbgrader/exchange" not in output, output[-2000:]
    assert (course / "source").is_symlink()
    assert "not a subdirectory of the notebook server root" not in output
