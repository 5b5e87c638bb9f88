"""The permission settings: who the members are, and the rules (``permissions:``).

Composed into ``orchestrator/config.py``'s ``Settings`` like every subsystem's section.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from core.settings import StrictSettings

Profile = Literal["owner", "collaborator", "viewer"]
MEMBER_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
SENDER_ID = re.compile(
    r"^(?:whatsapp:\d{6,15}|telegram:-?\d{1,20}|webhook:[A-Za-z0-9_.-]{1,64}"
    r"|terminal:[A-Za-z0-9_.-]{1,64})$"
)


class MemberSettings(StrictSettings):
    """One named person: the ids they write from, what they may do, where."""

    ids: tuple[str, ...]
    profile: Profile = "collaborator"
    repos: tuple[str, ...] = ()  # the repositories their tasks may touch

    @field_validator("ids")
    @classmethod
    def _ids(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("a member needs at least one id ('channel:id')")
        for entry in value:
            if not SENDER_ID.match(entry):
                raise ValueError(
                    f"{entry!r} is not 'channel:id' (whatsapp:<digits>, "
                    "telegram:<user id>, webhook:<name>, terminal:<name>)"
                )
        return value


class RuleSettings(StrictSettings):
    """``{effect: deny, what: "path:secrets/**", who: "*"}``.

    ``what`` is an action pattern (``instinct:undo``, ``tool:memory_*``, ``repo:myapp``,
    ``path:secrets/**``, ``approve``, ``talk``...); ``who`` a member name, ``owner``,
    ``profile:<name>`` or ``*``."""

    effect: Literal["deny", "ask", "allow"]
    what: str = Field(min_length=1)
    who: str = "*"


class PermissionSettings(StrictSettings):
    rules: tuple[RuleSettings, ...] = ()
    # Action patterns refused to everyone, the owner too (e.g. path:secrets/**): the
    # global layer of the layered ``permissions.deny`` (see layers.py).
    deny: tuple[str, ...] = ()
    # What the plain ``allowlist`` entries (no name) may do: everything but the owner's.
    allowlist_profile: Profile = "collaborator"
    # A chat's mode: ``normal``, or ``view`` (only what a viewer may do, for everyone in
    # it). ``group_mode`` is the mode of every group chat unless a chat layer says else.
    mode: Literal["normal", "view"] = "normal"
    group_mode: Literal["normal", "view"] = "normal"
    ask_ttl_seconds: int = Field(600, ge=30)
