"""Passwords of the course's Unix users, which the hub logs them in with (PAM, JupyterHub's
default authenticator: the system's own accounts). Generated once and kept in
state/accounts.json (root only), so running `make hub` again keeps them."""

from __future__ import annotations

import json
import os
import secrets
import subprocess

from grader.hub.layout import Hub


def ensure_accounts(hub: Hub) -> dict[str, str]:
    """{user: password} for every user of the hub; the Unix password is set to it."""
    passwords = _load(hub)
    for user in hub.users:
        passwords.setdefault(user, secrets.token_urlsafe(9))
    subprocess.run(["chpasswd"], check=True, text=True,
                   input="".join(f"{user}:{passwords[user]}\n" for user in hub.users))
    _save(hub, passwords)
    return {user: passwords[user] for user in hub.users}


def _load(hub: Hub) -> dict[str, str]:
    try:
        return json.loads(hub.accounts_file.read_text())
    except FileNotFoundError:
        return {}


def _save(hub: Hub, passwords: dict[str, str]) -> None:
    fd = os.open(hub.accounts_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(passwords, f, indent=1)
