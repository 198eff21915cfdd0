"""nbgrader imported for a grading command, without its Jupyter server extensions' imports.

nbgrader's package `__init__` imports its four server extensions (the assignment list, the
course list, assignment validation and the formgrader) so that a Jupyter server can load them,
and with them jupyter_server, tornado and their handlers: about 0.3 s of CPU, on the path of
every grading command, which runs no server (bench/autograde_class.py's start-up breakdown,
"the command"). `import_nbgrader` imports the package with a stand-in for each extension whose
load function imports the real one and calls it, so that a server loading nbgrader from this
process still gets the real extensions. The stand-ins leave sys.modules as soon as the package
is imported: any later import of an extension gets the real module.
"""

from __future__ import annotations

import importlib
import sys
import types

EXTENSIONS = ("assignment_list", "course_list", "validate_assignment", "formgrader")


def import_nbgrader() -> None:
    """Import nbgrader without its server extensions (nothing to do once it is imported)."""
    if "nbgrader" in sys.modules:
        return
    stand_ins = {name: _stand_in(name) for name in
                 (f"nbgrader.server_extensions.{e}" for e in EXTENSIONS)}
    sys.modules.update(stand_ins)
    try:
        import nbgrader  # noqa: F401
    finally:
        for name, module in stand_ins.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]


def _stand_in(name: str) -> types.ModuleType:
    module = types.ModuleType(name, f"Stands in for {name} while nbgrader is imported.")

    def load_jupyter_server_extension(app):
        return importlib.import_module(name).load_jupyter_server_extension(app)

    module.load_jupyter_server_extension = load_jupyter_server_extension
    return module
