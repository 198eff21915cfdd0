"""One pinned environment: the lock, the venv, environment.yml and nbgrader's extension agree."""

import json
import re
import sys
from importlib import metadata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def lock() -> dict[str, str]:
    pins = {}
    for line in (REPO / "requirements" / "lock.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def test_lock_pins_the_required_versions():
    pins = lock()
    assert pins["torch"] == "2.13.0"
    assert pins["nbgrader"] == "0.9.6"
    assert pins["jupyterlab"].startswith("4.")
    assert pins["notebook"].startswith("7.")
    assert pins["ipywidgets"].startswith("8.")
    for name in ("matplotlib", "numpy", "nbclient", "pytest", "ruff"):
        assert name in pins, f"{name} is not pinned"


def test_installed_versions_match_the_lock():
    mismatched = {}
    for name, version in lock().items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            mismatched[name] = (version, "missing")
            continue
        if installed.split("+")[0] != version:  # torch's CPU wheel is 2.13.0+cpu
            mismatched[name] = (version, installed)
    assert not mismatched, f"(locked, installed): {mismatched}; run `make` again"


def test_environment_yml_uses_the_lock():
    text = (REPO / "environment.yml").read_text()
    assert "python=3.11" in text
    assert "-c requirements/lock.txt" in text
    assert "-e .[dev]" in text
    assert sys.version_info[:2] == (3, 11)


def test_nbgraders_jupyter_extensions_are_enabled():
    server = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.d" / "nbgrader.json"
    if not server.exists():
        pytest.fail(f"nbgrader's server extension config is missing: {server}")
    enabled = json.loads(server.read_text())["ServerApp"]["jpserver_extensions"]
    for part in ("formgrader", "assignment_list", "course_list", "validate_assignment"):
        assert enabled.get(f"nbgrader.server_extensions.{part}") is True, part
    labext = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "@jupyter" / "nbgrader"
    assert (labext / "package.json").exists(), f"nbgrader's JupyterLab extension missing: {labext}"
