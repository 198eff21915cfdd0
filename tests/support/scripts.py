"""The repository's scripts that are no package's modules (bench/*.py, docs/*.py), loaded as
modules for their functions to be tested."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def script_module(path: Path) -> ModuleType:
    """The script at PATH, run as a module named after its file (and registered under that
    name, unless one is: a dataclass of it looks its module up)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(path.stem, module)
    spec.loader.exec_module(module)
    return module
