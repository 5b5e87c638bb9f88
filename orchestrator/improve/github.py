"""The GitHub REST client of self-improvement, run on the host only.

It can read the repository, read one branch's ref, open a pull request and read pull
requests. It has no method that merges, writes a ref or touches the default branch: Fetch
proposes, a person merges. The token is sent only to ``api_url`` (redirects are never
followed, so it cannot be carried elsewhere) and is never logged.

Errors come back as ``GitHubError`` with the words the phone shows: a bad token, a rate
limit and when it lifts, a pull request that already exists (``PullExists``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp

from core.errors import FetchError

API_VERSION = "2022-11-28"
TIMEOUT_SECONDS = 30.0
MAX_BODY = 60_000  # GitHub refuses a pull request body over 65,536 characters


class GitHubError(FetchError):
    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class PullExists(GitHubError):
    """422: a pull request for this head branch is already open."""


class RateLimited(GitHubError):
    def __init__(self, message: str, status: int, retry_at: float | None) -> None:
        super().__init__(message, status)
        self.retry_at = retry_at


@dataclass(frozen=True, slots=True)
class PullRequest:
    number: int
    url: str  # html_url: what the owner opens
    state: str  # open | closed | merged (GitHub says "closed" + merged: true)
    title: str
    head: str
    base: str
    draft: bool = False

    @classmethod
    def from_json(cls, data: Any) -> PullRequest:
        if not isinstance(data, dict) or not isinstance(data.get("number"), int):
            raise GitHubError("GitHub's answer is not a pull request")
        state = str(data.get("state", ""))
        if data.get("merged") or data.get("merged_at"):
            state = "merged"
        head, base = data.get("head") or {}, data.get("base") or {}
        return cls(
            number=data["number"],
            url=str(data.get("html_url", "")),
            state=state,
            title=str(data.get("title", "")),
            head=str(head.get("ref", "")) if isinstance(head, dict) else "",
            base=str(base.get("ref", "")) if isinstance(base, dict) else "",
            draft=bool(data.get("draft", False)),
        )


class GitHub:
    """One repository on one GitHub API. ``close()`` ends its HTTP session."""

    def __init__(self, api_url: str, repo: str, token: str | None) -> None:
        if not token:
            raise GitHubError(
                "no GitHub token: set FETCH_GITHUB_TOKEN (a token that may push branches "
                f"and open pull requests on {repo}) and restart Fetch"
            )
        self.api_url = api_url.rstrip("/")
        self.repo = repo
        self.owner = repo.split("/", 1)[0]
        self._token = token
        self._http: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

    # -- the calls ---------------------------------------------------------------------
    async def default_branch(self) -> str:
        data = await self._call("GET", f"/repos/{self.repo}")
        branch = data.get("default_branch") if isinstance(data, dict) else None
        if not isinstance(branch, str) or not branch:
            raise GitHubError(f"GitHub did not say which branch of {self.repo} is the default")
        return branch

    async def branch_sha(self, branch: str) -> str | None:
        """The commit ``branch`` points at on GitHub, or None when it does not exist."""
        try:
            data = await self._call("GET", f"/repos/{self.repo}/git/ref/heads/{_path(branch)}")
        except GitHubError as err:
            if err.status == 404:
                return None
            raise
        obj = data.get("object") if isinstance(data, dict) else None
        sha = obj.get("sha") if isinstance(obj, dict) else None
        return sha if isinstance(sha, str) else None

    async def open_pull(
        self, *, title: str, head: str, base: str, body: str, draft: bool = False
    ) -> PullRequest:
        payload = {
            "title": title[:250],
            "head": head,
            "base": base,
            "body": body[:MAX_BODY],
            "draft": draft,
            "maintainer_can_modify": True,
        }
        return PullRequest.from_json(await self._call("POST", f"/repos/{self.repo}/pulls", payload))

    async def find_pull(self, head: str) -> PullRequest | None:
        """The pull request (any state) whose head is ``head`` in this repository."""
        data = await self._call(
            "GET",
            f"/repos/{self.repo}/pulls",
            params={"head": f"{self.owner}:{head}", "state": "all", "per_page": "5"},
        )
        if not isinstance(data, list) or not data:
            return None
        return PullRequest.from_json(data[0])

    async def pull(self, number: int) -> PullRequest:
        return PullRequest.from_json(await self._call("GET", f"/repos/{self.repo}/pulls/{number}"))

    # -- HTTP --------------------------------------------------------------------------
    async def _call(
        self,
        method: str,
        path: str,
        payload: dict[str, Any] | None = None,
        params: dict[str, str] | None = None,
    ) -> Any:
        if self._http is None:
            self._http = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=TIMEOUT_SECONDS),
                headers={
                    "Accept": "application/vnd.github+json",
                    "X-GitHub-Api-Version": API_VERSION,
                    "User-Agent": "fetch-assistant",
                },
            )
        headers = {"Authorization": f"Bearer {self._token}"}
        try:
            async with self._http.request(
                method,
                self.api_url + path,
                json=payload,
                params=params,
                headers=headers,
                allow_redirects=False,  # the token goes to api_url and nowhere else
            ) as resp:
                text = await resp.text()
                status = resp.status
                limit = _rate_limit(resp.headers)
        except (aiohttp.ClientError, TimeoutError) as err:
            raise GitHubError(
                f"cannot reach GitHub at {self.api_url}: {err or 'timed out'}"
            ) from err
        try:
            data = json.loads(text) if text else {}
        except ValueError:
            data = None
        if 200 <= status < 300:
            if data is None:
                raise GitHubError(f"GitHub answered {method} {path} with something not JSON")
            return data
        raise _error(status, data, limit, self.repo)


def _path(ref: str) -> str:
    return "/".join(quote(part, safe="") for part in ref.split("/"))


def _rate_limit(headers: Any) -> float | None:
    """When the limit lifts (epoch seconds), if GitHub says it is spent; else None."""
    retry = headers.get("retry-after")
    if retry is not None and str(retry).strip().isdigit():
        return time.time() + int(str(retry).strip())
    if headers.get("x-ratelimit-remaining") == "0":
        reset = headers.get("x-ratelimit-reset")
        if reset is not None and str(reset).strip().isdigit():
            return float(int(str(reset).strip()))
        return time.time() + 60
    return None


def _message(data: Any) -> str:
    if not isinstance(data, dict):
        return ""
    text = str(data.get("message", ""))
    details = [
        str(e.get("message") or " ".join(str(e.get(k, "")) for k in ("field", "code")).strip())
        for e in data.get("errors") or []
        if isinstance(e, dict)
    ]
    details = [d for d in details if d]
    return text + (": " + "; ".join(details) if details else "")


def _error(status: int, data: Any, retry_at: float | None, repo: str) -> GitHubError:
    said = _message(data)[:300]
    if status in (403, 429) and (retry_at is not None or "rate limit" in said.lower()):
        when = retry_at or time.time() + 60
        minutes = max(1, round((when - time.time()) / 60))
        clock = time.strftime("%H:%M UTC", time.gmtime(when))
        return RateLimited(
            f"GitHub's rate limit is spent (HTTP {status}); it lifts at {clock}, in about "
            f"{minutes} min. Try again then.",
            status,
            when,
        )
    if status == 401:
        return GitHubError(
            f"GitHub refused the token (401 {said or 'Bad credentials'}): check "
            "FETCH_GITHUB_TOKEN, it may have expired",
            status,
        )
    if status == 403:
        return GitHubError(
            f"GitHub forbids it (403 {said}): the token needs contents: write and "
            f"pull requests: write on {repo}",
            status,
        )
    if status == 404:
        return GitHubError(
            f"GitHub says not found (404): no repository {repo}, or the token cannot see it",
            status,
        )
    if status == 422 and "already exists" in said.lower():
        return PullExists(f"GitHub: {said}", status)
    if status == 422:
        return GitHubError(f"GitHub refused the request (422 {said})", status)
    return GitHubError(f"GitHub answered HTTP {status} {said}".rstrip(), status)


__all__ = ["GitHub", "GitHubError", "PullExists", "PullRequest", "RateLimited"]
