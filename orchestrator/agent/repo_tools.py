"""Read-only repository tools for the orchestrator model: list, read and search files,
git log and show. Confined to the repository: every path goes through
``safe_relative_path`` (no absolute paths, no ``..``, no ``.git``, no encoded tricks)
and is resolved and checked again after symlinks, so a link pointing out is refused.
Git runs through the hardened host git (orchestrator/boundary/gitops.py). Every answer is
bounded. All are cached reads: the answer depends on the arguments and the repo only.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.validate import UnsafeName, safe_relative_path
from orchestrator.agent.access import repo_of
from orchestrator.boundary.gitops import Repo
from orchestrator.tools import ToolArgumentError, ToolRegistry, ToolResult

if TYPE_CHECKING:
    from orchestrator.context import Context

MAX_LIST = 400  # file names per listing
MAX_READ = 48 * 1024  # characters of one file shown
MAX_LINES = 400
MAX_HITS = 60
MAX_SCAN = 16 * 1024 * 1024  # bytes a search reads at most
MAX_FILE = 1024 * 1024  # bigger files are not searched
MAX_GIT = 32 * 1024  # bytes of git log / show output
REV = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./~^@{}-]{0,199}$")

REPO = {"repo": {"type": "string"}}  # default: the active repo (the prompt says so)


def confined(root: Path, raw: str) -> tuple[str, Path]:
    """(the clean relative path, the real file) or ``ToolArgumentError``."""
    try:
        rel = safe_relative_path(raw)
    except UnsafeName as err:
        raise ToolArgumentError(str(err)) from err
    real_root = root.resolve()
    real = (root / rel).resolve()
    if not real.is_relative_to(real_root) or real.is_relative_to(real_root / ".git"):
        raise ToolArgumentError(f"{raw!r} leads outside the repository (a symlink)")
    return rel, real


def tracked(repo: Repo, under: str) -> list[str]:
    """Tracked and untracked, not ignored, files (git lists symlinks, never follows)."""
    out = repo.run(
        "ls-files",
        "--cached",
        "--others",
        "--exclude-standard",
        "-z",
        *(["--", under] if under else []),
        strip=False,
    )
    return sorted({p for p in out.split("\0") if p})


def _list(repo: Repo, under: str) -> str:
    if under:
        under = confined(repo.path, under)[0]
    files = tracked(repo, under)
    if not files:
        return f"no files under {under}" if under else "(no files)"
    shown = files[:MAX_LIST]
    more = [f"… {len(files) - MAX_LIST} more (name a folder)"] if len(files) > MAX_LIST else []
    return "\n".join([*shown, *more])


def _read(repo: Repo, raw: str, start: int, count: int) -> str:
    rel, real = confined(repo.path, raw)
    if not real.is_file():
        raise ToolArgumentError(f"no file {rel!r} in the repository")
    size = real.stat().st_size
    with real.open("rb") as fh:
        data = fh.read(MAX_FILE)
    if b"\0" in data[:8192]:
        return f"{rel}: a binary file ({size} bytes)"
    lines = data.decode(errors="replace").splitlines()
    first = max(1, start)
    chosen = lines[first - 1 : first - 1 + min(count, MAX_LINES)]
    body = "\n".join(f"{first + i}: {line}" for i, line in enumerate(chosen))
    cut = len(body) > MAX_READ
    body = body[:MAX_READ]
    end = first + len(chosen) - 1
    total = f"{len(lines)}" if size <= MAX_FILE else f"the first {len(lines)} (of {size} bytes)"
    tail = f"\n[lines {first}-{end} of {total}]" if cut or end < len(lines) or first > 1 else ""
    return f"{rel}:\n{body}{tail}"


def _search(repo: Repo, query: str, under: str) -> str:
    if not query:
        raise ToolArgumentError("the query is empty")
    if under:
        under = confined(repo.path, under)[0]
    hits: list[str] = []
    scanned = 0
    needle = query.lower()
    for rel in tracked(repo, under):
        try:
            _clean, real = confined(repo.path, rel)
        except ToolArgumentError:
            continue  # a symlink out is skipped, never read
        if not real.is_file() or real.stat().st_size > MAX_FILE:
            continue
        data = real.read_bytes()
        scanned += len(data)
        if b"\0" in data[:8192]:
            continue
        for number, line in enumerate(data.decode(errors="replace").splitlines(), 1):
            if needle in line.lower():
                hits.append(f"{rel}:{number}: {line.strip()[:200]}")
                if len(hits) >= MAX_HITS:
                    return "\n".join([*hits, f"… stopped at {MAX_HITS} matches"])
        if scanned > MAX_SCAN:
            return "\n".join([*hits, "… stopped: searched enough bytes; narrow the path"])
    return "\n".join(hits) or f"no match for {query!r}"


def _git(repo: Repo, *args: str) -> str:
    out, cut = repo.read_capped(*args, limit=MAX_GIT)
    return out + ("\n[… cut]" if cut else "") if out.strip() else "(nothing)"


def _log(repo: Repo, path: str, count: int) -> str:
    if not repo.has_commits():
        return "(no commits yet)"
    rel = confined(repo.path, path)[0] if path else ""
    return _git(
        repo,
        "log",
        f"-n{max(1, min(count, 50))}",
        "--no-color",
        "--format=%h %ad %an: %s",
        "--date=short",
        "--",
        *([rel] if rel else []),
    ).rstrip("\n")


def _show(repo: Repo, rev: str, path: str) -> str:
    if not REV.match(rev) or ".." in rev:
        raise ToolArgumentError(f"{rev!r} is not a revision (a sha, branch, tag, HEAD~2)")
    if path:
        return _git(repo, "show", "--no-color", f"{rev}:{safe_relative_path(path)}")
    return _git(repo, "show", "--no-color", "--stat", "--patch", rev, "--")


def _number(args: dict[str, Any], name: str, default: int) -> int:
    value = args.get(name, default)
    try:
        return int(value)
    except (TypeError, ValueError) as err:
        raise ToolArgumentError(f"argument {name!r} must be a number") from err


def register_tools(registry: ToolRegistry) -> None:
    def repo(ctx: Context, args: dict[str, Any]) -> Repo:
        return ctx.services.workspace.repo(repo_of(ctx, args))

    @registry.tool(
        "repo_list_files",
        "List files (under path).",
        {**REPO, "path": {"type": "string"}},
        [],
        kind="read",
        cached=True,
    )
    async def repo_list_files(ctx: Context, args: dict[str, Any]) -> ToolResult:
        return ToolResult(await asyncio.to_thread(_list, repo(ctx, args), args.get("path") or ""))

    @registry.tool(
        "repo_read_file",
        "Read a file, numbered lines.",
        {
            **REPO,
            "path": {"type": "string"},
            "start": {"type": "integer"},
            "lines": {"type": "integer"},
        },
        ["path"],
        kind="read",
        cached=True,
    )
    async def repo_read_file(ctx: Context, args: dict[str, Any]) -> ToolResult:
        return ToolResult(
            await asyncio.to_thread(
                _read,
                repo(ctx, args),
                args["path"],
                _number(args, "start", 1),
                _number(args, "lines", MAX_LINES),
            )
        )

    @registry.tool(
        "repo_search",
        "Find text in files.",
        {**REPO, "query": {"type": "string"}, "path": {"type": "string"}},
        ["query"],
        kind="read",
        cached=True,
    )
    async def repo_search(ctx: Context, args: dict[str, Any]) -> ToolResult:
        return ToolResult(
            await asyncio.to_thread(_search, repo(ctx, args), args["query"], args.get("path") or "")
        )

    @registry.tool(
        "git_log",
        "Recent commits (of path).",
        {**REPO, "path": {"type": "string"}, "count": {"type": "integer"}},
        [],
        kind="read",
        cached=True,
    )
    async def git_log(ctx: Context, args: dict[str, Any]) -> ToolResult:
        return ToolResult(
            await asyncio.to_thread(
                _log, repo(ctx, args), args.get("path") or "", _number(args, "count", 10)
            )
        )

    @registry.tool(
        "git_show",
        "A commit's patch, or path at rev.",
        {**REPO, "rev": {"type": "string"}, "path": {"type": "string"}},
        ["rev"],
        kind="read",
        cached=True,
    )
    async def git_show(ctx: Context, args: dict[str, Any]) -> ToolResult:
        return ToolResult(
            await asyncio.to_thread(_show, repo(ctx, args), args["rev"], args.get("path") or "")
        )
