"""The sandbox a student's process lives in: bubblewrap (Debian's `bwrap`) and `setpriv`.

The grader starts one fork server (zygote.py) per grading process inside this sandbox; every
student's process is forked from it, so torch is imported once and the sandbox is built once.
What the sandbox gives (each is the kernel's, set up by bwrap, not by us):
- its own PID namespace (no process of the grader or of the machine is visible or signallable),
  network namespace (no network of any kind: no TCP, UDP or routes; only a loopback that is
  down), IPC and UTS namespaces, and a new mount namespace;
- a root filesystem made only of read-only binds of what Python needs (the interpreter, the
  venv, the `grader` package, /usr) and private tmpfs mounts for /tmp, /dev/shm and the scratch
  folder, each with a size limit, and the IPC namespace's POSIX message queues at /dev/mqueue
  (so that a sweep can find them: zygote.py), and the data folders the grader's environment
  names for the notebooks (data.py: $PYTHON_DOCS_SOURCES), read-only, at the same paths. The
  course, the gradebook, `solutions`, `assignments`, /root, /home and most of /etc simply do
  not exist in there, and the environment's configuration inside the bound folders is covered
  (config_paths);
- a minimal, explicit environment (nothing of the grader's: no database URL, no hub token;
  only the variables that name the data folders above);
- an unprivileged user: when the grader runs as root, `setpriv` drops to `nobody` with no
  capabilities, an empty bounding set and no_new_privs; otherwise bwrap runs as the invoking
  user in a new user namespace;
- no user namespaces of its own: a second, unprivileged bwrap (`--disable-userns`) starts the
  process, so student code cannot become "root" in a namespace it creates (`unshare -r`), which
  would open kernel code that only such a root reaches, a common road to privilege escalation.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from grader.sandbox import data
from grader.startup.threads import ONE_THREAD

log = logging.getLogger(__name__)

SANDBOX_UID = 65534  # nobody
SCRATCH = "/scratch"  # the student's working folder, inside the sandbox
# Variables a test run may pass through (a tag to find the run's processes; never a secret).
PASS_THROUGH = ("GRADER_TEST_TAG",)
# /etc files Python and its libraries read; everything else of /etc stays out.
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "fonts", "mime.types")
# The kernel's transparent huge page settings, the one part of /sys in the sandbox (read-only):
# glibc's malloc reads them before it asks for huge pages.
HUGE_PAGES = "/sys/kernel/mm/transparent_hugepage"
# Where the sandbox's IPC namespace shows its POSIX message queues (one file each).
MQUEUE = "/dev/mqueue"
# Places the sandbox makes its own (private mounts) or keeps out of sight: a data folder that
# is, or holds, one of them is not bound (data_folders).
OWN_PLACES = (SCRATCH, "/tmp", "/dev", "/dev/shm", MQUEUE, "/proc", "/sys", "/etc", "/run",
              "/var", "/home", "/root")
# In a Python prefix, what Python does not need to import the course's packages and a student
# must not read: the environment's configuration (etc: Jupyter's and nbgrader's site-wide
# config, which may hold a database URL; pip.conf), Jupyter's and the hub's data (kernels, the
# lab's settings, templates) and conda's record of the environment.
PREFIX_CONFIG = ("etc", "share/jupyter", "share/jupyterhub", "pip.conf", "conda-meta")
# /usr is bound whole: its own prefixes' configuration (a system Jupyter's, npm's) is covered too.
SYSTEM_PREFIXES = ("/usr", "/usr/local")


class IsolationUnavailable(RuntimeError):
    """The sandbox cannot be built on this machine; the message says why and what to do."""


@dataclass(frozen=True)
class Sizes:
    scratch_bytes: int = 256 * 2**20  # the student's working folder
    tmp_bytes: int = 64 * 2**20  # /tmp
    shm_bytes: int = 64 * 2**20  # /dev/shm


def environment() -> dict[str, str]:
    """The student's process's whole environment."""
    env = {"PATH": "/usr/bin:/bin", "HOME": SCRATCH, "TMPDIR": "/tmp", "LANG": "C.UTF-8",
           "USER": "student", "LOGNAME": "student", "MPLBACKEND": "Agg",
           "MPLCONFIGDIR": "/tmp/matplotlib", "IPYTHONDIR": "/tmp/ipython",
           "PYTHONDONTWRITEBYTECODE": "1", "NBGRADER_EXECUTION": "autograde", **ONE_THREAD}
    env.update({k: os.environ[k] for k in PASS_THROUGH if k in os.environ})
    # A data variable set to a folder that is not bound (not the data, or not allowed) is passed
    # as it is: the notebook then misses its data in the sandbox as the grader's side of it
    # does, rather than reading another copy (Debian's) that the grader's side never saw.
    env.update({v: os.path.abspath(os.environ[v]) for v in data.FOLDERS if os.environ.get(v)})
    env.update(data_folders())  # where the notebooks' data is: bound by command(), read-only
    return env


def readable_paths() -> list[str]:
    """Folders the sandbox binds read-only: the interpreter, its packages and `grader`."""
    import grader

    paths = {sys.base_prefix, sys.prefix, str(Path(grader.__file__).parent)}
    paths |= {p for p in sys.path if p and ("site-packages" in p or "dist-packages" in p)}
    paths = {os.path.realpath(p) for p in paths if os.path.isdir(p)} | {
        p for p in paths if os.path.isdir(p)}  # the path as seen, and where it really is
    outer = sorted(paths)
    return [p for p in outer if not any(p != q and p.startswith(q + "/") for q in outer)]


def data_folders() -> dict[str, str]:
    """{variable: folder}: the data folders the grader's environment names for the notebooks
    (data.shown(): the Python documentation's sources, say, where $PYTHON_DOCS_SOURCES points),
    less any that is or holds a place the sandbox makes or keeps out (OWN_PLACES): bound over
    it, the machine's own would show through."""
    return {variable: folder for variable, folder in data.shown().items()
            if not any(place == folder or place.startswith(folder.rstrip("/") + "/")
                       for place in OWN_PLACES)}


def data_paths() -> list[str]:
    """The data folders (data_folders): read-only in the sandbox, at the same paths, and
    readable under Landlock."""
    return sorted(set(data_folders().values()))


def hidden_paths() -> list[str]:
    """Folders inside the bound ones that the student must not see: the reference package
    (installed non-editable it sits in site-packages, beside `grader`) and the demo's answer
    key (grader/demo: the by-hand values and lines of the reference solutions)."""
    import grader

    hidden = [os.path.realpath(Path(grader.__file__).parent / "demo")]
    spec = importlib.util.find_spec("solutions")
    for location in (spec.submodule_search_locations or []) if spec else []:
        hidden.append(os.path.realpath(location))
    return [p for p in hidden if os.path.isdir(p)]


def config_paths() -> list[str]:
    """The environment's configuration inside the folders the sandbox binds (PREFIX_CONFIG of
    each Python prefix, as seen and where it really is, and of /usr and /usr/local); the
    sandbox covers each one (an empty, unreadable folder, or an empty file). A path with a link
    below its bound folder is left to its target (a link would lead the cover elsewhere)."""
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                *SYSTEM_PREFIXES}
    bound = [*readable_paths(), "/usr"]
    found = set()
    for prefix in prefixes | {os.path.realpath(p) for p in prefixes}:
        for name in PREFIX_CONFIG:
            path = os.path.join(prefix, name)
            root = next((b for b in bound if path.startswith(b + "/")), None)
            if root is not None and os.path.exists(path) and (
                    os.path.realpath(path) == os.path.realpath(root) + path[len(root):]):
                found.add(path)
    return sorted(found)


def _ancestors(path: str) -> list[str]:
    parts = Path(path).parts[1:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def command(argv: list[str], sizes: Sizes = Sizes(),
            env: dict[str, str] | None = None) -> list[str]:
    """The command line that runs `argv` inside the sandbox, in `env` (by default the students'
    environment())."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise IsolationUnavailable("bubblewrap (bwrap) is not installed; install Debian's "
                                   "package `bubblewrap`")
    cmd = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc",
           "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent", "--new-session",
           "--hostname", "sandbox", "--clearenv"]
    for key, value in (environment() if env is None else env).items():
        cmd += ["--setenv", key, value]
    # The writable places first: a folder bound later (a venv under /tmp, say) lands on them
    # instead of being hidden by them.
    cmd += ["--proc", "/proc", "--dev", "/dev"]
    for path, size in ((SCRATCH, sizes.scratch_bytes), ("/tmp", sizes.tmp_bytes),
                       ("/dev/shm", sizes.shm_bytes)):
        cmd += ["--perms", "1777", "--size", str(size), "--tmpfs", path]
    cmd += ["--mqueue", MQUEUE]
    cmd += ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        target = Path("/", name)
        if target.is_symlink():
            cmd += ["--symlink", os.readlink(target), f"/{name}"]
        elif target.is_dir():
            cmd += ["--ro-bind", str(target), f"/{name}"]
    for name in ETC:
        if Path("/etc", name).exists():
            cmd += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    made = {"/etc", "/usr", "/tmp", "/dev", "/proc", SCRATCH}
    if Path(HUGE_PAGES).is_dir():  # glibc reads it (grader.startup.huge_pages)
        _bind_read_only(cmd, made, HUGE_PAGES, "--ro-bind-try")
    readable = readable_paths()
    for path in readable:
        _bind_read_only(cmd, made, path)
    for path in data_paths():  # before the covers below: a cover wins over a data folder
        if not any(path == b or path.startswith(b + "/") for b in ["/usr", *readable]):
            _bind_read_only(cmd, made, path)
    for path in hidden_paths():
        cmd += ["--perms", "0000", "--tmpfs", path]
    for path in config_paths():
        if os.path.isdir(path):
            cmd += ["--perms", "0000", "--tmpfs", path]
        else:
            cmd += ["--ro-bind", "/dev/null", path]
    cmd += ["--chdir", SCRATCH, "--"]
    if os.geteuid() == 0:  # bwrap ran privileged: become nobody, for good, before Python starts
        cmd += [shutil.which("setpriv") or "setpriv", f"--reuid={SANDBOX_UID}",
                f"--regid={SANDBOX_UID}", "--clear-groups", "--inh-caps=-all",
                "--bounding-set=-all", "--no-new-privs", "--"]
    return cmd + _without_user_namespaces(bwrap) + argv


def _bind_read_only(cmd: list[str], made: set[str], path: str, how: str = "--ro-bind") -> None:
    """`path` bound read-only (`how`), after the folders above it that are not there yet."""
    for parent in _ancestors(path):
        if parent not in made:  # bwrap would make it 0700: unreadable for `nobody`
            cmd += ["--perms", "0755", "--dir", parent]
            made.add(parent)
    cmd += [how, path, path]
    made.add(path)


def _without_user_namespaces(bwrap: str) -> list[str]:
    """A second bwrap, run unprivileged inside the first, that changes nothing but forbids new
    user namespaces (bwrap offers that only with a user namespace of its own, which a bwrap run
    as root must not have: its user would be root outside). The same files and devices: the
    whole tree bound as it is (read-only binds stay read-only), /dev bound again so that its
    devices still open from the new user namespace."""
    uid = SANDBOX_UID if os.geteuid() == 0 else os.getuid()
    gid = SANDBOX_UID if os.geteuid() == 0 else os.getgid()
    return [bwrap, "--unshare-user", "--disable-userns", "--uid", str(uid), "--gid", str(gid),
            "--bind", "/", "/", "--dev-bind", "/dev", "/dev", "--die-with-parent",
            "--chdir", SCRATCH, "--"]


@functools.lru_cache(maxsize=1)
def probe() -> str | None:
    """None when the sandbox works here; otherwise why not (bwrap's own words)."""
    try:
        cmd = command([sys.executable, "-c", "import os; print(os.getuid())"])
    except IsolationUnavailable as e:
        return str(e)
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bwrap could not be started: {e}"
    if run.returncode != 0:
        return f"bwrap failed: {(run.stderr or run.stdout).strip()[-500:]}"
    if os.geteuid() == 0 and run.stdout.strip() != str(SANDBOX_UID):
        return f"the sandbox runs as uid {run.stdout.strip()}, not {SANDBOX_UID}"
    return None


def describe() -> str:
    user = "nobody" if os.geteuid() == 0 else f"uid {os.geteuid()} in a user namespace"
    return (f"bubblewrap namespaces (pid, net, ipc, uts, mount; no new user namespaces), "
            f"read-only binds without the environment's configuration, as {user}")
