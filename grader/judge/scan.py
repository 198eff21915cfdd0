"""Read a submission's code, without running it, for things an instructor should look at.

These are flags for a person to review, not penalties: a flagged submission is graded like any
other (the sandbox already stops the attempts from working).
"""

from __future__ import annotations

import ast
import functools

# (what the code mentions, why an instructor may want to look)
_MODULES = {
    "solutions": "imports the reference solutions",
    "ctypes": "uses ctypes (raw memory access)",
    "gc": "inspects the garbage collector (looking for the grader's objects?)",
    "inspect": "inspects the call stack",
    "subprocess": "starts other programs",
    "socket": "opens network connections",
    "importlib": "imports modules by name at run time",
    "nbgrader": "imports nbgrader",
    "multiprocessing": "starts processes",
    "signal": "changes signal handling",
    "_multiprocessing": "uses process-pool primitives (semaphores)",
    "mmap": "maps memory or files directly",
}
_CALLS = {
    "os._exit": "exits the process (os._exit)",
    "sys.exit": "exits the notebook (sys.exit)",
    "os.fork": "forks the process",
    "os.kill": "sends signals",
    "os.killpg": "sends signals",
    "os.setsid": "detaches processes into a new session",
    "os.getenv": "reads environment variables",
    "os.system": "runs shell commands",
    "sys.settrace": "installs a tracer",
    "sys.setprofile": "installs a profiler hook",
    "sys.addaudithook": "installs an audit hook",
    "__import__": "imports modules by name at run time",
    "exec": "runs code built from strings (exec)",
    "eval": "runs code built from strings (eval)",
    "compile": "compiles code at run time",
    "setattr": "changes attributes by name (setattr)",
    "get_ipython": "reaches into the notebook kernel",
}
_PATCHABLE = {"torch", "np", "numpy", "F", "nn", "builtins", "sys", "os", "math", "grader",
              "IPython", "expect_close", "expect_shape", "checks"}
_SECRET_WORDS = ("solutions", "assignments", "source", "gradebook", "autograded", "release")
# Places outside the student's folder, named in a string: what the code may be after.
_PLACES = {"/proc": "looks at processes through /proc", "/dev/shm": "uses shared memory "
           "(/dev/shm)", "/etc/": "reads system files (/etc)", "/tmp": "uses /tmp",
           "/var/run": "looks for system sockets (/var/run)", "/run/": "looks for system "
           "sockets (/run)", "/root": "looks in /root", "/home": "looks in /home"}


def _dotted(node) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def scan(source: str) -> list[str]:
    """Reasons to look at this code (empty when nothing stands out)."""
    return list(_reasons(source))


@functools.lru_cache(maxsize=4096)  # a class's notebooks share most of their cells' text
def _reasons(source: str) -> tuple[str, ...]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ()
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [
                node.module or ""]
            for name in names:
                why = _MODULES.get(name.split(".")[0])
                if why:
                    found.append(why)
        elif isinstance(node, ast.Call):
            why = _CALLS.get(_dotted(node.func))
            if why:
                found.append(why)
            if _dotted(node.func) == "open" and node.args:
                text = ast.unparse(node.args[0])
                if any(w in text for w in _SECRET_WORDS):
                    found.append(f"opens a course file ({text})")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [
                node.target]
            for target in targets:
                name = _dotted(target)
                if "." in name and name.split(".")[0] in _PATCHABLE:
                    found.append(f"replaces {name}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found += [why for place, why in _PLACES.items() if place in node.value]
        elif isinstance(node, ast.Attribute) and _dotted(node) in ("os.environ", "os.environb"):
            found.append("reads environment variables")
        elif isinstance(node, ast.Global) and "__builtins__" in node.names:
            found.append("changes __builtins__")
        elif isinstance(node, ast.Name) and node.id in ("__builtins__", "__subclasses__"):
            found.append(f"uses {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr in ("__subclasses__", "__globals__",
                                                               "__code__", "f_back", "f_globals"):
            found.append(f"uses {node.attr}")
    return tuple(dict.fromkeys(found))
