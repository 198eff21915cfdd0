"""The Python that the course's servers run: the student edition in a venv every user can read.

The students' servers (and the instructor's) run as their own Unix users, so their Python must
be one those users can execute: Debian's /usr/bin/python3.11, not a Python under /root. The venv
gets the pinned versions of requirements/lock.txt (with the few overrides Debian's Python needs,
requirements/hub-runtime.txt), jupyterhub-singleuser, and the student edition's wheel (the
grader without solutions, `make student-wheel`). It is rebuilt only when one of those changes.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

from grader.course import REPO
from grader.hub.layout import Hub

log = logging.getLogger(__name__)

BASE_PYTHON = Path("/usr/bin/python3.11")
LOCK = REPO / "requirements" / "lock.txt"
OVERRIDES = REPO / "requirements" / "hub-runtime.txt"


def constraints(lock: str, overrides: str) -> str:
    """The lock's pins with each package of `overrides` pinned as there instead."""
    def name(line: str) -> str:
        return re.split(r"[=<>!~ ;\[]", line, maxsplit=1)[0].lower().replace("_", "-")

    pins = [ln for ln in overrides.splitlines() if ln.strip() and not ln.startswith("#")]
    replaced = {name(ln) for ln in pins}
    kept = [ln for ln in lock.splitlines()
            if ln.strip() and not ln.startswith("#") and name(ln) not in replaced]
    return "\n".join(kept + pins) + "\n"


def student_wheel(to: Path) -> Path:
    """Build the student edition's wheel the documented way (`make student-wheel`) and copy it
    into `to`; a lock keeps two hubs set up at once from rebuilding it under each other."""
    dist = REPO / "build" / "dist"
    dist.mkdir(parents=True, exist_ok=True)
    with open(dist.parent / ".student-wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run(["make", "-s", "student-wheel"], cwd=REPO, check=True)
        wheels = sorted(dist.glob("attention_course-*.whl"))
        if len(wheels) != 1:
            raise RuntimeError(f"expected one student wheel in {dist}, found {len(wheels)}")
        to.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy(wheels[0], to / wheels[0].name))


def ensure_runtime(hub: Hub) -> Path:
    """Create or update hub.env; returns its python."""
    if not os.access(BASE_PYTHON, os.X_OK):
        raise RuntimeError(f"{BASE_PYTHON} is missing: the hub's servers run on Debian's "
                           "Python 3.11 (apt-get install python3.11-venv)")
    wheel = student_wheel(hub.root / "wheel")
    pins = constraints(LOCK.read_text(), OVERRIDES.read_text())
    hub_version = _installed_version("jupyterhub")
    stamp = hashlib.sha256(pins.encode() + _content(wheel) + hub_version.encode()).hexdigest()
    stamp_file = hub.env / ".course-runtime"
    if stamp_file.is_file() and stamp_file.read_text() == stamp:
        return hub.python
    log.info("installing the servers' Python into %s (first time: a few minutes)", hub.env)
    shutil.rmtree(hub.env, ignore_errors=True)
    subprocess.run([str(BASE_PYTHON), "-m", "venv", str(hub.env)], check=True)
    pins_file = hub.env / "constraints.txt"
    pins_file.write_text(pins)
    done = subprocess.run([str(hub.python), "-m", "pip", "install", "--quiet",
                           "--disable-pip-version-check", "-c", str(pins_file), str(wheel),
                           f"jupyterhub=={hub_version}"], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"installing the servers' Python into {hub.env} failed:\n"
                           + done.stderr[-3000:])
    stamp_file.write_text(stamp)
    return hub.python


def _content(wheel: Path) -> bytes:
    """The wheel's files and their bytes: a rebuilt wheel of the same code (new zip dates)
    gives the same value."""
    with zipfile.ZipFile(wheel) as z:
        digest = hashlib.sha256()
        for name in sorted(z.namelist()):
            digest.update(name.encode() + b"\0" + z.read(name))
    return digest.digest()


def _installed_version(dist: str) -> str:
    """The version of `dist` the hub itself runs (singleuser servers must match it)."""
    from importlib.metadata import version

    return version(dist)


