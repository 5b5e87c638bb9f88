"""Host-side git, hardened against anything the sandbox may have written into a repo.

The harness edits files; only the host reads diffs and writes commits, and it does so
without running a single program the repository could name, and without reading or
writing anywhere but the registered repository:

* every command runs with an explicit ``GIT_DIR`` and ``GIT_WORK_TREE`` resolved once
  from the registered path, in an environment built from nothing, against a repository
  config checked against an allowlist (``orchestrator.boundary.gitconfig``);
* before every operation the root must still resolve to the same folder and ``.git``
  be the same real directory, free of symlinks, gitfiles, ``commondir`` and alternates
  (``orchestrator.boundary.gittree``);
* a change that adds a nested repository, a gitlink or a symlink leaving the tree is
  refused; "no" removes nested repositories as well as every other untracked addition;
* commits are made with ``commit-tree`` + ``update-ref`` (plumbing runs no hooks),
  and the ref moves only if HEAD is still the commit the diff was made against;
* the diff is read through a private index file, so the owner's index is untouched, and
  read with a size cap: big files are stated, never loaded;
* ``guard_repo_config`` snapshots ``.git/config``, ``.git/hooks`` and the other files
  that could steer git before an unsafe-local run (the one backend that hides no host
  file) and puts them back after it; ``discard`` puts its working tree back.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from core.errors import GitError
from orchestrator.boundary.gitconfig import HARDENING, check_config, repo_env
from orchestrator.boundary.gittree import (
    Anchor,
    check_gitdir,
    escapes,
    nested_repos,
    remove_nested_repos,
)

AUTHOR = {
    "GIT_AUTHOR_NAME": "Fetch",
    "GIT_AUTHOR_EMAIL": "fetch@localhost",
    "GIT_COMMITTER_NAME": "Fetch",
    "GIT_COMMITTER_EMAIL": "fetch@localhost",
}
# Paths inside .git that can make host git run programs or look elsewhere.
GUARDED = (
    "config",
    "config.worktree",
    "hooks",
    "info/attributes",
    "commondir",
    "objects/info/alternates",
)
# A file bigger than this is stated, never diffed (git treats it as binary and does not
# load it); a diff is read up to PATCH_CAP bytes and cut there.
FILE_CAP = 1024 * 1024
PATCH_CAP = 2 * 1024 * 1024
TIMEOUT = 600.0
ZERO = "0" * 40
GITLINK, SYMLINK = "160000", "120000"
CLEAN_PASSES = 8


@dataclass(frozen=True, slots=True)
class FileStat:
    path: str  # as git quotes it (control and non-ASCII bytes escaped)
    added: int
    removed: int
    binary: bool
    size: int = 0  # bytes of the new version (the old one for a deletion)

    @property
    def big(self) -> bool:
        return self.size > FILE_CAP


@dataclass(frozen=True, slots=True)
class Change:
    """The exact difference between ``base_sha`` and the working tree."""

    base_sha: str
    tree_sha: str
    patch: str
    files: tuple[FileStat, ...]
    truncated: bool = False  # the patch was cut at PATCH_CAP
    # What the kennel left that is not in the change, with why (ignored by the owner's
    # .gitignore, a FIFO...): shown on the card, never applied.
    left_out: tuple[str, ...] = ()

    @property
    def digest(self) -> str:
        return hashlib.sha256(
            f"{self.base_sha}\0{self.tree_sha}\0".encode() + self.patch.encode()
        ).hexdigest()

    @property
    def empty(self) -> bool:
        return not self.files


@dataclass(frozen=True, slots=True)
class _Entry:
    """One line of ``diff-tree --raw``."""

    old_mode: str
    new_mode: str
    old_sha: str
    new_sha: str
    path: str


class Repo:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._anchor = Anchor.of(path)
        self._env = repo_env(self._anchor.gitdir, self._anchor.root)

    # -- running git -------------------------------------------------------------------
    def _preflight(self) -> None:
        """The tree is still the registered one and its config holds nothing executable."""
        self._anchor.verify(self.path)
        check_config(self._anchor.gitdir / "config")

    def run(self, *args: str, env: dict[str, str] | None = None, strip: bool = True) -> str:
        self._preflight()
        return self._run(*args, env=env, strip=strip)

    def _argv(self, args: tuple[str, ...]) -> list[str]:
        # safe.directory: the Docker kennel hands the working tree to its uid; this repo,
        # and only it, is trusted although another uid owns files.
        return [
            "git",
            "-c",
            f"safe.directory={self._anchor.root}",
            *HARDENING,
            "-c",
            f"core.bigFileThreshold={FILE_CAP}",
            *args,
        ]

    def _fail(self, args: tuple[str, ...], stderr: bytes) -> GitError:
        detail = stderr.decode(errors="replace").strip().splitlines()
        return GitError(
            f"git {args[0]} failed in {self._anchor.root.name}: "
            f"{detail[-1] if detail else 'no detail'}"
        )

    def _run(
        self, *args: str, env: dict[str, str] | None = None, strip: bool = True, stdin: bytes = b""
    ) -> str:
        try:
            proc = subprocess.run(
                self._argv(args),
                cwd=self._anchor.root,
                env={**self._env, **(env or {})},
                input=stdin,
                capture_output=True,
                timeout=TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired as err:
            raise GitError(
                f"git {args[0]} took longer than {TIMEOUT:.0f} s in {self._anchor.root.name}"
            ) from err
        if proc.returncode != 0:
            raise self._fail(args, proc.stderr)
        out = proc.stdout.decode(errors="replace")
        return out[:-1] if strip and out.endswith("\n") else out

    def _run_capped(self, *args: str, limit: int = PATCH_CAP) -> tuple[str, bool]:
        """Read at most ``limit`` bytes of output; True if there was more (git is stopped)."""
        # stderr goes to a file: a full stderr pipe must not stall git while we read.
        with (
            tempfile.TemporaryFile() as errors,
            subprocess.Popen(
                self._argv(args),
                cwd=self._anchor.root,
                env=self._env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=errors,
            ) as proc,
        ):
            assert proc.stdout is not None
            data = proc.stdout.read(limit + 1)
            cut = len(data) > limit
            if cut:
                proc.kill()
                data = data[:limit]
            try:
                code = proc.wait(TIMEOUT)
            except subprocess.TimeoutExpired as late:
                proc.kill()
                raise GitError(
                    f"git {args[0]} took longer than {TIMEOUT:.0f} s in {self._anchor.root.name}"
                ) from late
            errors.seek(0)
            stderr = errors.read(64 * 1024)
        if not cut and code != 0:
            raise self._fail(args, stderr)
        return data.decode(errors="replace"), cut

    # -- reading ---------------------------------------------------------------------
    def read_capped(self, *args: str, limit: int = PATCH_CAP) -> tuple[str, bool]:
        """Output of a read-only git command, at most ``limit`` bytes (True: there was
        more, and git was stopped): the orchestrator's git_log and git_show."""
        self._preflight()
        return self._run_capped(*args, limit=limit)

    def head(self) -> str:
        self._preflight()
        return self._run("rev-parse", "--verify", "HEAD")

    def has_commits(self) -> bool:
        self._preflight()  # a refused repository is an error, not "no commits"
        try:
            self._run("rev-parse", "--verify", "HEAD")
        except GitError:
            return False
        return True

    def branch(self) -> str:
        self._preflight()
        try:
            return self._run("symbolic-ref", "--short", "HEAD")
        except GitError:
            return "(detached)"

    def status_lines(self) -> list[str]:
        self._preflight()
        out = self._run(
            "status",
            "--porcelain=v1",
            "--untracked-files=all",
            "--ignore-submodules=all",
            strip=False,
        )
        lines = [line for line in out.splitlines() if line.strip()]
        # git does not list a .git below the root; the owner must hear of it anyway.
        lines += [f"!! {rel} (nested git repository)" for rel in nested_repos(self._anchor.root)]
        return lines

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
        """Snapshot the working tree (tracked + untracked, not ignored) against HEAD: the
        owner's own tree, for /improve's checkout and the orchestrator's read tools. A
        task's change comes from its layer instead (``tree_from``)."""
        self._preflight()
        nested = nested_repos(self._anchor.root)
        if nested:
            raise GitError(
                "the change holds a nested git repository ("
                + ", ".join(nested[:3])
                + "); I won't read or commit it. Say no (or /stop) to remove it."
            )
        base = self._run("rev-parse", "--verify", "HEAD")
        with self._private_index() as env:
            self._run("read-tree", base, env=env)
            self._run("add", "-A", "--", ".", env=env)
            tree = self._run("write-tree", env=env)
        return self.change_between(base, tree)

    def change_between(self, base: str, tree: str, left_out: tuple[str, ...] = ()) -> Change:
        """The change from commit ``base`` to ``tree``, read from git objects only."""
        self._preflight()
        entries = self._raw(base, tree)
        self._refuse_links(entries)
        sizes = self._sizes(entries)
        patch, cut = self._run_capped(
            "diff-tree",
            "-p",
            "--no-ext-diff",
            "--no-textconv",
            "--find-renames",
            "--no-color",
            "--ignore-submodules=all",
            base,
            tree,
        )
        numstat = self._run(
            "diff-tree",
            "-r",
            "--numstat",
            "--no-renames",
            "--no-ext-diff",
            "--no-textconv",
            base,
            tree,
        )
        files: list[FileStat] = []
        for line in numstat.splitlines():
            parts = line.split("\t", 2)
            if len(parts) != 3:
                continue
            add, rem, path = parts
            binary = add == "-"
            files.append(
                FileStat(
                    path,
                    0 if binary else int(add),
                    0 if binary else int(rem),
                    binary,
                    sizes.get(path, 0),
                )
            )
        return Change(base, tree, patch, tuple(files), cut, left_out)

    # -- a kennel's result, as data ----------------------------------------------------
    def ignored(self, paths: list[str]) -> set[str]:
        """Which of ``paths`` the owner's own ignore rules (HEAD's ``.gitignore`` files,
        ``info/exclude``) ignore; rules a kennel wrote count for nothing."""
        if not paths:
            return set()
        self._preflight()
        # "./": a name starting with ':' is never read as pathspec magic (check-ignore
        # refuses GIT_LITERAL_PATHSPECS).
        data = b"".join(b"./" + p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)
        proc = subprocess.run(
            self._argv(("check-ignore", "-z", "--stdin")),
            cwd=self._anchor.root,
            env={**self._env, "GIT_LITERAL_PATHSPECS": "0"},
            input=data,
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )
        if proc.returncode not in (0, 1):
            raise self._fail(("check-ignore",), proc.stderr)
        return {
            raw.decode("utf-8", "surrogateescape").removeprefix("./")
            for raw in proc.stdout.split(b"\0")
            if raw
        }

    def write_blobs(self, blobs: list[bytes]) -> list[str]:
        """Store each byte string as a blob in this repository's object database (pure
        data: no filter, no attribute, no program runs); their ids, in order."""
        # Imported here: only a finished run writes blobs, and gitdb (with smmap) is
        # ~20 ms and 3 MB that a start and an idle Fetch never need.
        from gitdb import LooseObjectDB
        from gitdb.base import IStream

        self._preflight()
        db = LooseObjectDB(str(self._anchor.gitdir / "objects"))
        return [db.store(IStream(b"blob", len(b), io.BytesIO(b))).hexsha.decode() for b in blobs]

    def tree_from(self, base: str, index_info: bytes) -> str:
        """``base``'s tree with ``index_info`` applied (``update-index -z --index-info``
        records: ``<mode> <sha>\t<path>\0``; mode 0 removes): the tree's id. git's own
        path checks refuse ``.git`` components and paths beyond a symlink."""
        self._preflight()
        with self._private_index() as env:
            self._run("read-tree", base, env=env)
            if index_info:
                self._run("update-index", "-z", "--index-info", env=env, stdin=index_info)
            return self._run("write-tree", env=env)

    def export(self, folder: Path, index: Path, old: str | None, new: str) -> list[str]:
        """Check commit ``new`` out into ``folder`` (a base of Fetch's own, with its own
        ``index``): from nothing, or from ``old`` path by path. The paths written."""
        self._preflight()
        env = {"GIT_INDEX_FILE": str(index), "GIT_WORK_TREE": str(folder)}
        if old is None:
            self._run("read-tree", new, env=env)
            self._run("checkout-index", "-a", "-f", env=env)
            return []
        names = self._run_bytes("diff-tree", "-r", "-z", "--name-only", "--no-renames", old, new)
        # Handing the base to the kennel's uid changed every file's owner and ctime: the
        # index's stat data must be refreshed (contents are unchanged) or git refuses the
        # path-by-path update ("not uptodate") and the whole base is made anew.
        with suppress(GitError):  # a real difference: read-tree refuses, the base is remade
            self._run("update-index", "-q", "--refresh", env=env)
        self._run("read-tree", "-m", "-u", old, new, env=env)
        return [n.decode("utf-8", "surrogateescape") for n in names.split(b"\0") if n]

    def _run_bytes(self, *args: str) -> bytes:
        proc = subprocess.run(
            self._argv(args),
            cwd=self._anchor.root,
            env=self._env,
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )
        if proc.returncode != 0:
            raise self._fail(args, proc.stderr)
        return proc.stdout

    def paths_under(self, commit: str, folder: str) -> list[str]:
        """Every file ``commit`` has below ``folder`` (or ``folder`` itself, a file)."""
        self._preflight()
        out = self._run_bytes(
            "ls-tree", "-r", "-z", "--name-only", "--full-tree", commit, "--", folder
        )
        names = [raw.decode("utf-8", "surrogateescape") for raw in out.split(b"\0")]
        return [n for n in names if n and (n == folder or n.startswith(folder + "/"))]

    def _raw(self, base: str, tree: str) -> list[_Entry]:
        out = self._run("diff-tree", "-r", "--raw", "--no-renames", "--no-abbrev", base, tree)
        entries: list[_Entry] = []
        for line in out.splitlines():
            meta, _, path = line.partition("\t")
            fields = meta.lstrip(":").split()
            if len(fields) == 5:
                entries.append(_Entry(fields[0], fields[1], fields[2], fields[3], path))
        return entries

    def _refuse_links(self, entries: list[_Entry]) -> None:
        for e in entries:
            if e.new_mode == GITLINK:
                raise GitError(
                    f"the change adds a submodule/gitlink at {e.path}; I won't "
                    "commit one. Say no to discard it."
                )
            if e.new_mode == SYMLINK:
                target, _ = self._run_capped("cat-file", "blob", e.new_sha, limit=4096)
                if escapes(e.path.strip('"'), target):
                    raise GitError(
                        f"the change adds a symlink {e.path} -> {target[:200]!r} "
                        "that points outside the repository; I won't commit it. "
                        "Say no to discard it."
                    )

    def _sizes(self, entries: list[_Entry]) -> dict[str, int]:
        """Blob sizes by path, from the object database (never reading the blobs)."""
        wanted = {
            e.path: (e.new_sha if e.new_sha != ZERO else e.old_sha)
            for e in entries
            if GITLINK not in (e.new_mode, e.old_mode)
        }
        if not wanted:
            return {}
        out = self._run(
            "cat-file",
            "--batch-check=%(objectname) %(objectsize)",
            stdin="".join(f"{sha}\n" for sha in wanted.values()).encode(),
        )
        by_sha = {}
        for line in out.splitlines():
            sha, _, size = line.partition(" ")
            if size.isdigit():
                by_sha[sha] = int(size)
        return {path: by_sha.get(sha, 0) for path, sha in wanted.items()}

    def file_patch(self, change: Change, path: str) -> str:
        self._preflight()
        patch, cut = self._run_capped(
            "diff-tree",
            "-p",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            "--ignore-submodules=all",
            change.base_sha,
            change.tree_sha,
            "--",
            path,
        )
        if cut:
            patch += f"\n… (cut at {PATCH_CAP // (1024 * 1024)} MB; the rest is not shown)\n"
        return patch

    # -- writing ---------------------------------------------------------------------
    def commit(self, change: Change, message: str) -> str:
        """Commit exactly ``change`` (its tree, made from the kennel's data) on HEAD, then
        bring the owner's index and files to it with git's own checked writes. Refused
        if HEAD moved or the owner's tree has changes of its own."""
        self._preflight()
        head = self._run("rev-parse", "--verify", "HEAD")
        if head != change.base_sha:
            raise GitError("the branch moved since the diff was made; nothing committed")
        # The paths the change writes are at the base (a task's change, made from its
        # layer), or already exactly the change (a checkout Fetch wrote itself);
        # anything else there is the owner's own work, which a commit must neither take
        # nor overwrite. Only those paths are looked at: the work is the change's size,
        # and the owner's edits elsewhere stay theirs, uncommitted.
        placed = self._own_work(self._touched(change))
        if placed and self.change().tree_sha != change.tree_sha:
            raise GitError(
                f"{self._anchor.root.name} has changes of its own since the diff was made; "
                "nothing committed"
            )
        sha = self._run(
            "commit-tree", change.tree_sha, "-p", change.base_sha, "-m", message, env=AUTHOR
        )
        # Compare-and-swap: the ref only moves if it still points at the base.
        self._run("update-ref", "-m", "fetch: approved change", "HEAD", sha, change.base_sha)
        if placed:
            self._run("reset", "-q", "--", ".")  # index follows HEAD; the files already do
        else:
            self.follow(change.base_sha, sha)
        return sha

    def _touched(self, change: Change) -> list[str] | None:
        """The paths ``change`` writes or removes (None: too many to name one by one)."""
        out = self._run_bytes(
            "diff-tree", "-r", "-z", "--name-only", "--no-renames", change.base_sha, change.tree_sha
        )
        paths = [raw.decode("utf-8", "surrogateescape") for raw in out.split(b"\0") if raw]
        return paths if len(paths) <= 2000 else None

    def _own_work(self, paths: list[str] | None) -> bool:
        """Whether the working tree differs from HEAD at ``paths`` (None: anywhere),
        untracked files included."""
        args = ["status", "--porcelain=v1", "-z", "--untracked-files=all"]
        args += ["--ignore-submodules=all", "--", *(paths if paths is not None else ["."])]
        return bool(self._run_bytes(*args).strip(b"\0"))

    def follow(self, old: str, new: str) -> None:
        """Make the owner's index and files go from commit ``old`` to ``new`` (nothing
        when they are at ``new`` already): a two-tree ``read-tree -m -u``, which writes
        only paths that change, refuses to overwrite the owner's own edits, and never
        writes beyond a symlink or into ``.git``."""
        self._preflight()
        if self._run("write-tree") == self._run("rev-parse", f"{new}^{{tree}}"):
            return
        # The index's stat data first: a workspace copied or restored from a backup has
        # files whose times differ from the index's, and read-tree would call each one
        # "not uptodate" and refuse (their content is what decides, not their times).
        self._run("update-index", "-q", "--refresh")
        self._run("read-tree", "-m", "-u", old, new)

    def discard(self) -> None:
        """Put the tree back exactly as HEAD has it: tracked files restored, untracked (not
        ignored) files and every nested repository removed. Nothing outside is touched."""
        self._preflight()
        remove_nested_repos(self._anchor.root)
        self._run("reset", "-q", "--hard", "HEAD")
        # Each pass can uncover more: an untracked .gitignore hides what it ignores until
        # clean has removed it. -ff: remove untracked nested repositories too.
        for _ in range(CLEAN_PASSES):
            self._anchor.verify(self.path)
            self._run("clean", "-ffdq")
            if not self._run(
                "ls-files", "--others", "--exclude-standard", "--directory", "--no-empty-directory"
            ):
                break

    def revert(self, sha: str, message: str) -> str:
        """Make a new commit that undoes ``sha``; works only on a clean tree."""
        if not self.is_clean():
            raise GitError("there are uncommitted changes; undo needs a clean tree")
        head = self._run("rev-parse", "--verify", "HEAD")
        parent = self._run("rev-parse", "--verify", "--end-of-options", f"{sha}^")
        if head == sha:
            tree = self._run("rev-parse", f"{parent}^{{tree}}")
        else:
            # Later commits exist: apply the inverse patch onto HEAD's tree. git writes
            # the patch to a file itself, so a big one never passes through memory.
            fd, patch_file = tempfile.mkstemp(prefix="fetch-undo-", suffix=".patch")
            os.close(fd)
            try:
                with self._private_index() as env:
                    self._run("read-tree", head, env=env)
                    self._run(
                        "diff-tree",
                        "-p",
                        "--binary",
                        "--no-ext-diff",
                        "--no-textconv",
                        f"--output={patch_file}",
                        sha,
                        parent,
                    )
                    try:
                        self._run("apply", "--cached", patch_file, env=env)
                    except GitError as err:
                        raise GitError(
                            "later commits touch the same lines; undo it by hand"
                        ) from err
                    tree = self._run("write-tree", env=env)
            finally:
                os.unlink(patch_file)
        new = self._run("commit-tree", tree, "-p", head, "-m", message, env=AUTHOR)
        self._run("update-ref", "-m", "fetch: undo", "HEAD", new, head)
        self._preflight()
        self._run("reset", "-q", "--hard", "HEAD")
        return new

    def subject(self, sha: str) -> str:
        self._preflight()
        return self._run("log", "-1", "--no-show-signature", "--format=%s", "--end-of-options", sha)


@contextmanager
def guard_repo_config(path: Path) -> Iterator[list[str]]:
    """Restore ``.git`` files that could make host git run programs; yield what changed.

    Restores also when the run fails or is cancelled (then quietly: the next git command
    refuses whatever is left). Refuses (GitError) to restore anything if ``.git`` itself
    was replaced: writing into a ``.git`` that is now a link would write where it points."""
    anchor = Anchor.of(path)
    saved = Path(tempfile.mkdtemp(prefix="fetch-gitguard-"))
    restored: list[str] = []
    try:
        for name in GUARDED:
            src = anchor.gitdir / name
            if src.is_symlink():
                continue  # not the owner's doing; check_gitdir refuses it later anyway
            if src.is_dir():
                shutil.copytree(src, saved / name, symlinks=True)
            elif src.exists():
                (saved / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, saved / name, follow_symlinks=False)
        try:
            yield restored
        except BaseException:
            with suppress(GitError, OSError):
                _restore(anchor, path, saved, restored)
            raise
        _restore(anchor, path, saved, restored)
    finally:
        shutil.rmtree(saved, ignore_errors=True)


def _restore(anchor: Anchor, path: Path, saved: Path, restored: list[str]) -> None:
    gitdir = anchor.gitdir
    st = os.lstat(gitdir) if os.path.lexists(gitdir) else None
    if (
        st is None
        or not stat.S_ISDIR(st.st_mode)
        or (st.st_dev, st.st_ino) != (anchor.dev, anchor.ino)
        or Path(os.path.realpath(path)) != anchor.root
    ):
        raise GitError(f"the harness replaced {anchor.root.name}/.git; I won't touch it")
    for name in GUARDED:
        now, before = gitdir / name, saved / name
        if _fingerprint(now) == _fingerprint(before):
            continue
        restored.append(f".git/{name}")
        _real_parents(gitdir, now)
        if now.is_dir() and not now.is_symlink():
            shutil.rmtree(now)
        elif now.exists() or now.is_symlink():
            now.unlink()
        if before.is_dir():
            shutil.copytree(before, now, symlinks=True)
        elif before.exists():
            shutil.copy2(before, now, follow_symlinks=False)
    check_gitdir(gitdir)


def _real_parents(gitdir: Path, path: Path) -> None:
    """Make every folder between ``gitdir`` and ``path`` a real directory (a link there
    is replaced by an empty folder), so a restore never writes through a link."""
    here = gitdir
    for part in path.relative_to(gitdir).parts[:-1]:
        here = here / part
        if here.is_symlink() or (here.exists() and not here.is_dir()):
            here.unlink()
        here.mkdir(exist_ok=True)


def _fingerprint(path: Path) -> str:
    if path.is_symlink():
        return "link:" + os.readlink(path)
    if path.is_file():
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        return "file:" + digest.hexdigest()
    if path.is_dir():
        parts = sorted(
            f"{p.relative_to(path)}={_fingerprint(p)}"
            for p in path.rglob("*")
            if p.is_symlink() or not p.is_dir()
        )
        return "dir:" + hashlib.sha256("\n".join(parts).encode()).hexdigest()
    return "absent"
