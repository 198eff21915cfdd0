"""Attacks by a student, as that student's Unix user on the hub (what their server's terminal or
a notebook cell can do): they cannot read or change a classmate's submission, the source
notebooks, the gradebook, the hub's passwords or the reference solutions; a submission made in
a classmate's name is refused, and a forged early time does not make a late submission on time.

The class here works on soft_select, through nbgrader's own command line as each student (the
browser walkthrough, test_walkthrough.py, uses self_attention), so the two never share state.
"""

from __future__ import annotations

import json
import os
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from grader.course import REPO

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
