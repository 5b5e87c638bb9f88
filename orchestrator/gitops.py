"""Host-side git, hardened against anything the sandbox may have written into a repo.

The harness edits files; only the host reads diffs and writes commits, and it does so
without running a single program the repository could name:

* every command gets ``-c`` overrides that switch off hooks, fsmonitor, pagers,
  external diff and textconv;
* commits are made with ``commit-tree`` + ``update-ref`` (plumbing runs no hooks),
  and the ref moves only if HEAD is still the commit the diff was made against;
* the diff is read through a private index file, so the owner's index is untouched;
* ``guard_repo_config`` snapshots ``.git/config``, ``.git/hooks`` and
  ``.git/info/attributes`` before a run and puts them back after it, so a filter or
  fsmonitor the harness planted is gone before git runs on the host.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import git

from core.errors import GitError

HARDENING = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "core.pager=cat",
    "-c", "core.editor=true",
    "-c", "core.sshCommand=false",
    "-c", "diff.external=",
    "-c", "core.untrackedCache=false",
    "-c", "protocol.allow=never",
)
AUTHOR = {
    "GIT_AUTHOR_NAME": "Fetch",
    "GIT_AUTHOR_EMAIL": "fetch@localhost",
    "GIT_COMMITTER_NAME": "Fetch",
    "GIT_COMMITTER_EMAIL": "fetch@localhost",
}
# Paths inside .git that can make host git run programs.
GUARDED = ("config", "hooks", "info/attributes")


@dataclass(frozen=True, slots=True)
class FileStat:
    path: str
    added: int
    removed: int
    binary: bool


@dataclass(frozen=True, slots=True)
class Change:
    """The exact difference between ``base_sha`` and the working tree."""

    base_sha: str
    tree_sha: str
    patch: str
    files: tuple[FileStat, ...]

    @property
    def digest(self) -> str:
        return hashlib.sha256(
            f"{self.base_sha}\0{self.tree_sha}\0".encode() + self.patch.encode()
        ).hexdigest()

    @property
    def empty(self) -> bool:
        return not self.files


class Repo:
    def __init__(self, path: Path) -> None:
        self.path = path
        if not (path / ".git").is_dir():
            raise GitError(f"{path.name} is not a git repository")
        self._git = git.Git(str(path))

    def run(self, *args: str, env: dict[str, str] | None = None, strip: bool = True) -> str:
        full_env = {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", **(env or {})}
        try:
            out = self._git.execute(
                # safe.directory: the Docker kennel hands the working tree to its uid;
                # this repo, and only it, is trusted although another uid owns files.
                ["git", "-c", f"safe.directory={self.path}", *HARDENING, *args],
                env=full_env,
                strip_newline_in_stdout=strip,
            )
        except git.GitCommandError as err:
            detail = (err.stderr or "").strip().splitlines()
            raise GitError(
                f"git {args[0]} failed in {self.path.name}: {detail[-1] if detail else err}"
            ) from err
        return str(out)

    # -- reading ---------------------------------------------------------------------
    def head(self) -> str:
        return self.run("rev-parse", "--verify", "HEAD")

    def has_commits(self) -> bool:
        try:
            self.head()
        except GitError:
            return False
        return True

    def branch(self) -> str:
        try:
            return self.run("symbolic-ref", "--short", "HEAD")
        except GitError:
            return "(detached)"

    def status_lines(self) -> list[str]:
        out = self.run("status", "--porcelain=v1", "--untracked-files=all", strip=False)
        return [line for line in out.splitlines() if line.strip()]

    def is_clean(self) -> bool:
        return not self.status_lines()

    @contextmanager
    def _private_index(self) -> Iterator[dict[str, str]]:
        fd, index = tempfile.mkstemp(prefix="fetch-index-")
        os.close(fd)
        os.unlink(index)  # git wants to create it itself
        try:
            yield {"GIT_INDEX_FILE": index}
        finally:
            with_lock = index + ".lock"
            for leftover in (index, with_lock):
                if os.path.exists(leftover):
                    os.unlink(leftover)

    def change(self) -> Change:
        """Snapshot the working tree (tracked + untracked, not ignored) against HEAD."""
        base = self.head()
        with self._private_index() as env:
            self.run("read-tree", base, env=env)
            self.run("add", "-A", "--", ".", env=env)
            tree = self.run("write-tree", env=env)
        patch = self.run(
            "diff-tree", "-p", "--binary", "--no-ext-diff", "--no-textconv",
            "--find-renames", "--no-color", base, tree, strip=False,
        )
        numstat = self.run(
            "diff-tree", "-r", "--numstat", "--no-renames", "--no-ext-diff",
            "--no-textconv", base, tree,
        )
        files: list[FileStat] = []
        for line in numstat.splitlines():
            parts = line.split("\t", 2)
            if len(parts) != 3:
                continue
            add, rem, path = parts
            binary = add == "-"
            files.append(FileStat(path, 0 if binary else int(add), 0 if binary else int(rem),
                                  binary))
        return Change(base, tree, patch, tuple(files))

    def file_patch(self, change: Change, path: str) -> str:
        return self.run(
            "diff-tree", "-p", "--no-ext-diff", "--no-textconv", "--no-color",
            change.base_sha, change.tree_sha, "--", path, strip=False,
        )

    # -- writing ---------------------------------------------------------------------
    def commit(self, change: Change, message: str) -> str:
        """Commit exactly ``change``; refuse if HEAD moved or the tree differs."""
        current = self.change()
        if current.base_sha != change.base_sha:
            raise GitError("the branch moved since the diff was made; nothing committed")
        if current.digest != change.digest:
            raise GitError("the files changed since the diff was shown; nothing committed")
        sha = self.run("commit-tree", change.tree_sha, "-p", change.base_sha, "-m", message,
                       env=AUTHOR)
        # Compare-and-swap: the ref only moves if it still points at the base.
        self.run("update-ref", "-m", "fetch: approved change", "HEAD", sha, change.base_sha)
        self.run("reset", "-q", "--", ".")  # index follows HEAD; the files already do
        return sha

    def discard(self) -> None:
        """Put tracked files back to HEAD and remove untracked (not ignored) files."""
        self.run("reset", "-q", "--hard", "HEAD")
        self.run("clean", "-fdq")

    def revert(self, sha: str, message: str) -> str:
        """Make a new commit that undoes ``sha``; works only on a clean tree."""
        if not self.is_clean():
            raise GitError("there are uncommitted changes; undo needs a clean tree")
        head = self.head()
        parent = self.run("rev-parse", "--verify", f"{sha}^")
        if head == sha:
            tree = self.run("rev-parse", f"{parent}^{{tree}}")
        else:
            # Later commits exist: apply the inverse patch onto HEAD's tree.
            with self._private_index() as env:
                self.run("read-tree", head, env=env)
                patch = self.run("diff-tree", "-p", "--binary", "--no-ext-diff",
                                 "--no-textconv", sha, parent, strip=False)
                with tempfile.NamedTemporaryFile("w", suffix=".patch", delete=False) as fh:
                    fh.write(patch)
                try:
                    self.run("apply", "--cached", fh.name, env=env)
                except GitError as err:
                    raise GitError(
                        "later commits touch the same lines; undo it by hand"
                    ) from err
                finally:
                    os.unlink(fh.name)
                tree = self.run("write-tree", env=env)
        new = self.run("commit-tree", tree, "-p", head, "-m", message, env=AUTHOR)
        self.run("update-ref", "-m", "fetch: undo", "HEAD", new, head)
        self.run("reset", "-q", "--hard", "HEAD")
        return new

    def subject(self, sha: str) -> str:
        return self.run("log", "-1", "--format=%s", sha)


@contextmanager
def guard_repo_config(path: Path) -> Iterator[list[str]]:
    """Restore ``.git`` files that could make host git run programs; yield what changed."""
    gitdir = path / ".git"
    saved = Path(tempfile.mkdtemp(prefix="fetch-gitguard-"))
    restored: list[str] = []
    try:
        for name in GUARDED:
            src = gitdir / name
            if src.is_dir():
                shutil.copytree(src, saved / name, symlinks=True)
            elif src.exists():
                (saved / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, saved / name, follow_symlinks=False)
        yield restored
        for name in GUARDED:
            now, before = gitdir / name, saved / name
            if _fingerprint(now) == _fingerprint(before):
                continue
            restored.append(f".git/{name}")
            if now.is_dir() and not now.is_symlink():
                shutil.rmtree(now)
            elif now.exists() or now.is_symlink():
                now.unlink()
            if before.is_dir():
                shutil.copytree(before, now, symlinks=True)
            elif before.exists():
                shutil.copy2(before, now, follow_symlinks=False)
    finally:
        shutil.rmtree(saved, ignore_errors=True)


def _fingerprint(path: Path) -> str:
    if path.is_symlink():
        return "link:" + os.readlink(path)
    if path.is_file():
        return "file:" + hashlib.sha256(path.read_bytes()).hexdigest()
    if path.is_dir():
        parts = sorted(
            f"{p.relative_to(path)}={_fingerprint(p)}" for p in path.rglob("*") if not p.is_dir()
        )
        return "dir:" + hashlib.sha256("\n".join(parts).encode()).hexdigest()
    return "absent"
