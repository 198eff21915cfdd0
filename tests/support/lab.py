"""`grader lab` for the browser tests: JupyterLab started as `make lab` starts it
(grader.servers.lab), on one course, on loopback, without a token, with no user config or
kernels of this machine."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from grader.course import REPO
from tests.support.servers import free_port, stop


@contextlib.contextmanager
def running_lab(course_root: Path, tmp: Path, settings: dict | None = None,
                extra_args: tuple[str, ...] = ()):
    """Yields the server's URL once it answers; stops it afterwards. `settings`: JupyterLab
    settings to start with ({"plugin/file.jupyterlab-settings": values})."""
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
               JUPYTER_CONFIG_DIR=str(tmp / "config"),  # no user config or kernels of
               JUPYTER_DATA_DIR=str(tmp / "data"))  # this machine: the venv's python3 kernel
    if settings is not None:
        for name, values in settings.items():
            (tmp / "settings" / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / "settings" / name).write_text(json.dumps(values))
        env.update(JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"),
                   JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"))
    port = free_port()
    code = ("import sys; from pathlib import Path; from grader.course import Course; "
            "from grader.servers.lab import lab; "
            f"sys.exit(lab(Course(Path({str(course_root)!r})), sys.argv[1:], "
            f"config_dir=Path({str(tmp / 'nbgrader')!r})))")
    args = ["--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
            "--IdentityProvider.token=", "--ServerApp.password=", *extra_args]
    log = open(tmp / "lab.log", "w+")
    server = subprocess.Popen([sys.executable, "-c", code, *args], cwd=REPO, env=env,
                              stdout=log, stderr=subprocess.STDOUT)
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
        yield url
    finally:
        stop([server], 30)
        log.close()
