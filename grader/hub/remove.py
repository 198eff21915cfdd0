"""Undo `make hub` (`python -m grader hub --remove`, `make hub-remove`): everything it made on
this machine, and nothing else.

In order: JupyterHub and its proxy stopped (their pid files in state/), every process of the
hub's users ended, their control groups removed, the exchange's file system unmounted, the
users removed with their homes (only accounts that carry `make hub`'s marker), the groups of
students and instructors with the ACL entry on the checkout once no member is left (another
hub on this machine may still use them), and the hub's folder. Each step does nothing when its
part is already gone: running it twice is the same as once.
"""

from __future__ import annotations

import grp
import logging
import os
import pwd
import shutil
import signal
import subprocess
import time
from pathlib import Path

from grader.course import REPO
from grader.hub.layout import GROUP_INSTRUCTORS, GROUP_STUDENTS, MARKER, Hub
from grader.sandbox import cgroup

log = logging.getLogger(__name__)


def remove(hub: Hub, repo: Path = REPO) -> list[str]:
    """Remove `hub` (the one saved in its root, when there is one); returns what was done, one
    line each."""
    if os.geteuid() != 0:
        raise RuntimeError("removing the hub needs root (sudo make hub-remove)")
    saved = hub.root / "state" / "hub.json"
    if saved.is_file():  # the hub's own record of its users (kept until the very end)
        hub = Hub.load(hub.root)
        ours = [user for user in hub.users if _ours(user)]
    elif hub.root.exists() and any(hub.root.iterdir()):
        raise RuntimeError(f"{hub.root} holds no hub (no state/hub.json); not removed")
    else:  # removed before: whose users the names on the command line are is not known
        ours = []
    done: list[str] = []
    for name in ("jupyterhub.pid", "proxy.pid"):
        if _stop(hub.state / name):
            done.append(f"stopped {name.removesuffix('.pid')}")
    for user in ours:
        subprocess.run(["pkill", "-KILL", "-u", user], check=False)
    for path in _cgroups(hub.root.name):
        _remove_cgroup(path)
        done.append(f"removed the control group {path}")
    if os.path.ismount(hub.exchange):
        subprocess.run(["umount", str(hub.exchange)], check=True)
        done.append(f"unmounted {hub.exchange}")
    for user in ours:
        _userdel(user)
        done.append(f"removed the user {user} and their home")
    for group in (GROUP_STUDENTS, GROUP_INSTRUCTORS):
        if _unused(group):
            if group == GROUP_STUDENTS and _has_acl(repo, group):
                subprocess.run(["setfacl", "-x", f"g:{group}", str(repo)], check=True)
                done.append(f"removed the ACL entry of {group} on {repo}")
            subprocess.run(["groupdel", group], check=True)
            done.append(f"removed the group {group}")
    if hub.root.exists():
        shutil.rmtree(hub.root)
        done.append(f"removed {hub.root}")
    return done


def _stop(pid_file: Path, seconds: float = 30) -> bool:
    """SIGTERM to the process of pid_file (JupyterHub then stops the servers it started);
    True when one was running. A pid file left by a hub that died names whatever process has
    that number now: only JupyterHub or its proxy is stopped."""
    try:
        pid = int(pid_file.read_text().strip())
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
        if b"jupyterhub" not in command and b"configurable-http-proxy" not in command:
            return False
        os.kill(pid, signal.SIGTERM)
    except (FileNotFoundError, ValueError, ProcessLookupError):
        return False
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)
    return True


def _ours(user: str) -> bool:
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return False
    if entry.pw_gecos != MARKER:
        log.warning("the Unix user %s was not made by `make hub`: left as it is", user)
        return False
    return True


def _userdel(user: str) -> None:
    for _ in range(20):  # userdel refuses while a process of the user is still exiting
        done = subprocess.run(["userdel", "--remove", user], capture_output=True, text=True)
        if done.returncode in (0, 6):  # 6: no such user
            return
        subprocess.run(["pkill", "-KILL", "-u", user], check=False)
        time.sleep(0.5)
    raise RuntimeError(f"userdel {user} failed: {done.stderr.strip()}")


def _unused(group: str) -> bool:
    """The group exists and no user is in it."""
    try:
        entry = grp.getgrnam(group)
    except KeyError:
        return False
    return not entry.gr_mem and all(u.pw_gid != entry.gr_gid for u in pwd.getpwall())


def _has_acl(path: Path, group: str) -> bool:
    done = subprocess.run(["getfacl", "--omit-header", str(path)], capture_output=True,
                          text=True)
    return done.returncode == 0 and any(line.startswith(f"group:{group}:")
                                        for line in done.stdout.splitlines())


def _cgroups(prefix: str) -> list[Path]:
    """The hub's folders in every cgroup hierarchy (grader.hub.spawner makes PREFIX/USER below
    the hub's own group, which may be any)."""
    found = []
    for top, dirs, _ in os.walk(cgroup.ROOT):
        if prefix in dirs:
            found.append(Path(top) / prefix)
            dirs.remove(prefix)
    return found


def _remove_cgroup(path: Path) -> None:
    """Kill what is left in each group below path (children first), then remove them."""
    for top, _, _ in sorted(os.walk(path), key=lambda entry: -len(entry[0])):
        procs = Path(top) / "cgroup.procs"
        if (Path(top) / "freezer.state").exists():  # a frozen process cannot die
            (Path(top) / "freezer.state").write_text("THAWED")
        for _ in range(50):
            pids = [int(p) for p in procs.read_text().split()] if procs.exists() else []
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        os.rmdir(top)
