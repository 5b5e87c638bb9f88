"""The ``improve:`` section: where Fetch's own repository is, on disk and on GitHub, how
its tests run, and the optional self-review schedule (orchestrator/improve/).

The token is read here (``FETCH_GITHUB_TOKEN`` or ``GITHUB_TOKEN``) and used only by the
host: by the GitHub client and by the host git that pushes the branch. It is never given
to the kennel, never written into a checkout and never part of a URL.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from core.hosts import is_loopback
from core.settings import StrictSettings

# GitHub's own limits: a login is 1-39 of [A-Za-z0-9-]; a repository name 1-100 of
# [A-Za-z0-9._-] (and never "." or "..").
REPO_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/(?!\.{1,2}$)[A-Za-z0-9._-]{1,100}$")
# A branch name git accepts and that reads as a name (check-ref-format's rules, simplified
# to what a base branch realistically is).
BRANCH_NAME = re.compile(r"^(?!-)(?!.*\.\.)(?!.*//)(?!.*@\{)[A-Za-z0-9._/-]{1,200}(?<![./])$")
DEFAULT_TEST_COMMAND = "python3 -m pytest -q -x -p no:cacheprovider tests/unit"
DEFAULT_API = "https://api.github.com"


class ImproveSettings(StrictSettings):
    """``/improve`` and ``/prs``: Fetch proposes changes to itself as pull requests."""

    enabled: bool = False
    # Where the branch is cloned from and pushed to: an https URL of the GitHub repository
    # or a local path / file:// URL. Unset: the installed checkout's ``origin``.
    remote: str | None = None
    repo: str | None = None  # owner/name on GitHub, where the pull request is opened
    api_url: str = DEFAULT_API
    token: str | None = Field(None, repr=False)
    base_branch: str | None = None  # unset: the repository's default branch on GitHub
    # Run inside the kennel on the scratch checkout: no network, no token.
    test_command: str = DEFAULT_TEST_COMMAND
    test_timeout_seconds: float = Field(900.0, gt=0, le=7200)
    # A cron expression: a self-review that only ever proposes (a prompt job).
    schedule: str | None = None

    @field_validator("repo")
    @classmethod
    def _repo(cls, value: str | None) -> str | None:
        if value is not None and not REPO_NAME.match(value):
            raise ValueError(f"{value!r} is not owner/name (e.g. octocat/fetch)")
        return value

    @field_validator("api_url")
    @classmethod
    def _api(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in {"https", "http"} or not parts.hostname:
            raise ValueError(f"{value!r} is not an http(s) URL (e.g. {DEFAULT_API})")
        if parts.username or parts.password:
            raise ValueError("put the token in FETCH_GITHUB_TOKEN, never in the URL")
        if parts.scheme == "http" and not is_loopback(parts.hostname):
            # The token rides on every call: in clear text only to this machine.
            raise ValueError(f"{value!r}: plain http is only for 127.0.0.1; use https")
        return value.rstrip("/")

    @field_validator("remote")
    @classmethod
    def _remote(cls, value: str | None) -> str | None:
        if value is None:
            return None
        problem = remote_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("base_branch")
    @classmethod
    def _base(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not BRANCH_NAME.match(value) or value.endswith(".lock"):
            raise ValueError(f"{value!r} is not a branch name (e.g. main)")
        if value.startswith("fetch/"):
            raise ValueError(f"{value!r}: fetch/... branches are Fetch's proposals, not a base")
        return value

    @field_validator("test_command")
    @classmethod
    def _test_command(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("an empty test command; e.g. " + DEFAULT_TEST_COMMAND)
        return value

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        from orchestrator.scheduler.cron import CronError, parse_cron

        try:
            parse_cron(value)
        except CronError as err:
            raise ValueError(str(err)) from None
        return value

    @model_validator(mode="after")
    def _needs_repo(self) -> ImproveSettings:
        if self.enabled and self.repo is None:
            raise ValueError("improve.repo (owner/name on GitHub) is required when enabled")
        if self.schedule and not self.enabled:
            raise ValueError("improve.schedule needs improve.enabled: true")
        return self


def remote_problem(value: str) -> str | None:
    """Why ``value`` cannot be the remote, or None. https and local paths only: ssh would
    need a key on the host and a program git runs; a token must never sit in a URL."""
    if value.startswith("/") or value.startswith("file://"):
        return None
    parts = urlsplit(value)
    if parts.scheme == "https" and parts.hostname:
        if parts.username or parts.password:
            return "put the token in FETCH_GITHUB_TOKEN, never in the remote URL"
        return None
    if parts.scheme == "http" and parts.hostname and is_loopback(parts.hostname):
        return None
    return (
        f"{value!r}: use the https URL of the repository (https://github.com/owner/name.git)"
        " or a local path; ssh is not used (the token is sent by Fetch itself)"
    )


def is_local(remote: str) -> bool:
    return remote.startswith("/") or remote.startswith("file://")


def local_path(remote: str) -> Path:
    return Path(remote[len("file://") :] if remote.startswith("file://") else remote)


__all__ = [
    "DEFAULT_TEST_COMMAND",
    "ImproveSettings",
    "is_local",
    "local_path",
    "remote_problem",
]
