"""`python -m grader hub --remove` undoes `make hub`: a hub set up under a test name, started,
a student's server running in it, removed through the CLI; then nothing of it is left on the
machine: no process, no user, no home, no control group, no mount, no folder, and the groups
and the checkout's ACL entry gone unless another hub's users still use them. Removing again
does nothing and succeeds.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from grader.course import REPO
from grader.hub import install
from grader.hub.layout import GROUP_INSTRUCTORS, GROUP_STUDENTS, Hub
from grader.hub.remove import remove
from tests.hub.conftest import launched, require_hub
from tests.support.servers import free_ports

pytestmark = pytest.mark.slow


def members(group: str) -> set[str]:
    try:
        return set(grp.getgrnam(group).gr_mem)
    except KeyError:
        return set()


def processes_of(uids: set[int]) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid in uids:
                    found.append(int(entry.name))
            except FileNotFoundError:
                pass
    return found


def cgroup_folders(name: str) -> list[str]:
    return [top for top, dirs, _ in os.walk("/sys/fs/cgroup") if name in dirs]


def acl_groups(path: Path) -> set[str]:
    out = subprocess.run(["getfacl", "--omit-header", str(path)], capture_output=True,
                         text=True, check=True).stdout
    return {line.split(":")[1] for line in out.splitlines() if line.startswith("group:")}


def start_student_server(hub: Hub, user: str, password: str) -> None:
    """Log in as `user` (the hub's login form) and wait for their server."""
    s = requests.Session()
    page = s.get(f"{hub.url}/hub/login", timeout=30)
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page.text)
    r = s.post(f"{hub.url}/hub/login", timeout=180,
               data={"username": user, "password": password,
                     "_xsrf": xsrf.group(1) if xsrf else ""})
    assert r.ok, (r.status_code, r.text[:300])
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:  # the hub's own word on their server
        me = s.get(f"{hub.url}/hub/api/user", timeout=30)
        if me.ok and me.json().get("servers", {}).get("", {}).get("ready"):
            return
        time.sleep(1)
    raise AssertionError(f"{user}'s server did not start")


def test_remove_leaves_nothing_of_the_hub():
    require_hub()
    name = os.environ.get("HUB_REMOVE_TEST_NAME", "hubrm")
    port, hub_port, api_port = free_ports(3)
    hub = Hub(root=Path(f"/srv/attention-course-{name}"), instructor=f"{name}-teacher",
              students=(f"{name}-ada",), port=port, hub_port=hub_port, api_port=api_port,
              exchange_size="64M")
    remove(hub)  # what an earlier run may have left
    passwords = install(hub)
    uids = {pwd.getpwnam(user).pw_uid for user in hub.users}
    others = (members(GROUP_STUDENTS) | members(GROUP_INSTRUCTORS)) - set(hub.users)
    try:
        with launched(hub, name) as (proc, _):
            student = hub.students[0]
            start_student_server(hub, student, passwords[student])
            assert processes_of(uids), "no server running as the hub's users"
            assert cgroup_folders(hub.root.name), "the student's server has no control group"
            if hub.exchange_size:
                assert os.path.ismount(hub.exchange)

            done = subprocess.run([sys.executable, "-m", "grader", "hub", "--remove", "--root",
                                   str(hub.root)], capture_output=True, text=True, timeout=300,
                                  cwd=REPO)
            assert done.returncode == 0, done.stdout + done.stderr
            assert proc.wait(timeout=60) is not None  # JupyterHub stopped
    except BaseException:
        remove(hub)  # the test failed: nothing of it left behind all the same
        raise

    left = {
        "users": [u for u in hub.users if _exists(pwd.getpwnam, u)],
        "homes": [u for u in hub.users if Path("/home", u).exists()],
        "processes": processes_of(uids),
        "control groups": cgroup_folders(hub.root.name),
        "mount": os.path.ismount(hub.exchange),
        "folder": hub.root.exists(),
        "in the groups": (members(GROUP_STUDENTS) | members(GROUP_INSTRUCTORS))
        & set(hub.users),
    }
    assert not any(left.values()), f"left behind: {left}\n{done.stdout}"
    if others:  # another hub on this machine still has users in the groups: kept for them
        assert _exists(grp.getgrnam, GROUP_STUDENTS) and GROUP_STUDENTS in acl_groups(REPO), \
            f"the group or its ACL entry removed while {others} still use them"
    else:
        assert not _exists(grp.getgrnam, GROUP_STUDENTS)
        assert not _exists(grp.getgrnam, GROUP_INSTRUCTORS)
        assert GROUP_STUDENTS not in acl_groups(REPO)
        assert not [g for g in acl_groups(REPO) if g.isdigit()], "a dangling ACL entry"

    again = subprocess.run([sys.executable, "-m", "grader", "hub", "--remove", "--root",
                            str(hub.root)], capture_output=True, text=True, timeout=120,
                           cwd=REPO)
    assert again.returncode == 0 and "nothing" in again.stdout, again.stdout + again.stderr


def _exists(lookup, name: str) -> bool:
    try:
        lookup(name)
        return True
    except KeyError:
        return False
