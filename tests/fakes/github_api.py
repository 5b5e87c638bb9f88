"""A fake GitHub REST API on 127.0.0.1 (real HTTP), backed by a real bare git repository
on disk that stands for GitHub's copy: refs are read from it, a pull request's head must
exist in it. The request and response JSON follow GitHub's documented shapes for the
endpoints used (repository, git refs, commits, pulls, merge), and its errors too: 401
``Bad credentials``, 422 ``Validation Failed`` with "A pull request already exists",
403/429 rate limits with ``x-ratelimit-remaining: 0`` / ``retry-after``.

Every request is recorded (method, path, query, Authorization, JSON body), so tests can
assert what was never asked (a merge, a write to the default branch).
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

DOCS = "https://docs.github.com/rest"


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    auth: str
    body: Any


@dataclass
class Scripted:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


def bad_credentials() -> Scripted:
    return Scripted(401, {"message": "Bad credentials", "documentation_url": DOCS, "status": "401"})


def rate_limited(status: int = 403, retry_after: int | None = None) -> Scripted:
    headers = {
        "x-ratelimit-limit": "5000",
        "x-ratelimit-remaining": "0",
        "x-ratelimit-used": "5000",
        "x-ratelimit-reset": str(int(time.time()) + 1800),
    }
    if retry_after is not None:
        headers["retry-after"] = str(retry_after)
    return Scripted(
        status,
        {"message": "API rate limit exceeded for user ID 1.", "documentation_url": DOCS},
        headers,
    )


def pull_exists(owner: str, branch: str) -> Scripted:
    return Scripted(
        422,
        {
            "message": "Validation Failed",
            "errors": [
                {
                    "resource": "PullRequest",
                    "code": "custom",
                    "message": f"A pull request already exists for {owner}:{branch}.",
                }
            ],
            "documentation_url": DOCS,
            "status": "422",
        },
    )


class FakeGitHub:
    def __init__(self, bare: Path, repo: str = "octo/fetch", token: str = "ghp_test") -> None:
        self.bare = bare
        self.repo = repo
        self.owner, self.name = repo.split("/")
        self.token = token
        self.default_branch = "main"
        self.requests: list[Recorded] = []
        self.pulls: dict[int, dict[str, Any]] = {}
        # (METHOD, path suffix after /repos/o/r) -> the next answers, one per request.
        self._script: dict[tuple[str, str], list[Scripted]] = {}
        self._runner: web.AppRunner | None = None
        self.url = ""

    # -- scripting -----------------------------------------------------------------------
    def script(self, method: str, suffix: str, answer: Scripted) -> None:
        self._script.setdefault((method, suffix), []).append(answer)

    def merge(self, number: int) -> None:
        """What a person does on GitHub (never Fetch): the pull request becomes merged."""
        pr = self.pulls[number]
        pr.update(state="closed", merged=True, merged_at="2026-01-01T00:00:00Z")

    def close_pull(self, number: int) -> None:
        self.pulls[number].update(state="closed", closed_at="2026-01-01T00:00:00Z")

    def writes(self) -> list[Recorded]:
        return [r for r in self.requests if r.method != "GET"]

    # -- lifecycle -------------------------------------------------------------------------
    async def __aenter__(self) -> FakeGitHub:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # -- git --------------------------------------------------------------------------------
    def _sha(self, ref: str) -> str | None:
        proc = subprocess.run(
            ["git", "--git-dir", str(self.bare), "rev-parse", "--verify", "--quiet", ref],
            capture_output=True,
            text=True,
            check=False,
        )
        return proc.stdout.strip() or None

    # -- HTTP ---------------------------------------------------------------------------------
    async def _handle(self, request: web.Request) -> web.Response:
        body: Any = None
        if request.can_read_body:
            try:
                body = await request.json()
            except ValueError:
                return self._json(400, {"message": "Problems parsing JSON"})
        self.requests.append(
            Recorded(
                request.method,
                request.path,
                dict(request.query),
                request.headers.get("Authorization", ""),
                body,
            )
        )
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return self._answer(bad_credentials())
        prefix = f"/repos/{self.repo}"
        if not request.path.startswith(prefix):
            return self._json(404, {"message": "Not Found", "documentation_url": DOCS})
        suffix = request.path[len(prefix) :]
        queued = self._script.get((request.method, suffix)) or self._script.get(
            (request.method, "*")
        )
        if queued:
            return self._answer(queued.pop(0))
        return self._route(request.method, suffix, request.query, body)

    def _route(self, method: str, suffix: str, query: Any, body: Any) -> web.Response:
        parts = [p for p in suffix.split("/") if p]
        if method == "GET" and not parts:
            return self._json(200, self._repository())
        if parts[:3] == ["git", "ref", "heads"] and method == "GET":
            branch = "/".join(parts[3:])
            sha = self._sha(f"refs/heads/{branch}")
            if sha is None:
                return self._json(404, {"message": "Not Found", "documentation_url": DOCS})
            return self._json(200, self._ref(branch, sha))
        if parts[:2] == ["git", "refs"] and method == "POST":
            # Creating a ref (Fetch never does; recorded so a test can say so).
            return self._json(201, self._ref(str(body.get("ref", "")), str(body.get("sha", ""))))
        if parts[:1] == ["commits"] and len(parts) == 2 and method == "GET":
            sha = self._sha(parts[1])
            if sha is None:
                return self._json(422, {"message": "No commit found for SHA: " + parts[1]})
            return self._json(200, {"sha": sha, "commit": {"message": ""}, "parents": []})
        if parts == ["pulls"] and method == "POST":
            return self._open(body)
        if parts == ["pulls"] and method == "GET":
            return self._json(200, self._list(query))
        if parts[:1] == ["pulls"] and len(parts) == 2 and method == "GET":
            pr = self.pulls.get(int(parts[1])) if parts[1].isdigit() else None
            if pr is None:
                return self._json(404, {"message": "Not Found", "documentation_url": DOCS})
            return self._json(200, pr)
        if parts[:1] == ["pulls"] and parts[-1:] == ["merge"] and method == "PUT":
            number = int(parts[1])
            self.merge(number)
            return self._json(200, {"merged": True, "message": "Pull Request successfully merged"})
        return self._json(404, {"message": "Not Found", "documentation_url": DOCS})

    def _repository(self) -> dict[str, Any]:
        return {
            "id": 1296269,
            "name": self.name,
            "full_name": self.repo,
            "owner": {"login": self.owner, "id": 1, "type": "User"},
            "private": False,
            "html_url": f"https://github.com/{self.repo}",
            "default_branch": self.default_branch,
            "permissions": {"admin": False, "push": True, "pull": True},
        }

    def _ref(self, branch: str, sha: str) -> dict[str, Any]:
        ref = branch if branch.startswith("refs/") else f"refs/heads/{branch}"
        return {
            "ref": ref,
            "node_id": "MDM6UmVmcmVmcy9oZWFkcy9mZWF0dXJlQQ==",
            "url": f"{self.url}/repos/{self.repo}/git/{ref}",
            "object": {
                "type": "commit",
                "sha": sha,
                "url": f"{self.url}/repos/{self.repo}/git/commits/{sha}",
            },
        }

    def _open(self, body: Any) -> web.Response:
        if not isinstance(body, dict) or not all(
            isinstance(body.get(k), str) and body.get(k) for k in ("title", "head", "base")
        ):
            return self._invalid("title/head/base", "missing_field")
        head, base = str(body["head"]), str(body["base"])
        head_sha = self._sha(f"refs/heads/{head}")
        if head_sha is None:
            return self._invalid("head", "invalid")
        if self._sha(f"refs/heads/{base}") is None:
            return self._invalid("base", "invalid")
        for pr in self.pulls.values():
            if pr["head"]["ref"] == head and pr["state"] == "open":
                return self._answer(pull_exists(self.owner, head))
        number = len(self.pulls) + 1
        self.pulls[number] = {
            "url": f"{self.url}/repos/{self.repo}/pulls/{number}",
            "id": 1000 + number,
            "html_url": f"https://github.com/{self.repo}/pull/{number}",
            "number": number,
            "state": "open",
            "locked": False,
            "title": body["title"],
            "body": body.get("body", ""),
            "draft": bool(body.get("draft", False)),
            "merged": False,
            "merged_at": None,
            "closed_at": None,
            "user": {"login": self.owner},
            "head": {"label": f"{self.owner}:{head}", "ref": head, "sha": head_sha},
            "base": {"label": f"{self.owner}:{base}", "ref": base},
        }
        return self._json(201, self.pulls[number])

    def _list(self, query: Any) -> list[dict[str, Any]]:
        state = query.get("state", "open")
        head = query.get("head", "")
        found = []
        for pr in self.pulls.values():
            if head and pr["head"]["label"] != head:
                continue
            if state != "all" and pr["state"] != state:
                continue
            found.append(pr)
        return found

    def _invalid(self, what: str, code: str) -> web.Response:
        return self._json(
            422,
            {
                "message": "Validation Failed",
                "errors": [{"resource": "PullRequest", "field": what, "code": code}],
                "documentation_url": DOCS,
            },
        )

    def _answer(self, scripted: Scripted) -> web.Response:
        return self._json(scripted.status, scripted.body, scripted.headers)

    @staticmethod
    def _json(status: int, data: Any, headers: dict[str, str] | None = None) -> web.Response:
        return web.json_response(data, status=status, headers=headers)


__all__ = ["FakeGitHub", "Recorded", "Scripted", "bad_credentials", "pull_exists", "rate_limited"]
