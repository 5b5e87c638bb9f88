"""The bubblewrap kennel: the CLI runs on this host, but in a sandbox that hides the host.

Inside it sees a fresh root: ``/usr`` and the few ``/etc`` files programs need, read-only;
the Python that runs the launcher and Fetch's own packages (the demo CLI), read-only; its
own ``/proc``, ``/dev`` and an empty ``/tmp``; the run's own tree (its layer over the
repository, never the owner's working tree) writable with the owner's ``.git`` read-only
over it; the run's fresh state folder writable; the relay socket, and nothing else: no
FETCH_HOME, no home, no ``/run``, no Docker socket, no other unix socket.
It has its own pid, network, IPC and UTS namespaces; the only way out is the relay socket,
reached through the launcher's forwarder on ``127.0.0.1:4100``. The CLI never runs as
root and has no capabilities and no way to gain privileges. When the CLI ends (or is
stopped), the namespace's init ends and the kernel kills everything left in it, so no
process outlives the task; if Fetch itself dies, bwrap and the sandbox die with it.

When Fetch is root, bwrap runs as root (it must read the repository wherever it is) and
``setpriv`` drops to the sandbox uid, clears every capability and sets no-new-privileges
before the launcher starts. When Fetch is not root, bwrap makes an unprivileged user
namespace and drops every capability itself.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

from core.errors import KennelError
from core.packages import PACKAGES
from kennel import launcher
from kennel.base import ExecSpec, Layout
from kennel.limits import Limited, Limits, host_support, open_run
from kennel.owner import drop_argv, parse_user, user_for, userns_argv, userns_problem
from kennel.paths import relay_dir
from kennel.process import GroupProcess, start_group
from kennel.relayed import RelayedProcess, start_relayed

RELAY_PORT = 4100
RELAY_SEEN = Path("/relay/relay.sock")
ATTACHMENTS_SEEN = Path("/fetch/attachments")  # what the owner sent with the task, read-only
STATE_ROOT = Path("/fetch/state")  # + /<harness>; /.cache beside them is the repo's cache
WORK_ROOT = Path("/workspace")  # + /<repo>: the run's tree
# Host /etc entries programs need (certificates, users, the dynamic loader, Debian's
# alternatives symlinks); the rest of /etc stays out.
ETC = (
    "alternatives",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "passwd",
    "group",
    "hosts",
    "nsswitch.conf",
    "localtime",
    "timezone",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "profile",
    "profile.d",
    "bash.bashrc",
    "mime.types",
    "os-release",
    "debian_version",
    "inputrc",
    "terminfo",
)
# Variables a harness passes through that name a host path the CLI only reads (copilot's
# unpacked package, extra CA certificates): bound read-only where they are.
READONLY_ENV = ("COPILOT_PKG_CACHE_HOME", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE")
ISOLATION = (
    "bwrap sandbox: runs as {uid}, no capabilities; sees only the repo (.git "
    "read-only), its own state, /usr and the model relay; own pid and network "
    "namespaces, nothing outlives the task"
)


# What projects are built and tested with: the sandbox sees the host's (in /usr, read-only).
TOOLCHAINS = (
    "git",
    "python3",
    "pip3",
    "node",
    "npm",
    "corepack",
    "pnpm",
    "yarn",
    "gcc",
    "g++",
    "make",
    "cargo",
    "go",
)  # the kennel image has all but cargo and go (kennel/Dockerfile)


def toolchains(path_env: str) -> tuple[list[str], list[str]]:
    """(found, missing) of the common toolchains on ``path_env`` (``fetch doctor``)."""

    def seen(tool: str) -> bool:  # only /usr is bound: a tool elsewhere is not inside
        exe = shutil.which(tool, path=path_env)
        return exe is not None and _under(Path(os.path.realpath(exe)), Path("/usr"))

    found = [t for t in TOOLCHAINS if seen(t)]
    return found, [t for t in TOOLCHAINS if t not in found]


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


_STARTS: list[bool] = []  # a sandbox started once: it will again (asked once a process)


def probe() -> str | None:
    """None if a sandbox can start here, else why not (for ``auto`` and ``fetch doctor``).
    Only success is remembered: bubblewrap installed later works without a restart."""
    if _STARTS:
        return None
    why = _probe()
    if why is None:
        _STARTS.append(True)
    return why


def _probe() -> str | None:
    bwrap = bwrap_path()
    if bwrap is None:
        return "bwrap is not installed (Debian: apt-get install bubblewrap)"
    argv = [*_isolation_flags(), "--ro-bind", "/usr", "/usr", *_usr_links(), "--", "/usr/bin/true"]
    try:
        done = subprocess.run([bwrap, *argv], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"bwrap does not start: {err}"
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["?"]
        return f"bwrap cannot make its namespaces here: {tail[0]}"
    return None


def _root() -> bool:
    return os.geteuid() == 0


def _isolation_flags() -> list[str]:
    flags = [
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
    ]
    if not _root():
        # No privilege to begin with: a user namespace gives bwrap its mounts, and the
        # capabilities it holds there are dropped before the command starts.
        flags += ["--unshare-user", "--cap-drop", "ALL"]
    return flags


def _usr_links() -> list[str]:
    """/bin, /lib... as the host has them (merged-/usr symlinks, or read-only binds)."""
    out: list[str] = []
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / name
        if path.is_symlink():
            out += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            out += ["--ro-bind", str(path), str(path)]
    return out


def _python_roots() -> list[Path]:
    """Where the interpreter and its packages live, outside /usr."""
    roots = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parents[1]}
    return sorted(r for r in roots if r.is_dir() and not _under(r, Path("/usr")))


def _fetch_packages() -> list[Path]:
    source = Path(launcher.__file__).resolve().parents[1]
    return [source / p for p in PACKAGES if (source / p).is_dir()]


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _cli_dirs(argv0: str, path_env: str, bound: list[Path], private: list[Path]) -> list[Path]:
    """Read-only folders a CLI installed outside /usr needs (``~/.local/bin``, an nvm
    prefix...): its bin folder, the package its link points into, and the same for the
    interpreter its ``#!/usr/bin/env`` line names. Never a folder holding, or inside,
    FETCH_HOME or the repo (``private``)."""
    out: list[Path] = []

    def visible(path: Path) -> bool:
        return any(_under(path, b) for b in [*bound, *out])

    def add(folder: Path) -> None:
        if visible(folder) or folder == Path("/"):
            return
        if any(_under(folder, p) or _under(p, folder) for p in private):
            return
        out.append(folder)

    def take(name: str, depth: int) -> None:
        exe = shutil.which(name, path=path_env) if "/" not in name else name
        if exe is None or not os.path.isfile(exe):
            return
        link, real = Path(os.path.abspath(exe)), Path(os.path.realpath(exe))
        add(link.parent)
        parts = real.parts
        if "node_modules" in parts:
            i = parts.index("node_modules")
            j = i + (3 if parts[i + 1].startswith("@") else 2)
            add(Path(*parts[:j]))
        else:
            add(real.parent)
        if depth == 0:
            with open(real, "rb") as fh:
                first = fh.readline(200)
            words = first[2:].split() if first.startswith(b"#!") else []
            if words[:1] == [b"/usr/bin/env"] and len(words) > 1:
                take(words[-1].decode("utf-8", "replace"), 1)

    take(argv0, 0)
    return out


def _shared_cache(home: Path, spec: ExecSpec) -> tuple[Path, Path] | None:
    """The repo's ``.cache`` beside the harnesses' state folders (host, seen): the CLIs of
    one repo share it across runs (copilot unpacks ~235 MB there once). The host only
    ever makes its top folder; it never reads what a kennel put there. None where it
    would land in the tree."""
    host = home / "kennel" / "cache" / spec.repo.parent.parent.name
    seen = spec.layout.state_seen.parent / ".cache"
    if _under(seen, spec.layout.workdir):
        return None
    return host, seen


class _Mounts:
    """bwrap's mount arguments, creating every missing parent world-searchable: bwrap
    would otherwise copy the host's modes (``/root`` 0700 hides the interpreter)."""

    def __init__(self) -> None:
        self.argv: list[str] = []
        self._dirs: set[Path] = {Path("/")}

    def dirs_for(self, dest: Path) -> None:
        for parent in reversed(dest.parents):
            if parent not in self._dirs:
                self.argv += ["--perms", "0755", "--dir", str(parent)]
                self._dirs.add(parent)

    def add(self, flag: str, src: Path, dest: Path) -> None:
        self.dirs_for(dest)
        self.argv += [flag, str(src), str(dest)]
        self._dirs.add(dest)

    def tmpfs(self, dest: Path, perms: str) -> None:
        self.dirs_for(dest)
        self.argv += ["--perms", perms, "--tmpfs", str(dest)]
        self._dirs.add(dest)

    def raw(self, *args: str) -> None:
        self.argv += args


def service_argv(
    argv: list[str],
    *,
    binds: list[Path],
    socket: Path | None,
    path_env: str,
    home: Path,
    user: str = "auto",
) -> list[str]:
    """The command line of a long-lived helper of Fetch's own (one of the owner's MCP
    servers, orchestrator/mcphost/) in a sandbox like a CLI's: ``/usr``, a fresh /tmp,
    no network (``socket``: the egress proxy's, offered at ``127.0.0.1:RELAY_PORT``),
    ``binds`` read-only, nothing of FETCH_HOME, the kennel's uid when Fetch is root."""
    bwrap = bwrap_path() or "bwrap"
    m = _Mounts()
    m.raw(*_isolation_flags())
    m.raw("--ro-bind", "/usr", "/usr", *_usr_links())
    for name in ETC:
        m.add("--ro-bind-try", Path("/etc") / name, Path("/etc") / name)
    m.raw("--proc", "/proc", "--dev", "/dev")
    m.tmpfs(Path("/tmp"), "1777")
    m.tmpfs(Path("/home"), "0755")
    bound = [Path("/usr"), *_python_roots(), *_fetch_packages()]
    for root in bound[1:]:
        m.add("--ro-bind", root, root)
    for folder in _cli_dirs(argv[0], path_env, bound, [home]):
        m.add("--ro-bind", folder, folder)
    for folder in binds:
        if any(_under(folder, p) or _under(p, folder) for p in [home]):
            raise KennelError(f"{folder}: an MCP server never sees FETCH_HOME")
        m.add("--ro-bind", folder, folder)
    if socket is not None:
        m.add("--ro-bind", socket, RELAY_SEEN)
    m.raw("--chdir", "/tmp")
    out = ["/usr/bin/setpriv", "--pdeathsig", "KILL", "--", bwrap, *m.argv, "--"]
    if _root():
        chosen = user_for(home, user)
        uid, gid = parse_user(chosen)
        out += drop_argv(uid, gid)
        if userns_problem(chosen) is None:
            out += userns_argv(uid, gid)
    out += [sys.executable, "-I", "-S", str(Path(launcher.__file__).resolve()), "--stdin"]
    if socket is not None:
        out += ["--port", str(RELAY_PORT), "--socket", str(RELAY_SEEN)]
    return [*out, "--", *argv]


class BwrapKennel:
    name = "bwrap"

    def __init__(
        self,
        home: Path,
        user: str = "auto",
        path_env: str = "/usr/local/bin:/usr/bin:/bin",
        limits: Limits | None = None,
    ) -> None:
        self._home = home
        self._user = user
        self._path_env = path_env
        self._limits = limits or Limits()

    def isolation(self) -> str:
        why = probe()
        if why is not None:
            return f"bwrap sandbox, refusing to run: {why}"
        if _root():
            try:
                user = user_for(self._home, self._user)
            except KennelError as err:
                return f"bwrap sandbox, refusing to run: {err}"
            own = userns_problem(user) is None
            uid = f"dedicated uid {parse_user(user)[0]}" + (" in its own user namespace" * own)
        else:
            uid = f"uid {os.geteuid()}"
        return ISOLATION.format(uid=uid)

    host_mounts = True  # the run's overlay, mounted by the host, is what bwrap binds
    steerable = True  # bwrap and the launcher pass a stdin pipe on (--stdin)

    def layout(self, tree: Path, harness: str, repo: Path | None = None) -> Layout:
        # The tree is shown where the owner's repository is (paths read as the owner
        # knows them), or at /workspace/<name>.
        runs = tree.parent.parent  # <runs>/<repo>-<hash>/<run>/tree
        return Layout(
            workdir=repo or WORK_ROOT / runs.name.rsplit("-", 1)[0],
            state_host=tree.parent / "state" / harness,
            state_seen=STATE_ROOT / harness,
            relay_socket=relay_dir(self._home, self.owner()) / "relay.sock",
            relay_port=RELAY_PORT,
            path_env=self._path_env,
            confined=True,
            attachments_host=tree.parent / "attachments",
            attachments_seen=ATTACHMENTS_SEEN,
        )

    def owner(self) -> tuple[int, int] | None:
        """The uid:gid the CLI runs as when it is not Fetch's own (Fetch is root)."""
        return parse_user(user_for(self._home, self._user)) if _root() else None

    async def close(self) -> None:
        return None

    async def exec(self, spec: ExecSpec) -> RelayedProcess:
        why = probe()
        if why is not None:
            raise KennelError(f"the bwrap sandbox cannot run here: {why}")
        return await start_relayed(spec, lambda: self._start(spec))

    def argv(self, spec: ExecSpec) -> list[str]:
        """The whole command line: bwrap, [setpriv], the launcher, the CLI."""
        bwrap = bwrap_path() or "bwrap"
        repo, work = spec.repo, spec.layout.workdir
        m = _Mounts()
        m.raw(*_isolation_flags())
        m.raw("--ro-bind", "/usr", "/usr", *_usr_links())
        for name in ETC:
            m.add("--ro-bind-try", Path("/etc") / name, Path("/etc") / name)
        m.raw("--proc", "/proc", "--dev", "/dev")
        m.tmpfs(Path("/tmp"), "1777")
        m.tmpfs(Path("/home"), "0755")
        for root in _python_roots():
            m.add("--ro-bind", root, root)
        for package in _fetch_packages():
            m.add("--ro-bind", package, package)
        bound = [Path("/usr"), *_python_roots(), *_fetch_packages()]
        private = [self._home, repo, spec.layout.state_host]
        for folder in _cli_dirs(spec.argv[0], spec.env.get("PATH", ""), bound, private):
            m.add("--ro-bind", folder, folder)
        for name in READONLY_ENV:
            named = Path(spec.env.get(name) or "relative")
            if (
                named.is_absolute()
                and named.exists()
                and not any(_under(named, p) or _under(p, named) for p in [*bound, *private])
            ):
                m.add("--ro-bind", named, named)
        m.add("--bind", repo, work)
        if spec.git is not None:
            if spec.git.is_symlink() or not spec.git.is_dir():
                raise KennelError(f"{spec.git} is not a real folder: refusing to show it")
            m.add("--ro-bind", spec.git, work / ".git")
        m.add("--bind", spec.layout.state_host, spec.layout.state_seen)
        shown = spec.layout.attachments_host
        if shown is not None and spec.layout.attachments_seen is not None and shown.is_dir():
            m.add("--ro-bind", shown, spec.layout.attachments_seen)
        cache = _shared_cache(self._home, spec)
        if cache is not None:
            m.add("--bind", *cache)
        if spec.forwarded:
            m.add("--ro-bind", spec.layout.relay_socket, RELAY_SEEN)
        m.raw("--chdir", str(work))
        argv = [bwrap, *m.argv, "--"]
        if _root():
            # setpriv drops to the dedicated uid (no groups, no capabilities, no new
            # privileges), then unshare gives the run a user namespace of its own in
            # which that uid maps only to itself: on the host the CLI is that uid, never
            # root (bwrap's own --unshare-user, run as root, maps it to root outside),
            # its user keyrings are the namespace's own, and RLIMIT_NPROC counts its
            # processes alone (kennel/limits.py). The launcher joins a new session keyring.
            user = user_for(repo, self._user)
            uid, gid = parse_user(user)
            argv += drop_argv(uid, gid)
            if userns_problem(user) is None:
                argv += userns_argv(uid, gid)
        argv += [sys.executable, "-I", "-S", str(Path(launcher.__file__).resolve())]
        argv += self._limits.launcher_args()
        if spec.steer:
            argv.append("--stdin")  # the CLI reads the owner's steering messages
        if spec.forwarded:
            argv += ["--port", str(spec.layout.relay_port), "--socket", str(RELAY_SEEN)]
        return [*argv, "--", *spec.argv]

    def _prepare(self, spec: ExecSpec) -> None:
        # The run's folders were made by the host for this run (boundary/layer.py): real
        # folders, never links a kennel could have planted. Nothing here walks them.
        for folder in (spec.repo, spec.layout.state_host):
            if folder.is_symlink() or not folder.is_dir():
                raise KennelError(f"could not start {spec.argv[0]}: no folder {folder}")
        cache = _shared_cache(self._home, spec)
        if cache is not None:
            cache[0].mkdir(parents=True, exist_ok=True, mode=0o700)
        if _root():
            user = user_for(spec.repo, self._user)
            uid, gid = parse_user(user)
            if uid == 0:
                raise KennelError("kennel.bwrap.user must not be root")
            if cache is not None:
                os.chown(cache[0], uid, gid, follow_symlinks=False)  # its top only

    async def _start(self, spec: ExecSpec) -> GroupProcess | Limited:
        await asyncio.to_thread(self._prepare, spec)
        argv = self.argv(spec)
        # Fetch dies → bwrap dies (→ the sandbox's init, → everything in it).
        argv = ["/usr/bin/setpriv", "--pdeathsig", "KILL", "--", *argv]
        # The run's cgroups (kennel/limits.py), joined before bwrap starts, gone after it.
        group = await asyncio.to_thread(open_run, self._limits, host_support())
        if group is None:
            return await start_group(
                argv, cwd="/", env=spec.env, name=spec.argv[0], stdin=spec.steer
            )
        try:
            proc = await start_group(
                group.wrap(argv), cwd="/", env=spec.env, name=spec.argv[0], stdin=spec.steer
            )
        except BaseException:
            await asyncio.to_thread(group.remove)
            raise
        return Limited(proc, group)


__all__ = ["BwrapKennel", "bwrap_path", "probe", "service_argv"]
