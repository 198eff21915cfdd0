"""The course's people as real local Unix users: created once, each home readable by its owner
alone. Accounts that exist without our marker belong to someone else and are refused."""

from __future__ import annotations

import grp
import logging
import os
import pwd
import subprocess

from grader.hub.layout import GROUP_INSTRUCTORS, GROUP_STUDENTS, MARKER, Hub

log = logging.getLogger(__name__)


class NotOurs(RuntimeError):
    """A user name the hub wants is a real account on this machine."""


def ensure_group(name: str) -> int:
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        subprocess.run(["groupadd", "--system", name], check=True)
        return grp.getgrnam(name).gr_gid


def ensure_user(name: str, group: str) -> pwd.struct_passwd:
    """The account `name` (created with a home and its own group when missing), member of
    `group`, its home mode 0700."""
    try:
        user = pwd.getpwnam(name)
    except KeyError:
        log.info("creating the Unix user %s", name)
        subprocess.run(["useradd", "--create-home", "--user-group", "--shell", "/bin/bash",
                        "--comment", MARKER, name], check=True)
        user = pwd.getpwnam(name)
    if user.pw_gecos != MARKER:
        raise NotOurs(f"the Unix user {name!r} already exists and was not created by "
                      f"`make hub` (its comment is {user.pw_gecos!r}); choose other names "
                      "(python -m grader hub --instructor NAME --students A,B,C)")
    subprocess.run(["usermod", "--append", "--groups", group, name], check=True)
    os.chmod(user.pw_dir, 0o700)
    return user


def ensure_users(hub: Hub) -> dict[str, pwd.struct_passwd]:
    ensure_group(GROUP_STUDENTS)
    ensure_group(GROUP_INSTRUCTORS)
    users = {hub.instructor: ensure_user(hub.instructor, GROUP_INSTRUCTORS)}
    for student in hub.students:
        users[student] = ensure_user(student, GROUP_STUDENTS)
    return users
