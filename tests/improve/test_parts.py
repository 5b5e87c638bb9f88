"""The parts of /improve on their own: strict settings, where the remote is, the one
branch host git may push (with the token only in that process's environment, seen
arriving at a real HTTP server), the GitHub client's words, and the PR body."""

from __future__ import annotations

import asyncio
import base64
import subprocess
from pathlib import Path

import pytest
from aiohttp import web

from core.errors import ConfigError, GitError
from orchestrator.boundary.gitops import Change, FileStat
from orchestrator.config import Settings, load_settings
from orchestrator.improve import body
from orchestrator.improve.checkout import (
    Checkout,
    auth_env,
    branch_name,
    resolve_remote,
    running_checkout,
)
from orchestrator.improve.github import GitHub, GitHubError, PullRequest
from orchestrator.task.testrun import SuitePlan, SuiteResult
from tests.conftest import git, make_repo
from tests.fakes.github_api import FakeGitHub
from tests.fakes.require import missing

TOKEN = "ghp_unit0123456789TOKEN"


def settings_with(tmp_path: Path, **env: str) -> Settings:
    return load_settings(None, {"FETCH_HOME": str(tmp_path / "home"), **env})


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("REPO", "not a repo", "is not owner/name"),
        ("API_URL", "http://example.com", "plain http is only for 127.0.0.1"),
        ("API_URL", "ftp://x", "is not an http(s) URL"),
        ("REMOTE", "https://me:ghp_x@github.com/o/r.git", "never in the remote URL"),
        ("REMOTE", "git@github.com:o/r.git", "ssh is not used"),
        ("BASE_BRANCH", "fetch/improve-1-x", "Fetch's proposals, not a base"),
        ("BASE_BRANCH", "-rf", "is not a branch name"),
        ("SCHEDULE", "61 * * * *", "minute field"),
    ],
)
def test_bad_settings_name_the_key(tmp_path: Path, key: str, value: str, words: str) -> None:
    with pytest.raises(ConfigError) as err:
        settings_with(
            tmp_path,
            FETCH__IMPROVE__ENABLED="true",
            FETCH__IMPROVE__REPO="octo/fetch" if key != "REPO" else value,
            **({f"FETCH__IMPROVE__{key}": value} if key != "REPO" else {}),
        )
    assert f"improve.{key.lower()}" in str(err.value) and words in str(err.value), str(err.value)


def test_enabled_needs_a_repo_and_schedule_needs_enabled(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"improve.repo \(owner/name on GitHub\) is required"):
        settings_with(tmp_path, FETCH__IMPROVE__ENABLED="true")
    with pytest.raises(ConfigError, match=r"improve\.schedule needs improve\.enabled"):
        settings_with(tmp_path, FETCH__IMPROVE__SCHEDULE="0 9 * * 1")


def test_token_from_env_wins_and_is_never_shown(tmp_path: Path) -> None:
    s = load_settings(
        None,
        {"FETCH_HOME": str(tmp_path), "GITHUB_TOKEN": "ghp_other", "FETCH_GITHUB_TOKEN": TOKEN},
    )
    assert s.improve.token == TOKEN
    assert TOKEN not in repr(s) and TOKEN not in str(s)


def test_the_remote_defaults_to_the_checkouts_origin_over_https(tmp_path: Path) -> None:
    checkout = make_repo(tmp_path, "installed", {"a.txt": "a\n"})
    assert resolve_remote(None, "octo/fetch", checkout) == "https://github.com/octo/fetch.git"
    git(checkout, "remote", "add", "origin", "git@github.com:octo/fetch.git")
    assert resolve_remote(None, "octo/fetch", checkout) == "https://github.com/octo/fetch.git"
    git(checkout, "remote", "set-url", "origin", "https://github.com/me/fork.git")
    assert resolve_remote(None, "octo/fetch", checkout) == "https://github.com/me/fork.git"


def test_the_running_installation_is_never_the_remote() -> None:
    running = running_checkout()
    if running is None:
        missing("Fetch is not running from a git checkout here", ci_must="run from one")
    with pytest.raises(GitError, match="Fetch's running installation"):
        resolve_remote(str(running), "octo/fetch", running)
    with pytest.raises(GitError, match="inside"):
        Checkout(running / "scratch", "/nowhere", "main", "fetch/improve-1-x", None).clone()


def test_only_fetch_improve_branches_are_pushed(tmp_path: Path) -> None:
    for bad in ("main", "feature", "fetch/task-3"):
        with pytest.raises(GitError, match="only fetch/improve"):
            Checkout(tmp_path / "c", "/r", "main", bad, None)
    assert branch_name(7, "Make /status say more!") == "fetch/improve-7-make-status-say-more"
    assert branch_name(8, "!!!") == "fetch/improve-8-change"


def test_the_token_goes_to_https_git_only_as_a_header() -> None:
    env = auth_env("https://github.com/octo/fetch.git", TOKEN)
    header = env["GIT_CONFIG_VALUE_0"]
    assert env["GIT_CONFIG_KEY_0"] == "http.extraHeader" and header.startswith("Authorization:")
    assert base64.b64decode(header.split()[-1]).decode() == f"x-access-token:{TOKEN}"
    assert auth_env("/srv/git/fetch.git", TOKEN) == {}
    assert auth_env("https://github.com/o/r.git", None) == {}


async def test_a_push_over_http_carries_the_token_and_never_shows_it(tmp_path: Path) -> None:
    """A real git push to a real HTTP server: the token arrives as a header from the host
    process; the scratch checkout holds no remote; a failure never prints the token."""
    source = make_repo(tmp_path, "src", {"README.md": "Teh\n"})
    seen: list[str] = []

    async def refuse(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization", ""))
        return web.Response(status=403, text=f"denied {TOKEN}")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", refuse)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        checkout = Checkout(tmp_path / "scratch", str(source), "main", "fetch/improve-1-t", TOKEN)
        repo = checkout.clone()
        config = (repo.path / ".git" / "config").read_text()
        assert "remote" not in config and TOKEN not in config
        assert git(repo.path, "branch", "--show-current") == "fetch/improve-1-t"
        (repo.path / "README.md").write_text("The\n")
        sha = checkout.commit(repo.change(), "fix")
        checkout.remote = f"http://127.0.0.1:{port}/octo/fetch.git"
        with pytest.raises(GitError) as err:
            await asyncio.to_thread(checkout.push, sha)
        assert TOKEN not in str(err.value)
        assert checkout.pushed is None
    finally:
        await runner.cleanup()
    expected = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    assert seen and seen[0] == f"Basic {expected}", seen
    assert TOKEN not in (tmp_path / "scratch" / ".git" / "config").read_text()


async def test_github_client_states_and_no_merge(tmp_path: Path) -> None:
    bare = tmp_path / "r.git"
    await asyncio.to_thread(subprocess.run, ["git", "init", "-q", "--bare", str(bare)], check=True)
    assert not [name for name in dir(GitHub) if "merge" in name.lower()]
    async with FakeGitHub(bare, "octo/fetch", TOKEN) as fake:
        client = GitHub(fake.url, "octo/fetch", TOKEN)
        try:
            assert await client.default_branch() == "main"
            assert await client.branch_sha("fetch/improve-9-none") is None
            with pytest.raises(GitHubError, match="head invalid"):
                await client.open_pull(title="t", head="nope", base="main", body="b")
            assert await client.find_pull("nope") is None
            with pytest.raises(GitHubError, match="not found"):
                await client.pull(4)
        finally:
            await client.close()
    with pytest.raises(GitHubError, match="no GitHub token"):
        GitHub("https://api.github.com", "octo/fetch", None)
    merged = PullRequest.from_json(
        {"number": 3, "state": "closed", "merged_at": "2026-01-01T00:00:00Z", "html_url": "u"}
    )
    assert merged.state == "merged"


def test_the_body_is_cut_to_size() -> None:
    files = tuple(FileStat(f"f{i}.py", i, 1, False) for i in range(50))
    change = Change("a" * 40, "b" * 40, "", files)
    result = SuiteResult(SuitePlan("custom", "pytest", "custom"), ran=True, exit_code=1, failed=1)
    result.output = ["x" * 500, *(f"line {i}" for i in range(100)), "```"]
    text = body.body("do a thing", change, result, "fetch/improve-1-x", "main")
    assert "50 files changed, +1225 −50" in text
    assert "…and 10 more files" in text and "f40.py" not in text
    assert "❌ failed" in text and "line 99" in text and "line 60" not in text
    assert "````text" in text  # a fence longer than any in the output
    assert "Fetch never merges" in text
    assert body.title("x " * 200).endswith("…") and len(body.title("x " * 200)) < 100
