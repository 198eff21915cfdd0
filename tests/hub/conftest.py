"""The course hub (`make hub`), for real: a JupyterHub on a free loopback port with its own
Unix users (an instructor and two students, named hubt-* or $HUB_TEST_NAME-*, so a demo hub on
this machine is never touched), set up by grader.hub.install exactly as `make hub` does, from a
fresh class each run (the test users and the hub's course state are removed first; the servers'
Python and the proxy are kept while up to date).

Needs root (users, servers as those users), bubblewrap, npm and setfacl (`make test` installs
them through `make hub-tools`); without them these tests skip, unless GRADER_REQUIRE_SERVICES=1
(CI), where they fail.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader.hub import command, install
from grader.hub.config import server_environment
from grader.hub.layout import MARKER, Hub, ServerLimits
from tests.support.servers import free_ports, stop, wait_for

LOGS = Path(__file__).resolve().parents[2] / "build" / "hub-test"


def pytest_collection_modifyitems(items):
    here = Path(__file__).parent
    for item in items:
        if item.path.is_relative_to(here) and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)


@dataclass
class RunningHub:
    hub: Hub
    passwords: dict[str, str]
    log: Path

    def run_as(self, user: str, *cmd: str, check: bool = True, input: str | None = None,
               timeout: float = 600) -> subprocess.CompletedProcess:
        """`cmd` as `user`, in their home, with their server's environment (what they would
        type in their server's terminal)."""
        home = pwd.getpwnam(user).pw_dir
        env = {**server_environment(self.hub, user), "HOME": home, "USER": user,
               "LOGNAME": user, "LANG": "C.UTF-8"}
        done = subprocess.run(["runuser", "-u", user, "--", "env", "-i",
                               *(f"{k}={v}" for k, v in env.items()), *cmd],
                              cwd=home, capture_output=True, text=True, input=input,
                              timeout=timeout)
        if check and done.returncode:
            raise AssertionError(f"{' '.join(cmd)} as {user} failed ({done.returncode}):\n"
                                 f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        return done

    def python_as(self, user: str, code: str, check: bool = True):
        return self.run_as(user, str(self.hub.python), "-c", code, check=check)


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "the hub needs root (Unix users, servers run as them)"
    for tool, package in (("bwrap", "bubblewrap"), ("npm", "npm"), ("setfacl", "acl"),
                          ("tini", "tini"), ("runuser", "util-linux")):
        if shutil.which(tool) is None:
            return f"{tool} is missing (apt-get install {package}; `make hub-tools`)"
    return None


def _remove_test_users(hub: Hub) -> None:
    for user in hub.users:
        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            continue
        assert entry.pw_gecos == MARKER, f"{user} is a real account; not removed"
        subprocess.run(["pkill", "-KILL", "-u", user], check=False)
        subprocess.run(["userdel", "--remove", user], check=False, capture_output=True)


def require_hub() -> None:
    """Skip (fail on CI) where a hub cannot run."""
    why = _missing()
    if why:
        if os.environ.get("GRADER_REQUIRE_SERVICES"):
            pytest.fail(f"the hub tests must run here: {why}")
        pytest.skip(why)


@contextlib.contextmanager
def started_hub(name: str):
    """A hub of a fresh class named `name` (its users NAME-teacher, NAME-ada, NAME-ben),
    set up as `make hub` does and running until the block ends."""
    port, hub_port, api_port = free_ports(3)
    # the default limits, but /tmp, /dev/shm and the exchange smaller: the tests fill them
    hub = Hub(root=Path(f"/srv/attention-course-{name}"), instructor=f"{name}-teacher",
              students=(f"{name}-ada", f"{name}-ben"), port=port, hub_port=hub_port,
              api_port=api_port, limits=ServerLimits(tmp="256M", shm="64M"),
              exchange_size="256M")
    _remove_test_users(hub)
    for part in ("state", "exchange", "instructor", "config"):
        shutil.rmtree(hub.root / part, ignore_errors=True)
    passwords = install(hub)
    with launched(hub, name) as (proc, log):
        try:
            yield RunningHub(hub, passwords, log)
        finally:
            stop([proc], 30)  # JupyterHub stops every server it started
            for user in hub.users:
                subprocess.run(["pkill", "-KILL", "-u", user], check=False)


@contextlib.contextmanager
def launched(hub: Hub, name: str):
    """JupyterHub for an installed `hub`, started as `make hub` starts it, its output in
    build/hub-test/jupyterhub-NAME.log; yields (process, log) once it answers. The caller stops
    it (a test of `hub --remove` lets the command do it); if it is still running when the
    block ends, it is killed."""
    LOGS.mkdir(parents=True, exist_ok=True)
    log = LOGS / f"jupyterhub-{name}.log"
    cmd, env = command(hub)
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=hub.state, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(f"{hub.url}/hub/health", 90, proc, log, "JupyterHub")
        yield proc, log
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


@pytest.fixture(scope="session")
def course_hub():
    require_hub()
    # two test runs at once: different names
    with started_hub(os.environ.get("HUB_TEST_NAME", "hubt")) as running:
        yield running
