"""A team around one Fetch: the owner, alice (collaborator on demo), vic (viewer), an
unnamed allowlisted sender, all writing through the real gateway on a recording phone
channel; the terminal is the owner's too. The model is the scripted HTTP fake."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from channels.terminal import TerminalChannel
from core.events import Inbound
from orchestrator.app import App, build_app
from orchestrator.config import Settings
from tests.conftest import Driver
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.recording_channel import RecordingChannel

OWNER = "4915100000000"
ALICE = "4915100000001"
VIC = "4915100000002"
PLAIN = "4915100000003"  # on the allowlist, no name
GROUP = "120363000000000001@g.us"
SENDERS = {"owner": OWNER, "collaborator": ALICE, "viewer": VIC}


class Phone(RecordingChannel):
    """The team's phone: a recording WhatsApp channel."""

    def __init__(self) -> None:
        super().__init__("whatsapp")


@dataclass
class Team:
    app: App
    owner: Driver
    phone: Phone
    model: ScriptedModelServer
    seen: dict[str, int] = field(default_factory=dict)

    @property
    def services(self) -> Any:
        assert self.app.services is not None
        return self.app.services

    def to(self, chat: str) -> list[str]:
        return [m.text for m in self.phone.sent if m.chat == chat]

    async def say(
        self,
        sender: str,
        text: str,
        *,
        chat: str | None = None,
        wait_for: str | None = None,
        timeout: float = 20,
        **kw: Any,
    ) -> list[str]:
        """Send as ``sender``; return what Fetch said in that chat since (at least one
        message, or the one containing ``wait_for``)."""
        assert self.app.gateway is not None
        chat = chat or sender
        before = len(self.to(chat))
        await self.app.gateway.receive(
            Inbound(
                channel="whatsapp",
                chat=chat,
                sender=sender,
                message_id=uuid.uuid4().hex,
                text=text,
                from_owner=sender == OWNER,
                is_group=chat == GROUP,
                **kw,
            )
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            new = self.to(chat)[before:]
            if new and (wait_for is None or any(wait_for in t for t in new)):
                await asyncio.sleep(0.05)
                return self.to(chat)[before:]
            await asyncio.sleep(0.02)
        raise AssertionError(
            f"no reply to {text!r} from {sender} in {chat} "
            f"(waiting for {wait_for!r}); got {self.to(chat)[before:]!r}"
        )

    def tool_names_offered(self) -> list[str]:
        body = self.model.model_requests[-1].body or {}
        return sorted(t["function"]["name"] for t in body.get("tools") or [])

    def tool_results(self) -> list[str]:
        body = self.model.model_requests[-1].body or {}
        return [str(m.get("content")) for m in body.get("messages", []) if m.get("role") == "tool"]


def team_settings(make_settings: Callable[..., Settings], model_url: str, **extra: str) -> Settings:
    members = {
        "alice": {"ids": [f"whatsapp:{ALICE}"], "profile": "collaborator", "repos": ["demo"]},
        "vic": {"ids": [f"whatsapp:{VIC}"], "profile": "viewer"},
    }
    return make_settings(
        FETCH_MODEL_BASE_URL=model_url + "/v1",
        FETCH_WHATSAPP_OWNER=OWNER,
        FETCH__ALLOWLIST=json.dumps([f"whatsapp:{PLAIN}"]),
        FETCH__MEMBERS=json.dumps(members),
        FETCH__GATEWAY__RATE_PER_MINUTE="100000",
        **extra,
    )


@pytest.fixture
async def team_factory(
    make_settings: Callable[..., Settings],
) -> AsyncIterator[Callable[..., Any]]:
    started: list[App] = []
    servers: list[ScriptedModelServer] = []

    async def start(**extra: str) -> Team:
        model = ScriptedModelServer()
        await model.__aenter__()
        servers.append(model)
        settings = team_settings(make_settings, model.url, **extra)
        terminal = TerminalChannel(settings.terminal.chat)
        phone = Phone()
        app = build_app(settings, channels=[terminal, phone])
        await app.__aenter__()
        started.append(app)
        return Team(app, Driver(app, terminal), phone, model)

    yield start
    for app in started:
        await app.__aexit__(None, None, None)
    for model in servers:
        await model.__aexit__(None, None, None)


@pytest.fixture
async def team(team_factory: Callable[..., Any]) -> Team:
    result: Team = await team_factory()
    return result
