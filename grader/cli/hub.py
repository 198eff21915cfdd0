"""`python -m grader hub` (`make hub`, as root): the course on JupyterHub on this machine, or
undone (grader.hub)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from grader.cli.common import DONE, add_command


def add_parser(sub) -> argparse.ArgumentParser:
    s = add_command(sub, "hub", "(root) the course on JupyterHub on this machine: Unix users, "
                                "accounts, nbgrader's exchange (make hub)", course=False)
    s.add_argument("--root", default="/srv/attention-course",
                   help="where the hub lives (default: %(default)s)")
    s.add_argument("--port", type=int, default=8000,
                   help="on 127.0.0.1 (default: %(default)s)")
    s.add_argument("--instructor", default="instructor",
                   help="the instructor's user name (default: %(default)s)")
    s.add_argument("--students", default="alice,bob,carol",
                   help="the demo students' user names, comma-separated (default: %(default)s)")
    s.add_argument("--setup-only", action="store_true", help="set up, do not start the hub")
    s.add_argument("--remove", action="store_true",
                   help="undo everything `make hub` did for the hub in --root: stop it, remove "
                        "its users, groups, ACL entry, exchange and folder (make hub-remove)")
    return s


def run(args) -> int:
    from grader.hub import command, install
    from grader.hub.layout import Hub

    hub = Hub(root=Path(args.root), instructor=args.instructor,
              students=tuple(s for s in args.students.split(",") if s), port=args.port)
    if args.remove:
        from grader.hub.remove import remove

        for line in remove(hub) or [f"nothing of a hub in {hub.root} was left"]:
            print(line)
        return DONE
    print(f"Setting up the course hub in {hub.root} (first time: a few minutes)...", flush=True)
    accounts = install(hub)
    print(f"\nThe course hub: {hub.url}  (accounts also in {hub.accounts_file})")
    for user, password in accounts.items():
        role = "instructor" if user == hub.instructor else "student"
        print(f"  {role:<10}  user {user:<12} password {password}")
    if args.setup_only:
        return 0
    cmd, env = command(hub)
    print("Ctrl-C stops the hub and every server.", flush=True)
    os.chdir(hub.state)
    os.execve(cmd[0], cmd, env)
    return 0  # not reached
