"""One decision per (subject, action), resolved in ONE order. Deny before ask before allow:

1. **deny rules**: ``permissions.rules`` with ``effect: deny`` and the layered
   ``permissions.deny`` patterns (global, repository, chat). They bind the owner too.
2. **mode**: a chat in ``view`` mode (``permissions.mode``, ``group_mode`` for groups)
   allows only what a viewer may (help, commands, status), to everyone in it.
3. **ask rules**: ``effect: ask``. A grant that covers the action (once, session or
   persisted) answers the question already: allow. Otherwise: ask the owner (the owner
   is never asked: an ask rule allows the owner).
4. **allow rules**: ``effect: allow``.
5. **session grants**: the owner's yes for this subject in this chat, until /clear
   (``once`` grants are session grants that are used up by one use).
6. **persisted grants**: the owner's yes until ``/grants revoke``.
7. **defaults**: the subject's profile (owner: everything; collaborator; viewer; see
   model.py). Nothing matched: deny.

``explain`` on every ``Decision`` names the step and the rule, grant or default.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from core.events import SessionKey
from orchestrator.permissions.grants import GrantStore
from orchestrator.permissions.model import (
    OWNER,
    VIEWER_ALLOWS,
    Decision,
    Effect,
    Subject,
    matches,
    profile_allows,
)
from orchestrator.permissions.settings import RuleSettings

ORDER = (
    "deny rule",
    "mode",
    "ask rule",
    "allow rule",
    "session grant",
    "persisted grant",
    "default",
)


@dataclass(frozen=True, slots=True)
class Policy:
    """What the layers say for one chat (and the repository it works in, if any)."""

    mode: str = "normal"
    deny: tuple[str, ...] = ()
    source_of_mode: str = "default"
    ttl_seconds: int = 3600  # approvals.ttl_seconds, as layered
    autonomy: str = "supervised"  # approvals.autonomy: a committed .fetch.yaml caps it
    test_command: str = ""  # "": detected from the project's files


def _who(rule: RuleSettings, subject: Subject) -> bool:
    return rule.who in ("*", subject.id, f"profile:{subject.profile}") or (
        rule.who == OWNER and subject.is_owner
    )


class Resolver:
    def __init__(self, rules: Iterable[RuleSettings], grants: GrantStore) -> None:
        self._rules = tuple(rules)
        self._grants = grants

    def _rule(self, effect: str, subject: Subject, action: str) -> RuleSettings | None:
        return next(
            (
                r
                for r in self._rules
                if r.effect == effect and _who(r, subject) and matches(r.what, action)
            ),
            None,
        )

    def decide(
        self, subject: Subject, action: str, key: SessionKey | None, policy: Policy = Policy()
    ) -> Decision:
        def say(effect: Effect, step: str, why: str) -> Decision:
            return Decision(effect, action, step, why)

        rule = self._rule("deny", subject, action)
        if rule is not None:
            return say(Effect.DENY, ORDER[0], f"{rule.what} for {rule.who}")
        pattern = next((p for p in policy.deny if matches(p, action)), None)
        if pattern is not None:
            return say(Effect.DENY, ORDER[0], f"permissions.deny {pattern}")
        if policy.mode == "view" and not any(matches(p, action) for p in VIEWER_ALLOWS):
            return say(Effect.DENY, ORDER[1], f"this chat is view-only ({policy.source_of_mode})")
        rule = self._rule("ask", subject, action)
        if rule is not None:
            if subject.is_owner:
                return say(Effect.ALLOW, ORDER[2], "the owner is never asked")
            grant = self._grants.find(subject.id, action, key, ("once", "session", "persisted"))
            if grant is not None:
                return say(Effect.ALLOW, ORDER[2], f"answered by grant {grant.describe()}")
            return say(Effect.ASK, ORDER[2], f"{rule.what} for {rule.who}")
        rule = self._rule("allow", subject, action)
        if rule is not None:
            return say(Effect.ALLOW, ORDER[3], f"{rule.what} for {rule.who}")
        grant = self._grants.find(subject.id, action, key, ("once", "session"))
        if grant is not None:
            return say(Effect.ALLOW, ORDER[4], grant.describe())
        grant = self._grants.find(subject.id, action, key, ("persisted",))
        if grant is not None:
            return say(Effect.ALLOW, ORDER[5], grant.describe())
        if profile_allows(subject, action):
            return say(Effect.ALLOW, ORDER[6], f"profile {subject.profile}")
        return say(Effect.DENY, ORDER[6], f"profile {subject.profile} does not include it")

    def once_grant(self, subject: Subject, action: str, key: SessionKey | None) -> int | None:
        """The ``once`` grant a just-allowed action used, so the caller can use it up."""
        grant = self._grants.find(subject.id, action, key, ("once",))
        return grant.id if grant is not None else None
