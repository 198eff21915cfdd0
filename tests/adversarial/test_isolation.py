"""Isolation attacks (isolation_attacks.py) through `python -m grader autograde` and
`grader feedback`, in one batch with honest controls after them. Asserted: each attacker's
points, the controls' full marks, the batch ends, no process of the run survives, no file
outside the course changes, nothing reaches the grader's listeners, no secret of the grader's
environment appears in any feedback page, and every attempt is a flag in the class report."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest

from grader.course import REPO, Course
from tests.support.pages import flags_section

from .attacks import FULL, build
from .isolation_attacks import ANSWERS, Plant, isolation_attacks, turn_attacks

pytestmark = pytest.mark.slow

TAG = f"isolation-{os.getpid()}"
SECRET = f"planted-secret-{os.getpid()}-7f3a9c"


class Listener:
    """Sockets on the grader's side of the sandbox; records anything that reaches them."""

    def __init__(self, tmp: Path):
        self.received: list[str] = []
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.unix_path = tmp / "grader.sock"
        self.unix = socket.socket(socket.AF_UNIX)
        self.unix.bind(str(self.unix_path))
        self.unix.listen()
        os.chmod(self.unix_path, 0o777)  # reachable by `nobody`, if it could see it at all
        self.abstract_name = f"grader-test-{os.getpid()}"
        self.abstract = socket.socket(socket.AF_UNIX)
        self.abstract.bind("\0" + self.abstract_name)
        self.abstract.listen()
        self.open = True
        for sock in (self.udp, self.tcp, self.unix, self.abstract):
            sock.settimeout(0.2)
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock):
        while self.open:
            try:
                if sock.type == socket.SOCK_DGRAM:
                    data, _ = sock.recvfrom(100)
                    self.received.append(f"udp: {data!r}")
                else:
                    conn, _ = sock.accept()
                    self.received.append(f"connection to {sock.getsockname()!r}")
                    conn.close()
            except (TimeoutError, OSError):
                continue

    def close(self):
        self.open = False
        time.sleep(0.3)
        for sock in (self.udp, self.tcp, self.unix, self.abstract):
            sock.close()


def _digest(paths) -> dict[str, str]:
    out = {}
    for root in paths:
        for path in sorted(Path(root).rglob("*")) if Path(root).is_dir() else [Path(root)]:
            if path.is_file() and "__pycache__" not in path.parts:
                out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _sandbox_processes() -> set[int]:
    """Live processes of the run: tagged by its environment, or descended from this process
    (the test is a subreaper while the run lasts, so orphans of the run come back to it)."""
    parents, tagged = {}, set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            env = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        state, ppid = stat[stat.rindex(")") + 2:].split()[:2]
        if state == "Z":
            continue  # finished; only its exit status is left
        parents[int(pid)] = int(ppid)
        if f"GRADER_TEST_TAG={TAG}".encode() in env.split(b"\0"):
            tagged.add(int(pid))
    mine, me = set(), os.getpid()
    for pid in parents:
        seen, up = set(), pid
        while up in parents and up not in seen and up != me:
            seen.add(up)
            up = parents[up]
        if up == me and pid != me:
            mine.add(pid)
    return mine | tagged


def _subreaper() -> None:
    import ctypes

    ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def _describe(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200] + \
            " " + Path(f"/proc/{pid}/stat").read_text()[:120]
    except OSError:
        return "(gone)"


@pytest.fixture(scope="module")
def graded(own_class):
    mine = own_class("isolation")
    tmp, course = mine.root, mine.course
    outside = tmp / "outside"
    outside.mkdir()
    secret_file = outside / "instructor-notes.txt"
    secret_file.write_text(f"exam answers {SECRET}")
    reference_copy = outside / "select.py"
    shutil.copy(REPO / "solutions" / "select.py", reference_copy)
    listener = Listener(outside)
    plant = Plant(SECRET, secret_file, reference_copy, listener.udp.getsockname()[1],
                  listener.tcp.getsockname()[1], listener.unix_path, listener.abstract_name,
                  outside / "pwned.txt")
    suite = isolation_attacks(REPO, course.root, plant)
    for attack in suite:
        build(attack, mine.released, mine.folder(attack.name))
    watched = [REPO / "assignments", REPO / "solutions", REPO / "grader", outside]
    before = _digest(watched)
    env = {**os.environ, "GRADER_TEST_TAG": TAG, "PGPASSWORD": SECRET,
           "JUPYTERHUB_API_TOKEN": SECRET,
           "GRADER_DB_URL": f"postgresql://grader:{SECRET}@127.0.0.1/grades"}
    started = time.time()
    _subreaper()
    earlier = _sandbox_processes()  # sandboxes of other tests in this pytest process
    run = mine.autograde("--cell-timeout", "6", "--notebook-timeout", "60", "--memory", "3G",
                         "--workers", "2", timeout=1200, env=env)
    left = _sandbox_processes() - earlier
    for _ in range(50):  # a process being torn down is given a few seconds, no more
        if not left:
            break
        time.sleep(0.1)
        left &= _sandbox_processes()
    left = {pid: _describe(pid) for pid in left}
    feedback = mine.feedback(tmp / "pages", env=env)
    listener.close()
    status = mine.status()
    yield dict(course=course, suite=suite, run=run, status=status, left=left, tmp=tmp,
               plant=plant, feedback=feedback, before=before, after=_digest(watched),
               watched=watched, received=listener.received, started=started)


def _outputs(course: Course, student: str) -> str:
    nb = nbformat.read(course.autograded / student / "soft_select" / "soft_select.ipynb", 4)
    return "\n".join(str(o.get("text", "")) + str(o.get("evalue", ""))
                     for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_the_batch_ends_with_a_row_for_everyone(graded):
    run, status, suite = graded["run"], graded["status"], graded["suite"]
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert set(status) == {a.name for a in suite}


@pytest.mark.parametrize("name", [a.name for a in isolation_attacks(
    REPO, Path("/c"), Plant("", Path("/x"), Path("/x"), 0, 0, Path("/x"), "", Path("/x")))])
def test_points_and_flags(graded, name):
    attack = next(a for a in graded["suite"] if a.name == name)
    row = graded["status"][name]
    assert row["error"] is None, f"{name}: {row['error']}"
    assert row["auto_score"] == attack.points, (
        f"{name} ({attack.what}) scored {row['auto_score']}, expected {attack.points}\n"
        + _outputs(graded["course"], name)[-3000:])
    kinds = {f["kind"] for f in row["flags"]}
    assert attack.flags <= kinds, f"{name}: flags {kinds}, expected at least {attack.flags}"


def test_controls_came_last_and_kept_full_marks(graded):
    names = list(graded["status"])
    controls = [n for n in names if n.startswith("zz_")]
    assert controls and sorted(names)[-len(controls):] == sorted(controls)
    assert all(graded["status"][n]["auto_score"] == FULL for n in controls)


def test_no_process_of_the_run_survives(graded):
    assert not graded["left"], f"still alive after the run: {graded['left']}"


def test_no_file_outside_the_course_changed(graded):
    before, after = graded["before"], graded["after"]
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"changed outside the course: {changed[:10]}"
    assert not graded["plant"].pwned.exists(), "the daemon wrote outside its sandbox"
    alive = Path("/tmp/daemon-alive")
    assert not (alive.exists() and alive.stat().st_mtime >= graded["started"]), (
        "the daemon wrote to the machine's /tmp")


def test_nothing_reached_the_graders_sockets(graded):
    assert not graded["received"], graded["received"]


def test_no_secret_in_any_feedback_page_or_graded_notebook(graded):
    feedback = graded["feedback"]
    assert feedback.returncode == 0, feedback.stdout[-2000:] + feedback.stderr[-2000:]
    pages = sorted((graded["tmp"] / "pages").rglob("*.html"))
    assert len(pages) == len(graded["suite"]), [p.name for p in pages]
    course = graded["course"]
    for path in [*pages, *course.autograded.rglob("*.ipynb")]:
        text = path.read_text(errors="ignore")
        assert SECRET not in text, f"the planted secret is in {path}"
    environment = _outputs(course, "c2_environment")
    assert "HOME" in environment and "PATH" in environment, "the attacker's print did run"


def test_stolen_reference_never_ran(graded):
    for name in ("c2_read_files", "c2_answer_key", "c2_user_namespace", "c6_installed_files",
                 "c6_search_packages"):
        assert "STOLEN" not in _outputs(graded["course"], name), name
    assert "blocked" in _outputs(graded["course"], "c2_read_files")
    assert "USERNS refused" in _outputs(graded["course"], "c2_user_namespace")


def test_the_next_student_finds_a_clean_slate(graded):
    text = _outputs(graded["course"], "zz_control_clean_slate")
    seen = next(line for line in text.splitlines() if line.startswith("SEEN"))
    for leftover in ("left-behind", "daemon-alive", "sem."):
        assert leftover not in seen, seen


def test_requests_name_only_the_students_answers(graded):
    text = _outputs(graded["course"], "c4_log_requests")
    line = next(line for line in text.splitlines() if line.startswith("REQUESTS"))
    log = json.loads(line.removeprefix("REQUESTS"))
    asked = {name for op, name in log if op in ("op_get", "op_get_many")}
    assert asked, "the logger saw no request: the attack did not run as intended"
    assert asked <= set(ANSWERS), f"requests revealed names beyond the answers: {asked}"


def test_report_lists_every_attempt_in_plain_words(graded, tmp_path):
    flags = flags_section(graded["course"].root, "soft_select", tmp_path)
    for attack in graded["suite"]:
        if attack.flags:
            assert f"<td>{attack.name}</td>" in flags, f"{attack.name} missing from the report"
    assert "looks at processes through /proc" in flags


# ----- one sandbox, one student after another: nothing of one reaches the next ---------------

@pytest.fixture(scope="module")
def one_sandbox(own_class):
    """turn_attacks() graded with --workers 1: one grading process, one sandbox, the students
    one after another in the order of their names. A config file with a database URL is
    planted in the environment's etc/jupyter for the run (a name no Jupyter program loads)."""
    mine = own_class("turns")
    tmp, course = mine.root, mine.course
    suite = turn_attacks()
    for attack in suite:
        build(attack, mine.released, mine.folder(attack.name))
    planted = Path(sys.prefix, "etc", "jupyter", f"planted-by-isolation-test-{os.getpid()}.py")
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_text(f'c.CourseDirectory.db_url = "postgresql://grader:{SECRET}@db/grades"\n')
    try:
        run = mine.autograde("--cell-timeout", "6", "--notebook-timeout", "60", "--memory",
                             "3G", "--workers", "1", timeout=900,
                             env={**os.environ, "GRADER_TEST_TAG": TAG})
        feedback = mine.feedback(tmp / "pages", env=os.environ)
    finally:
        planted.unlink()
    status = mine.status()
    yield dict(course=course, suite=suite, run=run, status=status, feedback=feedback, tmp=tmp)


def _line(course: Course, student: str, start: str) -> str:
    return next((line.removeprefix(start).strip() for line in
                 _outputs(course, student).splitlines() if line.startswith(start)), "")


def test_one_sandbox_batch_scores(one_sandbox):
    """The attackers earn nothing (each would have had full marks had it found what it looked
    for), the controls after them full marks, in the order the students were graded."""
    run, status = one_sandbox["run"], one_sandbox["status"]
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert list(status) == sorted(status) == sorted(a.name for a in one_sandbox["suite"])
    for attack in one_sandbox["suite"]:
        row = status[attack.name]
        assert row["error"] is None, f"{attack.name}: {row['error']}"
        assert row["auto_score"] == attack.points, (
            f"{attack.name} scored {row['auto_score']}, expected {attack.points}\n"
            + _outputs(one_sandbox["course"], attack.name)[-3000:])
        assert attack.flags <= {f["kind"] for f in row["flags"]}, attack.name


def test_the_next_student_in_the_same_sandbox_finds_nothing_of_the_last(one_sandbox):
    course = one_sandbox["course"]
    attackers = ("t1_look_then_leave", "t2_look_then_leave")
    for name in attackers:
        made = _line(course, name, "MADE")
        assert "'shm': -1" not in made and "'msg': -1" not in made and "'sem': -1" not in made, (
            f"{name} could not make its IPC objects: {made}")
        assert "left-behind-file" in made, made
    sandboxes = {_line(course, name, "SANDBOX") for name in (*attackers,
                                                              "zz_control_finds_its_own")}
    assert len(sandboxes) == 1 and "" not in sandboxes, (
        f"the students were not graded in one sandbox ({sandboxes}): the test proves nothing")
    for name in attackers:  # (whichever came second looked after the first one left)
        assert _line(course, name, "FOUND") == "[]", name


def test_what_the_next_student_looks_for_is_found_within_one_turn(one_sandbox):
    """The control runs the first attack and then the second in its own turn: the search finds
    every kind of thing left (keys excepted: no student can make one), so its empty result
    after a sweep means something."""
    found = _line(one_sandbox["course"], "zz_control_finds_its_own", "FOUND")
    for kind in ("shm", "msg", "sem", "mqueue", "file", "socket", "lock", "process", "python"):
        assert f"{kind}: " in found, f"{kind} not found: {found}"


def test_no_student_can_make_a_key(one_sandbox):
    for name in ("t1_look_then_leave", "t2_look_then_leave"):
        made = _line(one_sandbox["course"], name, "MADE")
        assert "'keys': [-1, -1, -1, -1, -1, -1]" in made, made


def test_the_environments_configuration_is_out_of_reach(one_sandbox):
    course = one_sandbox["course"]
    assert _line(course, "t3_read_config", "CONFIG") == "[]"
    feedback = one_sandbox["feedback"]
    assert feedback.returncode == 0, feedback.stdout[-2000:] + feedback.stderr[-2000:]
    pages = sorted((one_sandbox["tmp"] / "pages").rglob("*.html"))
    assert len(pages) == len(one_sandbox["suite"]), [p.name for p in pages]
    for path in [*pages, *course.autograded.rglob("*.ipynb")]:
        assert SECRET not in path.read_text(errors="ignore"), f"the planted URL is in {path}"
