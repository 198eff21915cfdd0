"""requirements/lock.txt installs on the oldest Python of every supported platform, and pins
exactly what is installed here.

pip resolves the lock (`make lock`) on whatever Python 3.11 the maintainer's machine has; a pin
whose release needs a later 3.11 than a platform ships fails there only, at `make demo`'s first
step (issue 60: soupsieve 4.1.2 needs 3.11.5, Debian 12 has 3.11.2). Each installed pinned
distribution's Requires-Python, read from its installed metadata, must admit each oldest Python.
"""

from __future__ import annotations

import importlib.metadata
import sys
import sysconfig
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

LOCK = Path(__file__).resolve().parent.parent / "requirements" / "lock.txt"

# The oldest Python 3.11 each platform the README supports installs from its own archive.
OLDEST_PYTHON = {
    "Debian 12 (bookworm: python3 3.11.2)": "3.11.2",
    "Ubuntu 22.04 (jammy-updates: python3.11 3.11.0)": "3.11.0",
}
# Installed, never pinned: the course itself (an editable install) and pip (the venv's own).
NOT_PINNED = {"attention-course", "pip"}


def pins() -> dict[str, str]:
    """The lock's pins: canonical name -> version."""
    out = {}
    for line in LOCK.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"lock.txt: {line!r} is not NAME==VERSION"
            out[canonicalize_name(name)] = version.strip()
    return out


def installed() -> dict[str, importlib.metadata.Distribution]:
    """The environment's distributions: those in its site-packages (not the copies that packages
    vendor and put on sys.path, as setuptools does with setuptools/_vendor)."""
    where = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    return {canonicalize_name(d.metadata["Name"]): d
            for d in importlib.metadata.distributions(path=where)}


def _local_free(version: str) -> Version:
    return Version(Version(version).public)  # torch's "+cpu" is not in the lock


@pytest.mark.parametrize("python", sorted(OLDEST_PYTHON.values()))
def test_pinned_releases_admit_the_oldest_python_of_each_platform(python):
    here = installed()
    refused = []
    for name in sorted(pins()):
        dist = here.get(name)
        if dist is None:
            continue  # test_lock_pins_exactly_what_is_installed says so
        requires = dist.metadata.get("Requires-Python")
        if requires and not SpecifierSet(requires).contains(python, prereleases=True):
            refused.append(f"{dist.metadata['Name']}=={dist.version} (Requires-Python {requires})")
    platforms = ", ".join(p for p, v in OLDEST_PYTHON.items() if v == python)
    assert not refused, (
        f"requirements/lock.txt pins releases that Python {python} ({platforms}) cannot install: "
        + "; ".join(refused) + ". Pin the newest release that admits it (pip index versions "
        "NAME; pip download --no-deps --python-version " + python + " NAME) and add the cap to "
        "requirements/python-floor.txt so that `make lock` keeps it.")


def test_lock_pins_exactly_what_is_installed():
    if sys.prefix == sys.base_prefix:
        pytest.skip("not in a virtual environment: the lock is checked against .venv")
    locked, here = pins(), installed()
    missing = sorted(f"{n}=={v}" for n, v in locked.items() if n not in here)
    other = sorted(f"{n}: lock {v}, installed {here[n].version}" for n, v in locked.items()
                   if n in here and _local_free(here[n].version) != Version(v))
    unpinned = sorted(f"{n}=={d.version}" for n, d in here.items()
                      if n not in locked and n not in NOT_PINNED)
    assert not (missing or other or unpinned), (
        "requirements/lock.txt and the installed environment differ (make reinstalls .venv when "
        f"the lock is newer than it):\n  pinned, not installed: {missing}\n  other versions: "
        f"{other}\n  installed, not pinned: {unpinned}")
