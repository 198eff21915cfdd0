"""Attacks by a student, as that student's Unix user on the hub (what their server's terminal or
a notebook cell can do): they cannot read or change a classmate's submission, the source
notebooks, the gradebook, the hub's passwords or the reference solutions; a submission made in
a classmate's name is refused, and a forged early time does not make a late submission on time.
What a student makes in the exchange by hand is out of a classmate's reach; a student's server
hits its own limits (memory, tasks, /tmp, /dev/shm) while a classmate's still answers; a
student changing their submission while it is collected costs only them.

The class here works on soft_select, through nbgrader's own command line as each student (the
browser walkthrough, test_walkthrough.py, uses self_attention), so the two never share state.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import pwd
import signal
import subprocess
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from grader.course import REPO
from grader.sandbox.cgroup import NamedCgroup
from tests.hub.terminal import Terminal
from tests.hub.test_servers import logged_in

ASSIGNMENT = "soft_select"


def attempt(course_hub, user: str, code: str) -> str:
    """Run `code` as `user` (with a `try_(label, fn)` helper that prints what happened) and
    return {label: "ok" or the exception's name}."""
    prelude = textwrap.dedent('''
        import json, os
        results = {}
        def try_(label, fn):
            try:
                fn()
                results[label] = "ok"
            except Exception as e:
                results[label] = type(e).__name__
    ''')
    done = course_hub.python_as(user, prelude + textwrap.dedent(code) +
                                "\nprint(json.dumps(results))")
    return json.loads(done.stdout.strip().splitlines()[-1])


def inbound_of(course_hub, student: str) -> list[Path]:
    inbound = course_hub.hub.course_exchange / "inbound"
    return sorted(p for p in inbound.glob(f"{student}+{ASSIGNMENT}+*"))


@pytest.fixture(scope="module")
def submitted(course_hub):
    """Both students fetched and submitted soft_select; the instructor collected it."""
    h = course_hub
    nbgrader = str(h.hub.env / "bin" / "nbgrader")
    h.run_as(h.hub.instructor, str(h.hub.python), "-m", "grader", "release", ASSIGNMENT,
             "--publish")
    for student in h.hub.students:
        h.run_as(student, nbgrader, "fetch_assignment", ASSIGNMENT, check=False)
        home = Path(os.path.expanduser(f"~{student}"))
        assert (home / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file(), f"{student} fetched nothing"
        h.run_as(student, nbgrader, "submit", ASSIGNMENT)
        assert inbound_of(h, student), f"{student}'s submission is not in the exchange"
    h.run_as(h.hub.instructor, str(h.hub.python), "-m", "grader", "collect", ASSIGNMENT)
    return h


def test_a_classmate_submission_cannot_be_read_listed_changed_or_removed(submitted):
    ada, ben = submitted.hub.students
    theirs = inbound_of(submitted, ben)[-1]  # the exact name, which ada could never list
    inbound = theirs.parent
    results = attempt(submitted, ada, f'''
        theirs, inbound = {str(theirs)!r}, {str(inbound)!r}
        try_("list inbound", lambda: os.listdir(inbound))
        try_("list their folder", lambda: os.listdir(theirs))
        try_("read their notebook", lambda: open(theirs + "/{ASSIGNMENT}.ipynb").read())
        try_("read their secret", lambda: open(theirs + "/submission_secret.txt").read())
        try_("add a file", lambda: open(theirs + "/extra.ipynb", "w").write("{{}}"))
        try_("rename it", lambda: os.rename(theirs, inbound + "/moved"))
        try_("remove it", lambda: os.rmdir(theirs))
        try_("read their home", lambda: os.listdir(os.path.expanduser("~{ben}")))
    ''')
    assert results == {
        "list inbound": "PermissionError", "list their folder": "PermissionError",
        "read their notebook": "PermissionError", "read their secret": "PermissionError",
        "add a file": "PermissionError", "rename it": "PermissionError",
        "remove it": "PermissionError", "read their home": "PermissionError"}
    # ... while the instructor can, and the student can read their own
    own = inbound_of(submitted, ada)[-1]
    mine = attempt(submitted, ada, f'''
        try_("read my notebook", lambda: open({str(own)!r} + "/{ASSIGNMENT}.ipynb").read())''')
    assert mine == {"read my notebook": "ok"}
    teacher = attempt(submitted, submitted.hub.instructor, f'''
        try_("read ben's notebook", lambda: open({str(theirs)!r} + "/{ASSIGNMENT}.ipynb").read())
        try_("list inbound", lambda: os.listdir({str(inbound)!r}))''')
    assert teacher == {"read ben's notebook": "ok", "list inbound": "ok"}


def test_sources_gradebook_passwords_and_released_copies_are_out_of_reach(submitted):
    hub, (ada, _) = submitted.hub, submitted.hub.students
    paths = {
        "the source notebook (instructor's copy)":
            hub.lib / "assignments" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
        "the course's source link": hub.course / "source" / ASSIGNMENT,
        "the source notebook (repository)": REPO / "assignments" / ASSIGNMENT,
        "the gradebook": hub.course / "gradebook.db",
        "the collected copies": hub.course / "submitted",
        "the hub's passwords": hub.accounts_file,
        "the hub's database": hub.state / "jupyterhub.sqlite",
    }
    results = attempt(submitted, ada, "\n".join(
        f"try_({label!r}, lambda: open({str(p)!r}).read() if os.path.isfile({str(p)!r}) "
        f"else os.listdir({str(p)!r}))" for label, p in paths.items()))
    assert results == {label: "PermissionError" for label in paths}, results
    for label, path in paths.items():  # they exist: the denials are real
        assert path.exists(), f"{label} ({path}) does not exist; the attack proves nothing"

    writes = attempt(submitted, ada, f'''
        out = {str(hub.course_exchange / "outbound" / ASSIGNMENT)!r}
        try_("replace the released notebook", lambda: open(out + "/{ASSIGNMENT}.ipynb", "w"))
        try_("add to outbound", lambda: open(out + "/../mine.ipynb", "w"))
        try_("list the feedback folder", lambda: os.listdir(out + "/../../feedback"))''')
    assert writes == {"replace the released notebook": "PermissionError",
                      "add to outbound": "PermissionError",
                      "list the feedback folder": "PermissionError"}


def _solution_lines(hub) -> set[str]:
    """Lines of the reference solutions that no released notebook contains: finding one of
    them in a file would mean the solutions leaked."""
    released = "".join(p.read_text() for p in (hub.course / "release").glob("*/*.ipynb"))
    lines = set()
    for path in (REPO / "solutions").glob("*.py"):
        for line in path.read_text().splitlines():
            line = line.strip()
            if len(line) > 40 and not line.startswith(("#", '"""', "def ", "class ")) and \
                    line not in released:
                lines.add(line)
    return lines


def test_the_solutions_are_nowhere_a_student_can_read(submitted):
    hub, (ada, _) = submitted.hub, submitted.hub.students
    markers = sorted(_solution_lines(hub))
    assert len(markers) > 20
    results = attempt(submitted, ada, f'''
        import importlib.util
        try_("import solutions", lambda: __import__("solutions"))
        try_("read the repository's", lambda: os.listdir({str(REPO / "solutions")!r}))
        try_("read the instructor's copy", lambda: os.listdir({str(hub.lib / "solutions")!r}))
        # every file this student can read below the hub, the homes and the repository, but
        # the third-party packages of the runtime (torch has lines like ours; the course's own
        # packages in site-packages are searched)
        markers = {markers!r}
        found = []
        for top in ({str(hub.root)!r}, "/home", {str(REPO)!r}):
            for dirpath, dirnames, filenames in os.walk(top):
                if dirpath.endswith("site-packages"):
                    dirnames[:] = [d for d in dirnames if d.startswith(("grader", "attention"))]
                for name in filenames:
                    path = os.path.join(dirpath, name)
                    if not name.endswith((".py", ".ipynb", ".json", ".txt", ".html")):
                        continue
                    try:
                        if os.path.getsize(path) > 4_000_000:
                            continue
                        text = open(path, errors="replace").read()
                    except OSError:
                        continue
                    if any(m in text for m in markers):
                        found.append(path)
        results["files with solution lines"] = found
    ''')
    assert results["import solutions"] == "ModuleNotFoundError"
    assert results["read the repository's"] == "PermissionError"
    assert results["read the instructor's copy"] == "PermissionError"
    assert results["files with solution lines"] == []
    # the search itself works: the instructor, who may, finds them in their copy
    teacher = submitted.python_as(hub.instructor, f'''
import os
markers = {markers!r}
print(sum(any(m in open(os.path.join(d, f)).read() for m in markers)
          for d, _, fs in os.walk({str(hub.lib / "solutions")!r}) for f in fs if f.endswith(".py")))
''')
    assert int(teacher.stdout.strip()) >= 3


def test_a_submission_in_a_classmates_name_is_refused(submitted):
    h = submitted
    ada, ben = h.hub.students
    before = json.loads((h.hub.course / "collected" / f"{ASSIGNMENT}.json").read_text())
    inbound = h.hub.course_exchange / "inbound"
    forged = f"{ben}+{ASSIGNMENT}+2099-01-01 00:00:00.000000 UTC+forged"
    h.python_as(ada, f'''
import os, shutil
dest = {str(inbound / forged)!r}
os.mkdir(dest)
shutil.copy(os.path.expanduser("~/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"), dest)
open(dest + "/timestamp.txt", "w").write("2099-01-01 00:00:00.000000 UTC")
''')
    out = h.run_as(h.hub.instructor, str(h.hub.python), "-m", "grader", "collect", ASSIGNMENT)
    assert f"REFUSED {forged}: it names {ben} but belongs to {ada}" in out.stdout
    after = json.loads((h.hub.course / "collected" / f"{ASSIGNMENT}.json").read_text())
    assert after["students"][ben]["folder"] == before["students"][ben]["folder"], \
        "the forged folder replaced ben's own submission"
    assert {r["folder"] for r in after["refused"]} == {forged}


def test_a_forged_early_time_does_not_make_a_late_submission_on_time(submitted):
    h = submitted
    ada, _ = h.hub.students
    due = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")
    h.run_as(h.hub.instructor, str(h.hub.python), "-m", "grader", "release", ASSIGNMENT,
             "--due", due)
    # after the due date, a submission whose folder name and timestamp.txt say 2020
    old = "2020-01-01 00:00:00.000000 UTC"
    h.python_as(ada, f'''
import os, shutil
dest = {str(h.hub.course_exchange / "inbound")!r} + "/{ada}+{ASSIGNMENT}+{old}+early"
os.mkdir(dest)
shutil.copy(os.path.expanduser("~/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"), dest)
open(dest + "/timestamp.txt", "w").write("{old}")
''')
    h.run_as(h.hub.instructor, str(h.hub.python), "-m", "grader", "collect", ASSIGNMENT)
    record = json.loads((h.hub.course / "collected" / f"{ASSIGNMENT}.json").read_text())
    taken = record["students"][ada]
    assert taken["folder"].endswith("+early"), "the latest submission (by the file system) "
    assert taken["time"] > due and not taken["time"].startswith("2020"), taken
    collected = (h.hub.course / "submitted" / ada / ASSIGNMENT / "timestamp.txt").read_text()
    assert collected == taken["time"]
    assert "2020" not in (h.hub.course / "submitted" / ada / ASSIGNMENT / "timestamp.txt"
                          ).read_text()


def test_a_submission_its_owner_made_unreadable_costs_only_its_owner(submitted):
    h = submitted
    ada, ben = h.hub.students
    before = json.loads((h.hub.course / "collected" / f"{ASSIGNMENT}.json").read_text())
    h.python_as(ada, f'''
import os, shutil
dest = {str(h.hub.course_exchange / "inbound")!r} + "/{ada}+{ASSIGNMENT}+locked+x"
os.mkdir(dest)
os.mkdir(dest + "/sub")
shutil.copy(os.path.expanduser("~/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"), dest)
os.chmod(dest + "/sub", 0)
os.chmod(dest, 0)
''')
    out = h.run_as(h.hub.instructor, str(h.hub.python), "-m", "grader", "collect", ASSIGNMENT)
    after = json.loads((h.hub.course / "collected" / f"{ASSIGNMENT}.json").read_text())
    assert "cannot be opened" in after["students"][ada]["error"], after["students"][ada]
    assert after["students"][ben] == before["students"][ben]
    assert "1 could not be" in out.stdout


# ----- what a student makes in the exchange by hand --------------------------------------------

MADE_BY_HAND = r'''
set -e
umask 000  # as careless as can be: everything asks for rwx for all
I={inbound}; EX={exchange}
rm -rf ~/made ~/moved && mkdir -p ~/made/sub
echo mine > ~/made/answer.txt; echo mine > ~/made/sub/answer.txt; chmod -R 777 ~/made
# moved in, a copy (the exchange is a file system of its own) that keeps its modes: a
# folder made with the usual umask (one made world-writable on purpose would stay so)
(umask 022; mkdir -p ~/moved/sub; echo mine > ~/moved/answer.txt
 echo mine > ~/moved/sub/answer.txt)
mkdir $I/{ada}+{asg}+bymkdir $I/{ada}+{asg}+bymkdir/sub
echo mine > $I/{ada}+{asg}+bymkdir/answer.txt; echo mine > $I/{ada}+{asg}+bymkdir/sub/answer.txt
chmod -R 777 $I/{ada}+{asg}+bymkdir  # her own chmod, after the fact
cp -r ~/made $I/{ada}+{asg}+bycp
tar -C ~/made -cf ~/made.tar . && mkdir $I/{ada}+{asg}+bytar
tar -C $I/{ada}+{asg}+bytar -xpf ~/made.tar
mv ~/moved $I/{ada}+{asg}+bymv
mkdir $EX/{ada}-things $EX/{ada}-things/sub
echo mine > $EX/{ada}-things/answer.txt; echo mine > $EX/{ada}-things/sub/answer.txt
chmod -R 777 $EX/{ada}-things
'''


def test_a_folder_a_student_makes_by_hand_in_the_exchange_is_out_of_a_classmates_reach(
        course_hub):
    h = course_hub
    ada, ben = h.hub.students
    inbound, exchange = h.hub.course_exchange / "inbound", h.hub.exchange
    h.run_as(ada, "bash", "-c", MADE_BY_HAND.format(inbound=inbound, exchange=exchange, ada=ada,
                                                     asg=ASSIGNMENT))
    folders = {how: inbound / f"{ada}+{ASSIGNMENT}+{how}" for how in
               ("bymkdir", "bycp", "bytar", "bymv")}
    folders["in the exchange root"] = exchange / f"{ada}-things"
    for how, folder in folders.items():
        assert (folder / "sub" / "answer.txt").is_file(), f"{how}: ada made nothing"
    results = attempt(h, ben, "\n".join(f'''
top = {str(folder)!r}
try_("{how}: add a file", lambda: open(top + "/extra.txt", "x").close())
try_("{how}: add a file below", lambda: open(top + "/sub/extra.txt", "x").close())
try_("{how}: add a folder", lambda: os.mkdir(top + "/more"))
try_("{how}: change a file", lambda: open(top + "/answer.txt", "a").write("ben was here"))
try_("{how}: change a file below", lambda: open(top + "/sub/answer.txt", "w").close())
try_("{how}: remove a file", lambda: os.unlink(top + "/answer.txt"))
try_("{how}: rename a file", lambda: os.rename(top + "/answer.txt", top + "/x.txt"))
try_("{how}: open it up", lambda: os.chmod(top, 0o777))
try_("{how}: remove the folder", lambda: os.rmdir(top + "/sub"))''' for how, folder in
                                     folders.items()))
    assert results and all(v == "PermissionError" for v in results.values()), \
        {k: v for k, v in results.items() if v != "PermissionError"}
    reads = attempt(h, ben, "\n".join(f'''
try_("{how}", lambda: open({str(folder / "answer.txt")!r}).read())'''
                                      for how, folder in folders.items() if how != "bymv"))
    assert reads == {how: "PermissionError" for how in folders if how != "bymv"}, reads
    # nothing was changed, and what ada made is still hers and, in inbound, the instructor's
    # to read (collect needs it)
    for how, folder in folders.items():
        assert (folder / "answer.txt").read_text() == "mine\n", how
        assert sorted(p.name for p in folder.iterdir()) == ["answer.txt", "sub"], how
    mine = attempt(h, ada, f'''
try_("change her own", lambda: open({str(folders["bymkdir"] / "answer.txt")!r}, "a").write(""))''')
    assert mine == {"change her own": "ok"}
    teacher = attempt(h, h.hub.instructor, "\n".join(f'''
try_("{how}", lambda: open({str(folders[how] / "sub" / "answer.txt")!r}).read())'''
                                                     for how in ("bymkdir", "bycp", "bytar")))
    assert teacher == {"bymkdir": "ok", "bycp": "ok", "bytar": "ok"}, teacher
    # and the instructor's folders take nothing of a student's
    outside = attempt(h, ben, f'''
course = {str(h.hub.course_exchange)!r}
try_("a folder in outbound", lambda: os.mkdir(course + "/outbound/mine"))
try_("a folder in feedback", lambda: os.mkdir(course + "/feedback/mine"))
try_("a folder in the course", lambda: os.mkdir(course + "/mine"))''')
    assert outside == {"a folder in outbound": "PermissionError",
                       "a folder in feedback": "PermissionError",
                       "a folder in the course": "PermissionError"}
    for folder in folders.values():
        h.run_as(ada, "rm", "-rf", str(folder))


# ----- one student's server cannot starve the others -----------------------------------------

HOG = r'''
import errno, json, os, time
out, start = {}, time.monotonic()
def fill(folder):
    """20 MiB files into folder until it is full (or 2 GiB, which no limit here allows)."""
    written = 0
    try:
        while written < 2048:
            with open(f"{folder}/fill-{written}", "wb") as f:
                f.write(os.urandom(1 << 20) * 20)
            written += 20
    except OSError as e:
        out[folder + " error"] = e.errno
    out[folder + " MiB"] = written
for folder in ("/tmp", "/dev/shm"):
    fill(folder)
    for name in os.listdir(folder):
        if name.startswith("fill-"):
            os.unlink(f"{folder}/{name}")
open("/tmp/ada-was-here", "w").write("secret")
pid = os.fork()
if pid == 0:  # memory, 64 MiB at a time, up to 8 GiB
    chunks = [b"x" * (64 << 20) for _ in range(128)]
    os._exit(0)
_, status = os.waitpid(pid, 0)
out["hog"] = os.WIFSIGNALED(status) and os.WTERMSIG(status)
out["hog done"] = time.monotonic() - start
forks = 0
try:  # a fork bomb that holds: every child sleeps
    while forks < 100_000:
        if os.fork() == 0:
            time.sleep(45)
            os._exit(0)
        forks += 1
except OSError as e:
    out["fork error"] = e.errno
out["forks"] = forks
out["forks done"] = time.monotonic() - start
json.dump(out, open(os.path.expanduser("~/hog.json.new"), "w"))
os.rename(os.path.expanduser("~/hog.json.new"), os.path.expanduser("~/hog.json"))
'''


def test_a_students_server_hits_its_limits_and_the_others_still_answer(course_hub):
    h, limits = course_hub, course_hub.hub.limits
    ada, ben = h.hub.students
    hub = h.hub
    home = Path(os.path.expanduser(f"~{ada}"))
    result = home / "hog.json"
    result.unlink(missing_ok=True)
    (home / "hog.py").write_text(HOG)
    sessions = {user: logged_in(h, user) for user in (ada, ben)}
    terminals = {user: Terminal(s, hub.url, user) for user, s in sessions.items()}
    group = NamedCgroup(f"{hub.root.name}/{ada}", 2 * 2**30, limits.tasks, limits.cpus)
    before = group.tasks()
    try:
        status, shown = terminals[ada].run(f"cd ~ && {hub.python} hog.py", timeout=180)
        assert result.exists(), f"the attack did not finish ({status}): {shown[-2000:]}"
        out = json.loads(result.read_text())
        # ... and while ada's fork bomb holds every task she may have, ben's server answers
        start = time.monotonic()
        r = sessions[ben].get(f"{hub.url}/user/{ben}/api/status", timeout=30)
        answered = time.monotonic() - start
        status, listing = terminals[ben].run(f"ls -a /tmp /dev/shm && {hub.python} -c 'print(6*7)'",
                                             timeout=30)
        assert limits.memory == "2G"  # the default, which the group is opened with again
        held = len(group.members())
        # hog.py has exited: its sleeping children are orphans, each handed to a parent
        parents = {_parent(pid) for pid in group.members() if _runs(pid, "hog.py")}
    finally:
        for t in terminals.values():
            t.close()
        after = _end_the_attack(group, "hog.py", before)
    assert r.status_code == 200 and answered < 10, (r.status_code, answered)
    assert status == 0 and "42" in listing, listing
    assert "ada-was-here" not in listing, "ben sees ada's /tmp"
    assert not os.path.exists("/tmp/ada-was-here"), "ada's /tmp is the machine's"
    # each limit held: the writes stopped at the size of her /tmp and /dev/shm, the memory hog
    # was killed by the kernel, the forks stopped below the task limit
    mib = 2**20
    assert out["/tmp error"] == errno.ENOSPC and out["/tmp MiB"] <= 256 + 20, out
    assert out["/dev/shm error"] == errno.ENOSPC and out["/dev/shm MiB"] <= 64 + 20, out
    assert out["hog"] == signal.SIGKILL, out
    assert group.oom_kills() >= 1
    assert out["fork error"] == errno.EAGAIN and 0 < out["forks"] < limits.tasks, out
    assert held > out["forks"] * 0.9, "the fork bomb's children were not in ada's group"
    assert group.limits()["pids"] == str(limits.tasks)
    assert int(group.limits()["memory"]) == 2 * 1024 * mib  # ServerLimits' default, "2G"
    assert group.limits()["cpu"].split()[0] == "100000"  # one CPU's worth (of 100000 us)
    # and the orphans' parent is her server's tini, in her own group, not the machine's first
    # process: in many containers that reaps nothing, and each dead child would stay a zombie
    # counted against ada's task limit until her server could start no thread (seen in CI)
    assert parents and all(p in group.members() for p in parents), (parents, group.members())
    # so once the attack's processes are gone, so is their charge
    # (her server's thread pools may have grown by a thread or two meanwhile)
    assert after <= before + 8, f"ada's group holds {after} tasks, {before} before the attack"


def _end_the_attack(group: NamedCgroup, script: str, before: int) -> int:
    """Kill the attack's processes (its sleeping fork bomb holds every task of the student's
    group for 45 s), and only those: the student's server stays up for the tests after this
    one, which use the same hub and student. Returns the group's task count once they are
    gone and it is back to about `before` (or after 30 s)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        attack = [pid for pid in group.members() if _runs(pid, script)]
        for pid in attack:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if not attack and group.tasks() <= before + 8:
            break
        time.sleep(0.2)
    return group.tasks()


def _parent(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next(int(line.split()[1]) for line in status.splitlines()
                if line.startswith("PPid:"))


def _runs(pid: int, script: str) -> bool:
    try:
        return script.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


# ----- a student racing collect ------------------------------------------------------------------

RACER = r"""
import os, random, shutil, sys, time
top, until = sys.argv[1], time.monotonic() + float(sys.argv[2])
while time.monotonic() < until:  # files removed, put back, replaced by folders and links
    name = f"{top}/f{random.randrange(1500)}.txt"
    try:
        r = random.random()
        if r < 0.4:
            os.unlink(name)
        elif r < 0.7:
            open(name, "w").write("again")
        elif r < 0.85:
            os.mkdir(name + ".d")
        else:
            shutil.rmtree(name + ".d", ignore_errors=True)
            os.symlink("/etc/hostname", name + ".d")
    except OSError:
        pass
"""


def test_a_student_changing_their_submission_during_collect_costs_only_them(submitted):
    h = submitted
    ada, ben = h.hub.students
    folder = h.hub.course_exchange / "inbound" / f"{ada}+{ASSIGNMENT}+racing+x"
    h.python_as(ada, f"""
import os, shutil
os.mkdir({str(folder)!r})
shutil.copy(os.path.expanduser("~/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"), {str(folder)!r})
for i in range(1500):
    open({str(folder)!r} + f"/f{{i}}.txt", "w").write("x")
""")
    before = json.loads((h.hub.course / "collected" / f"{ASSIGNMENT}.json").read_text())
    home = pwd.getpwnam(ada).pw_dir
    (Path(home) / "racer.py").write_text(RACER)
    racer = subprocess.Popen(["runuser", "-u", ada, "--", str(h.hub.python),
                              f"{home}/racer.py", str(folder), "300"], cwd=home,
                             start_new_session=True)
    errors, runs = [], 0
    try:
        while runs < 8:
            runs += 1
            out = h.run_as(h.hub.instructor, str(h.hub.python), "-m", "grader", "collect",
                           ASSIGNMENT)  # exits 0, or the test fails here
            record = json.loads((h.hub.course / "collected" / f"{ASSIGNMENT}.json").read_text())
            assert record["students"][ben] == before["students"][ben], out.stdout
            theirs = record["students"][ada]
            assert theirs["folder"] == folder.name, theirs
            if "error" in theirs:
                errors.append(theirs["error"])
                assert "1 could not be" in out.stdout, out.stdout
                if len(errors) >= 2:
                    break
    finally:
        os.killpg(racer.pid, signal.SIGKILL)  # runuser and the racer it started
        racer.wait()
        h.run_as(ada, "rm", "-rf", str(folder))
    assert errors, f"in {runs} collects, the race never hit (the test proves nothing)"
    assert all(f"{ada}'s submission changed while it was taken in" in e for e in errors), errors


def test_what_a_student_writes_into_the_exchange_is_bounded_by_its_file_system(course_hub):
    h = course_hub
    ada, _ = h.hub.students
    exchange = h.hub.exchange
    assert os.path.ismount(exchange), "the exchange is not a file system of its own"
    done = h.python_as(ada, f'''
import errno, json, os
written, error = 0, None
try:
    with open({str(exchange / "filler")!r}, "wb") as f:
        while written < 2048:  # MiB: far past the exchange's 256
            f.write(b"x" * (1 << 20))
            written += 1
        f.flush()
        os.fsync(f.fileno())
except OSError as e:
    error = e.errno
print(json.dumps({{"MiB": written, "error": error}}))
''')
    out = json.loads(done.stdout.strip().splitlines()[-1])
    try:
        assert out["error"] == errno.ENOSPC and out["MiB"] <= 256, out
        assert os.stat(exchange).st_dev != os.stat(h.hub.root).st_dev
        assert os.statvfs(exchange).f_blocks * os.statvfs(exchange).f_frsize <= 256 * 2**20
    finally:
        h.run_as(ada, "rm", "-f", str(exchange / "filler"))
    assert not (exchange / "filler").exists()
