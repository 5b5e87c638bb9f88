"""One exception tree for Fetch, translated at the boundaries.

    FetchError
    ├── ConfigError            bad config file/value or identity markdown (names the file and key)
    ├── StoreError             SQLite failures, migrations
    ├── ChannelError
    │   └── SendFailed
    ├── HarnessError
    │   ├── UnknownHarness     (name, valid=[...])
    │   ├── HarnessUnavailable binary or credentials missing
    │   └── HarnessFailed      the CLI ended without success (message is phone-ready)
    ├── KennelError            the sandbox cannot run or is not as hardened as promised
    │   └── TreeRefused        a run's tree cannot travel to or from another engine as it is
    ├── GitError               a repository operation failed or was refused
    └── ApprovalError          stale, foreign, expired or mismatched approval

Control flow (``StopPropagation``) deliberately does not inherit from ``FetchError``:
it is not a failure and must never be caught by error handlers.
"""

from __future__ import annotations


class FetchError(Exception):
    """Base of every error Fetch raises on purpose."""


class ConfigError(FetchError):
    def __init__(self, source: str, key: str, expected: str) -> None:
        self.source, self.key, self.expected = source, key, expected
        where = f"{source}: {key}" if key else source
        super().__init__(f"{where}: {expected}")


class StoreError(FetchError):
    pass


class ChannelError(FetchError):
    pass


class SendFailed(ChannelError):
    pass


class HarnessError(FetchError):
    pass


class UnknownHarness(HarnessError):
    def __init__(self, name: str, valid: list[str]) -> None:
        self.name, self.valid = name, valid
        super().__init__(f"unknown harness {name!r}; valid: {', '.join(valid) or 'none'}")


class HarnessUnavailable(HarnessError):
    pass


class HarnessFailed(HarnessError):
    pass


class KennelError(FetchError):
    pass


class TreeRefused(KennelError):
    """A run's folder cannot be sent to, or taken back from, a kennel on another engine
    as it is (orchestrator/boundary/remote_files.py says why); nothing of it was written
    into the run's copy here."""


class GitError(FetchError):
    pass


class ApprovalError(FetchError):
    pass


class StopPropagation(Exception):
    """Raised by a handler to say: handled, nothing after me runs."""
