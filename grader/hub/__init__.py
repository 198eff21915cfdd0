"""The course on JupyterHub, on one machine (`make hub`, `python -m grader hub`).

Real local Unix users for an instructor and students, PAM logins, each user's
server as their own process (students on the student edition), nbgrader's exchange between
them with modes that keep submissions, sources and the gradebook apart. Layout and modes:
grader.hub.layout. Needs root (it creates users and hands folders to them). Undone, all of it,
by grader.hub.remove (`python -m grader hub --remove`, `make hub-remove`).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

from grader.hub import folders
from grader.hub.layout import Hub

log = logging.getLogger(__name__)

PROXY_PACKAGE = Path(__file__).parent / "proxy"
CONFIG_FILE = Path(__file__).parent / "jupyterhub_config.py"


def install(hub: Hub) -> dict[str, str]:
    """Set everything up (again: each step keeps what is already right); returns the
    accounts {user: password}."""
    from grader.hub.accounts import ensure_accounts
    from grader.hub.config import write_role_configs
    from grader.hub.runtime import ensure_runtime
    from grader.hub.users import ensure_users

    if os.geteuid() != 0:
        raise RuntimeError("the hub needs root: it creates the course's Unix users and runs "
                           "each user's server as that user (sudo make hub)")
    if shutil.which("tini") is None:
        raise RuntimeError("tini is missing (apt-get install tini): each user's server runs "
                           "under it, so that the orphans its processes leave are reaped")
    os.umask(0o022)
    folders.make_dir(hub.root, 0, 0, 0o755)
    folders.make_dir(hub.state, 0, 0, 0o700)
    hub.save()
    users = ensure_users(hub)
    folders.deny_students_the_repository()
    ensure_proxy(hub)
    ensure_runtime(hub)
    write_role_configs(hub)
    folders.exchange(hub, users[hub.instructor])
    folders.instructor_area(hub, users[hub.instructor])
    return ensure_accounts(hub)


def ensure_proxy(hub: Hub) -> Path:
    """configurable-http-proxy from the npm registry, at the version package-lock.json pins."""
    if shutil.which("npm") is None:
        raise RuntimeError("npm is missing (apt-get install npm): JupyterHub's proxy, "
                           "configurable-http-proxy, installs from the npm registry")
    hub.proxy.mkdir(parents=True, exist_ok=True)
    lock = PROXY_PACKAGE / "package-lock.json"
    if hub.proxy_command.exists() and (hub.proxy / "package-lock.json").is_file() and \
            (hub.proxy / "package-lock.json").read_bytes() == lock.read_bytes():
        return hub.proxy_command
    for name in ("package.json", "package-lock.json"):
        shutil.copy(PROXY_PACKAGE / name, hub.proxy / name)
    subprocess.run(["npm", "ci", "--omit=dev", "--no-audit", "--no-fund", "--loglevel=error"],
                   cwd=hub.proxy, check=True)
    return hub.proxy_command


def command(hub: Hub) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that run JupyterHub for `hub` (cwd: hub.state)."""
    env = dict(os.environ, COURSE_HUB_ROOT=str(hub.root))
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([bin_dir, env.get("PATH", "")])
    return [sys.executable, "-m", "jupyterhub", "-f", str(CONFIG_FILE)], env
