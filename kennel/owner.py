"""Who the CLI runs as: a dedicated uid that belongs to no login account.

When Fetch is root the sandboxed CLI never runs as root, nor as a person's account: it
runs as ``kennel.bwrap.user`` / ``kennel.docker.user``, and ``"auto"`` means
``DEDICATED_USER``. A configured uid is refused when it is root or a login account (an
``/etc/passwd`` or NSS entry whose shell is not ``nologin``/``false``): the CLI would
otherwise share that person's files, processes and kernel keyrings.

Why 65520: Debian reserves 65000-65533 (it allocates none of them), systemd's dynamic
service users end at 65519 and its homed users are 60001-60513, ``nobody`` is 65534, the
Docker kennel's own processes are 65533 (``KEEPER_USER``) and distroless images use 65532;
below 65536 it is in no usual ``/etc/subuid`` range (those start at 100000).
"""

from __future__ import annotations

import os
import pwd
import subprocess
from functools import cache
from pathlib import Path

from core.errors import KennelError

DEDICATED_USER = "65520:65520"
PASSWD = Path("/etc/passwd")
SUBUID = Path("/etc/subuid")
SETPRIV = "/usr/bin/setpriv"
UNSHARE = "/usr/bin/unshare"


def parse_user(user: str) -> tuple[int, int]:
    uid, _, gid = user.partition(":")
    return int(uid), int(gid or uid)


def _no_login(shell: str) -> bool:
    return shell.rstrip().rsplit("/", 1)[-1] in {"nologin", "false"}


def login_account(uid: int, passwd: Path | None = None) -> str | None:
    """The name of a login account with ``uid`` (its shell is not nologin/false), from
    ``passwd`` (default ``PASSWD``) and, for the real file, from NSS too (LDAP, sssd...);
    None if there is none."""
    passwd = passwd or PASSWD
    try:
        lines = passwd.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    for line in lines:
        fields = line.split(":")
        if len(fields) >= 7 and fields[2].strip() == str(uid) and not _no_login(fields[6]):
            return fields[0]
    if passwd == Path("/etc/passwd"):
        try:
            entry = pwd.getpwuid(uid)
        except KeyError:
            return None
        if not _no_login(entry.pw_shell):
            return entry.pw_name
    return None


def subordinate_owner(uid: int, subuid: Path | None = None) -> str | None:
    """The account whose ``/etc/subuid`` range holds ``uid`` (its rootless containers map
    their users there), or None."""
    subuid = subuid or SUBUID
    try:
        lines = subuid.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        name, _, rest = line.partition(":")
        start, _, count = rest.partition(":")
        if (
            start.strip().isdigit()
            and count.strip().isdigit()
            and int(start) <= uid < int(start) + int(count)
        ):
            return name
    return None


def check_user(
    user: str, passwd: Path | None = None, subuid: Path | None = None
) -> tuple[int, int]:
    """``(uid, gid)`` of ``user``, or a KennelError saying why the CLI must not run as it."""
    try:
        uid, gid = parse_user(user)
    except ValueError as err:
        raise KennelError(f"kennel user {user!r} is not uid:gid") from err
    if uid <= 0 or gid <= 0:
        raise KennelError(f"kennel user {user} is root: the CLI never runs as root")
    name = login_account(uid, passwd)
    if name is not None:
        raise KennelError(
            f"kennel uid {uid} is the login account {name!r}: the CLI would share its "
            f"files, processes and keyrings; use a uid no account has "
            f'("auto" = {DEDICATED_USER})'
        )
    owner = subordinate_owner(uid, subuid)
    if owner is not None:
        raise KennelError(
            f"kennel uid {uid} is in the subordinate uid range of {owner!r} (/etc/subuid): "
            f'use a uid no account has ("auto" = {DEDICATED_USER})'
        )
    return uid, gid


def user_for(repo: Path, setting: str) -> str:
    """``"uid:gid"`` the CLI runs as: the setting, or (``"auto"``) ``DEDICATED_USER``;
    never root, never a login account (KennelError). ``repo`` no longer decides."""
    del repo
    uid, gid = check_user(DEDICATED_USER if setting == "auto" else setting)
    return f"{uid}:{gid}"


def describe_user(setting: str, backend: str = "bwrap") -> str:
    """One line for ``fetch doctor``: which uid the CLI runs as, and why."""
    if backend == "bwrap" and os.geteuid() != 0:
        return (
            f"kennel uid {os.geteuid()} (Fetch's own: Fetch is not root, so bwrap maps it "
            "into an unprivileged user namespace of the run)"
        )
    user = DEDICATED_USER if setting == "auto" else setting
    try:
        uid, _gid = check_user(user)
    except KennelError as err:
        return f"kennel uid REFUSED: {err}"
    how = "dedicated" if setting == "auto" else "configured"
    try:
        account = f"system account {pwd.getpwuid(uid).pw_name!r}, no login"
    except KeyError:
        account = "no login account"
    line = f"kennel uid {uid} ({how}, {account})"
    if backend == "bwrap":
        why = userns_problem(user)
        line += (
            "; own user namespace per run"
            if why is None
            else f"; NO own user namespace ({why}): kennels share the uid's keyring"
        )
    return line


@cache
def userns_problem(user: str) -> str | None:
    """None if ``user`` can make its own user namespace mapping only itself (what the
    bwrap kennel does as root, after dropping to it), else why not. Measured on the host:
    the same kernel and binaries as inside the sandbox."""
    if os.geteuid() != 0:
        return "Fetch is not root"
    uid, gid = parse_user(user)
    if not (os.path.exists(SETPRIV) and os.path.exists(UNSHARE)):
        return f"{SETPRIV} or {UNSHARE} is missing"
    argv = [*drop_argv(uid, gid), *userns_argv(uid, gid), "/bin/true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, cwd="/")
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"unshare does not run: {err}"
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["?"]
        return f"the kernel refuses it: {tail[0]}"
    return None


def drop_argv(uid: int, gid: int) -> list[str]:
    """setpriv: become ``uid:gid`` with no groups, no capabilities, no new privileges."""
    return [
        SETPRIV,
        f"--reuid={uid}",
        f"--regid={gid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
    ]


def userns_argv(uid: int, gid: int) -> list[str]:
    """unshare, run as ``uid`` already: a new user namespace in which ``uid``/``gid`` map
    to themselves and nothing else (setgroups denied). The process stays ``uid`` on the
    host (bwrap's own ``--unshare-user --uid`` would map it to root outside when bwrap
    runs as root: measured with bubblewrap 0.8.0), and its capabilities in the new
    namespace end at the exec, since it is not uid 0 there."""
    return [UNSHARE, f"--map-user={uid}", f"--map-group={gid}", "--"]


def hand_over(repo: Path, user: str, *, skip_git: bool = True) -> None:
    """Make ``repo`` writable by ``user``; with ``skip_git`` its top ``.git`` stays as is.
    Symlinks are never followed (their own owner does not matter), and entries already
    owned by the uid cost one ``lstat``."""
    uid, gid = parse_user(user)
    for root, dirs, files in os.walk(repo):
        if skip_git and Path(root) == repo and ".git" in dirs:
            dirs.remove(".git")
        for path in (root, *(os.path.join(root, name) for name in files)):
            st = os.lstat(path)
            if (st.st_uid, st.st_gid) != (uid, gid) and not os.path.islink(path):
                os.chown(path, uid, gid, follow_symlinks=False)


__all__ = [
    "DEDICATED_USER",
    "check_user",
    "describe_user",
    "drop_argv",
    "hand_over",
    "login_account",
    "parse_user",
    "user_for",
    "userns_argv",
    "userns_problem",
]
