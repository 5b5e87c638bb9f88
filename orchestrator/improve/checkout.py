"""The scratch checkout of Fetch's own repository, and the one branch pushed from it.

Fetch never edits itself in place: it clones its repository into
``FETCH_HOME/improve/<id>`` (never the installed packages, never the running checkout's
work tree: when the running checkout is the source it is only read, with ``--no-hardlinks``
so no object file is shared), lets the harness work there in the kennel, commits on the
host with the hardened host git (orchestrator/boundary/gitops.py), and pushes exactly one ref:
``refs/heads/fetch/improve-...``, created, never forced. The token reaches git only as an
``http.extraHeader`` in the environment of that one host git process (``GIT_CONFIG_*``),
never in a URL, a config file or the checkout the kennel sees.
"""

from __future__ import annotations

import base64
import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

from core.errors import GitError
from core.packages import PACKAGES as INSTALLED
from orchestrator.boundary.gitconfig import HARDENING, base_env, repo_env
from orchestrator.boundary.gitops import AUTHOR, Change, Repo
from orchestrator.improve.settings import is_local, local_path, remote_problem

# Fetch's own packages, and its benchmarks (installed with it too).
PACKAGES = (*INSTALLED, "bench")
BRANCH_PREFIX = "fetch/improve-"
TIMEOUT = 600.0
# Host git may clone and push over these only; everything else stays refused
# (HARDENING says protocol.allow=never).
PROTOCOLS = (
    "-c",
    "protocol.file.allow=always",
    "-c",
    "protocol.https.allow=always",
    "-c",
    "protocol.http.allow=always",
)
_SSH = re.compile(r"^(?:ssh://)?git@([\w.-]+)[:/](.+?)(?:\.git)?/?$")


# -- where Fetch itself is ---------------------------------------------------------------
def package_dirs() -> list[Path]:
    """The folders of Fetch's installed packages (as Python imports them)."""
    found: list[Path] = []
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        for where in (spec.submodule_search_locations or []) if spec else []:
            found.append(Path(where).resolve())
    return found


def running_checkout() -> Path | None:
    """The git checkout Fetch runs from (an editable install), or None."""
    spec = importlib.util.find_spec("orchestrator")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations))).resolve().parent
    return root if (root / ".git").exists() else None


def protected() -> list[Path]:
    """What this path must never write: the installed packages and the running checkout."""
    roots = package_dirs()
    checkout = running_checkout()
    if checkout is not None:
        roots.append(checkout)
    return roots


def _inside(path: Path, roots: list[Path]) -> Path | None:
    resolved = path.resolve()
    for root in roots:
        if resolved == root or root in resolved.parents:
            return root
    return None


def resolve_remote(configured: str | None, repo: str, checkout: Path | None) -> str:
    """The remote to clone from and push to: the configured one, else the running
    checkout's ``origin`` (ssh spelled as https: the token is sent over https)."""
    if configured:
        remote = configured
    else:
        origin = _origin(checkout) if checkout is not None else None
        if origin is None:
            return f"https://github.com/{repo}.git"
        ssh = _SSH.match(origin)
        remote = f"https://{ssh.group(1)}/{ssh.group(2)}.git" if ssh else origin
    problem = remote_problem(remote)
    if problem:
        raise GitError(f"improve.remote: {problem}")
    if is_local(remote):
        where = _inside(local_path(remote), protected())
        if where is not None:
            raise GitError(
                f"improve.remote is {where}, Fetch's running installation: pushing there "
                "would change it. Set improve.remote to the repository on GitHub."
            )
    return remote


def _origin(checkout: Path) -> str | None:
    proc = subprocess.run(
        [
            "git",
            "config",
            "--file",
            str(checkout / ".git" / "config"),
            "--get",
            "remote.origin.url",
        ],
        env=base_env(),
        capture_output=True,
        timeout=30,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    url = proc.stdout.decode(errors="replace").strip()
    return url or None


def auth_env(remote: str, token: str | None) -> dict[str, str]:
    """The token for one host git process talking https to GitHub: a command-line-scope
    config entry in its environment, gone when the process ends."""
    if not token or is_local(remote):
        return {}
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.extraHeader",
        "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
    }


def branch_name(run_id: int, request: str) -> str:
    words = re.findall(r"[a-z0-9]+", request.lower())
    slug = "-".join(words)[:40].strip("-") or "change"
    return f"{BRANCH_PREFIX}{run_id}-{slug}"


# -- git on the host -----------------------------------------------------------------------
def _git(
    args: list[str], *, cwd: Path, env: dict[str, str], what: str, secret: str | None = None
) -> str:
    try:
        proc = subprocess.run(
            ["git", *HARDENING, *PROTOCOLS, *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as err:
        raise GitError(f"{what} took longer than {TIMEOUT:.0f} s") from err
    if proc.returncode != 0:
        lines = proc.stderr.decode(errors="replace").strip().splitlines()
        detail = next((x for x in reversed(lines) if x.strip()), "no detail")
        if secret:
            detail = detail.replace(secret, "***")
        raise GitError(f"{what} failed: {detail[:300]}")
    return proc.stdout.decode(errors="replace").strip()


class Checkout:
    """One scratch clone and the branch it proposes."""

    def __init__(self, path: Path, remote: str, base: str, branch: str, token: str | None):
        if not branch.startswith(BRANCH_PREFIX) or branch == base:
            raise GitError(f"refusing to push {branch!r}: only fetch/improve-... branches")
        self.path = path
        self.remote = remote
        self.base = base
        self.branch = branch
        self._token = token
        self.repo: Repo | None = None
        self.pushed: str | None = None  # the commit the remote branch points at

    def clone(self) -> Repo:
        """Clone ``base`` of the remote and start the branch; the checkout keeps no remote
        (the kennel sees nothing that points anywhere)."""
        where = _inside(self.path, protected())
        if where is not None:
            raise GitError(f"refusing to clone into {self.path}: it is inside {where}")
        if self.path.exists():
            raise GitError(f"{self.path} already exists; a scratch checkout is always new")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        source = str(local_path(self.remote)) if is_local(self.remote) else self.remote
        _git(
            [
                "clone",
                "--quiet",
                "--no-hardlinks",
                "--no-tags",
                "--single-branch",
                "--branch",
                self.base,
                "--",
                source,
                str(self.path),
            ],
            cwd=self.path.parent,
            env={**base_env(), **auth_env(self.remote, self._token)},
            what=f"cloning {self.base} of {_shown(self.remote)}",
            secret=self._token,
        )
        repo = Repo(self.path)
        repo.run("remote", "remove", "origin")
        repo.run("switch", "--quiet", "--create", self.branch)
        self.repo = repo
        return repo

    def commit(self, change: Change, message: str) -> str:
        """Commit ``change`` (read from the run's layer) on the branch."""
        assert self.repo is not None
        return self.repo.commit(change, message)

    def push(self, sha: str) -> None:
        """Create the branch on the remote at ``sha``. No ``+``: never a forced update, so
        a branch of the same name that someone else moved is refused, not overwritten."""
        assert self.repo is not None
        self.repo.head()  # preflight: still our checkout, config on the allowlist
        self._push([], f"{sha}:refs/heads/{self.branch}", "pushing")
        self.pushed = sha

    def delete_remote_branch(self) -> None:
        """Take back the branch this run pushed, only while it still points where we put
        it (a lease: a branch someone moved since is left alone)."""
        if self.pushed is None:
            return
        ref = f"refs/heads/{self.branch}"
        self._push([f"--force-with-lease={ref}:{self.pushed}"], f":{ref}", "deleting")
        self.pushed = None

    def _push(self, options: list[str], refspec: str, doing: str) -> None:
        # The one ref this run owns, and no other: checked here, whatever called.
        if refspec.rsplit(":", 1)[-1] != f"refs/heads/{self.branch}":
            raise GitError(f"refusing to push {refspec!r}: only {self.branch}")
        url = str(local_path(self.remote)) if is_local(self.remote) else self.remote
        env = {
            **repo_env(self.path / ".git", self.path),
            **AUTHOR,
            **auth_env(self.remote, self._token),
        }
        _git(
            ["push", "--porcelain", "--no-verify", *options, "--", url, refspec],
            cwd=self.path,
            env=env,
            what=f"{doing} {self.branch} on {_shown(self.remote)}",
            secret=self._token,
        )

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def _shown(remote: str) -> str:
    return remote if is_local(remote) else remote.split("://", 1)[-1]


__all__ = [
    "BRANCH_PREFIX",
    "Checkout",
    "auth_env",
    "branch_name",
    "package_dirs",
    "protected",
    "resolve_remote",
    "running_checkout",
]
