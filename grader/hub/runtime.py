"""The Python that the course's servers run: the student edition in a venv every user can read.

The students' servers (and the instructor's) run as their own Unix users, so their Python must
be one those users can execute: Debian's /usr/bin/python3.11, not a Python under /root. The venv
gets the pinned versions of requirements/lock.txt (with the few overrides Debian's Python needs,
requirements/hub-runtime.txt), jupyterhub-singleuser, and the student edition's wheel (the
grader without solutions, `make student-wheel`). It is rebuilt only when one of those changes.

The packages come from this project's own .venv, which holds the same pins, hard-linked (a few
seconds); the course itself and the overridden packages are left out and installed by pip.
Where that cannot be done (.venv on another file system), pip installs everything (a minute).
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import re
import shutil
import subprocess
import sys
import sysconfig
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
    replaced = _names(overrides)
    kept = [ln for ln in _pins(lock) if _names(ln).isdisjoint(replaced)]
    return "\n".join(kept + _pins(overrides)) + "\n"


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
    overrides = OVERRIDES.read_text()
    pins = constraints(LOCK.read_text(), overrides)
    hub_version = _installed_version("jupyterhub")
    stamp = hashlib.sha256(pins.encode() + _content(wheel) + hub_version.encode()).hexdigest()
    stamp_file = hub.env / ".course-runtime"
    if stamp_file.is_file() and stamp_file.read_text() == stamp:
        return hub.python
    shutil.rmtree(hub.env, ignore_errors=True)
    subprocess.run([str(BASE_PYTHON), "-m", "venv", "--without-pip", str(hub.env)], check=True)
    pins_file = hub.env / "constraints.txt"
    pins_file.write_text(pins)
    try:  # pip, too, comes from this venv
        _link_packages(Path(sys.prefix), hub.env, overridden=_names(overrides))
        _pip(hub, "--no-deps", "-c", str(pins_file), str(wheel), *_pins(overrides))
        log.info("the servers' Python in %s: this venv's packages, hard-linked", hub.env)
    except (OSError, RuntimeError) as e:  # another file system, say: install them anew
        log.info("installing the servers' Python into %s (a minute): %s", hub.env, e)
        shutil.rmtree(hub.env, ignore_errors=True)
        subprocess.run([str(BASE_PYTHON), "-m", "venv", str(hub.env)], check=True)
        pins_file.write_text(pins)
        _pip(hub, "-c", str(pins_file), str(wheel), f"jupyterhub=={hub_version}")
    _smoke_check(hub)
    stamp_file.write_text(stamp)
    return hub.python


def _link_packages(venv: Path, env: Path, overridden: set[str]) -> None:
    """Hard-link the packages of `venv` (this project's own .venv: the same pins, Python 3.11)
    into `env`, but the course itself and the `overridden` distributions: seconds, where
    unpacking and compiling them again takes a minute. Needs one file system (else OSError)."""
    from importlib.metadata import distributions

    if venv.resolve() == Path(sys.base_prefix).resolve():
        raise RuntimeError("the hub is not running from a venv")
    site = Path(sysconfig.get_path("purelib"))
    skip, kept_tops = set(), set()
    for dist in distributions(path=[str(site)]):
        files = [f for f in dist.files or () if ".." not in f.parts]
        name = dist.metadata["Name"].lower().replace("_", "-")
        if name == "attention-course" or name in overridden:
            skip |= {str(f) for f in files} | {f.parts[0] for f in files if len(f.parts) > 1}
        else:
            kept_tops |= {f.parts[0] for f in files if len(f.parts) > 1}
    skip -= kept_tops  # a folder another distribution shares (a namespace) is linked
    target = env / "lib" / "python3.11" / "site-packages"
    _link_tree(site, target, skip)
    for part in ("share", "etc"):
        if (venv / part).is_dir():
            _link_tree(venv / part, env / part, set())
    for script in (venv / "bin").iterdir():
        _copy_script(script, env / "bin" / script.name, venv / "bin", env / "bin")


def _link_tree(src: Path, dst: Path, skip: set[str]) -> None:
    for dirpath, dirnames, filenames in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        dirnames[:] = [d for d in dirnames if os.path.normpath(os.path.join(rel, d)) not in skip]
        os.makedirs(os.path.join(dst, rel), exist_ok=True)
        for name in filenames:
            relname = os.path.normpath(os.path.join(rel, name))
            out = os.path.join(dst, relname)
            if relname in skip or os.path.lexists(out):  # the venv's own pip stays
                continue
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                os.symlink(os.readlink(path), out)
            else:
                os.link(path, out)


def _copy_script(script: Path, out: Path, old_bin: Path, new_bin: Path) -> None:
    """A console script of the venv, its #! line pointing at the new one's python."""
    if out.exists() or script.is_symlink() or not script.is_file():
        return
    with open(script, "rb") as f:
        first = f.readline()
        if not first.startswith(b"#!" + bytes(old_bin)):
            return
        rest = f.read()
    out.write_bytes(b"#!" + bytes(new_bin) + first[2 + len(bytes(old_bin)):] + rest)
    out.chmod(0o755)


def _names(requirements: str) -> set[str]:
    """The normalised distribution names pinned in requirements text."""
    return {re.split(r"[=<>!~ ;\[]", p, maxsplit=1)[0].lower().replace("_", "-")
            for p in _pins(requirements)}


def _pins(requirements: str) -> list[str]:
    return [ln.strip() for ln in requirements.splitlines()
            if ln.strip() and not ln.startswith("#")]


def _pip(hub: Hub, *args: str) -> None:
    done = subprocess.run([str(hub.python), "-m", "pip", "install", "--quiet",
                           "--disable-pip-version-check", *args], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"pip install {' '.join(args)} into {hub.env} failed:\n"
                           + done.stderr[-3000:])


def _smoke_check(hub: Hub) -> None:
    """What every server needs imports, and `solutions` does not."""
    done = subprocess.run([str(hub.python), "-c", "import torch, nbgrader, jupyterhub, grader, "
                           "grader.checks, soupsieve, bs4; bs4.BeautifulSoup('<p class=a>', "
                           "'html.parser').select('p.a')\n"
                           "try:\n import solutions\nexcept ImportError: pass\n"
                           "else: raise SystemExit('solutions is importable')"],
                          capture_output=True, text=True, cwd="/")
    if done.returncode:
        raise RuntimeError(f"the servers' Python in {hub.env} does not work:\n{done.stderr}")


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


