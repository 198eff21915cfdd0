"""The kernel's keyrings, kept out of the students' reach.

Keys are not namespaced the way files and IPC are: every process of the sandbox runs as the same
user (`nobody`), whose user keyring, user-session keyring and persistent keyring outlive a
student's turn, and a key readable by that user can be read by serial number from any sandbox
on the machine (two students graded at once included). No student's code needs keys, so the
sandbox's server forbids the three system calls that make and use them (`add_key`, `keyctl`,
`request_key`) with a seccomp filter built by libseccomp (Debian's libseccomp2, loaded with
ctypes), inherited by every process it forks; Docker's default profile does the same. Where that
filter cannot be loaded, the server clears those keyrings after each turn instead (clear()).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform

BLOCKED = ("add_key", "keyctl", "request_key")
_ACT_ALLOW = 0x7FFF0000  # SCMP_ACT_ALLOW
_ACT_ERRNO = 0x00050000  # SCMP_ACT_ERRNO(e): | e
# keyctl(2) operations and special keyring ids (linux/keyctl.h)
_JOIN_SESSION_KEYRING, _CLEAR, _GET_PERSISTENT = 1, 7, 22
_USER_KEYRING, _USER_SESSION_KEYRING = -4, -5
_SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}


def block() -> None:
    """Make add_key, keyctl and request_key fail with EPERM in this thread and every process it
    starts afterwards (a seccomp filter cannot be lifted). Raises OSError where libseccomp or
    seccomp is missing."""
    try:
        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError as e:
        raise OSError(errno.ENOENT, f"libseccomp is not installed ({e})") from None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.restype = None
    ctx = lib.seccomp_init(_ACT_ALLOW)
    if not ctx:
        raise OSError(errno.ENOMEM, "seccomp_init failed")
    try:
        for name in BLOCKED:
            number = lib.seccomp_syscall_resolve_name(name.encode())
            if number < 0:
                raise OSError(errno.ENOSYS, f"libseccomp does not know {name}")
            failed = lib.seccomp_rule_add(ctypes.c_void_p(ctx),
                                          ctypes.c_uint32(_ACT_ERRNO | errno.EPERM),
                                          ctypes.c_int(number), ctypes.c_uint(0))
            if failed:
                raise OSError(-failed, f"seccomp_rule_add({name}) failed")
        failed = lib.seccomp_load(ctx)  # sets no_new_privs first, as seccomp requires
        if failed:
            raise OSError(-failed, f"seccomp_load failed: {os.strerror(-failed)}")
    finally:
        lib.seccomp_release(ctx)


def _keyctl(*args: int) -> int:
    number = _SYS_KEYCTL.get(platform.machine())
    if number is None:
        raise OSError(errno.ENOSYS, f"keyctl's number on {platform.machine()} is not known")
    libc = ctypes.CDLL(None, use_errno=True)
    result = libc.syscall(number, *(ctypes.c_long(a) for a in args))
    if result < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return result


def join_fresh_session() -> None:
    """A new, empty session keyring for this process and what it forks: not the one the grader
    was started with (its possessor, whatever its user, may read every key in it)."""
    _keyctl(_JOIN_SESSION_KEYRING, 0)


def clear() -> list[str]:
    """Empty the keyrings this user's processes share from turn to turn (user, user-session,
    persistent); what could not be emptied, in words (empty: all done)."""
    failed = []
    try:
        persistent = _keyctl(_GET_PERSISTENT, -1, _USER_KEYRING)  # linked into the user's
    except OSError as e:
        persistent = None
        if e.errno not in (errno.EOPNOTSUPP, errno.ENOSYS):  # kernel without them: none
            failed.append(f"the persistent keyring: {e.strerror}")
    for name, keyring in (("persistent", persistent), ("user", _USER_KEYRING),
                          ("user-session", _USER_SESSION_KEYRING)):
        if keyring is None:
            continue
        try:
            _keyctl(_CLEAR, keyring)
        except OSError as e:
            failed.append(f"the {name} keyring: {e.strerror}")
    return failed
