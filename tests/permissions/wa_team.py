"""A team on WhatsApp around one whole Fetch: the real adapter over ``FakeWhatsAppClient``
(neonize's wire bytes in, the recorded sends out), real SQLite, real git, the scripted
model server over real HTTP. The owner and alice (a collaborator on demo) write in their
direct chats and in one group; what Fetch sends is read per chat off the fake client."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

import channels.whatsapp._neonize  # noqa: F401  (first: it undoes neonize's import side effects)
from orchestrator.app import App
from orchestrator.config import Settings
from tests.channels.whatsapp.builders import GROUP, OWNER, in_group, text_from
from tests.channels.whatsapp.fake_client import FakeWhatsAppClient
from tests.channels.whatsapp.whole_app import OWNER_DIRECT, start_app
from tests.fakes.model_server import ScriptedModelServer

ALICE = "447700900123"  # a collaborator on demo
OWNER_DM = f"{OWNER}@s.whatsapp.net"
ALICE_DM = f"{ALICE}@s.whatsapp.net"
GROUP_CHAT = f"{GROUP}@g.us"
_ids = itertools.count(1)
__all__ = ["ALICE", "ALICE_DM", "GROUP_CHAT", "OWNER", "OWNER_DM", "WaTeam", "wa_team_factory"]


@dataclass
class WaTeam:
    app: App
    client: FakeWhatsAppClient
    model: ScriptedModelServer
    marks: dict[str, int] = field(default_factory=dict)

    @property
    def services(self) -> Any:
        assert self.app.services is not None
        return self.app.services

    def to(self, chat: str) -> list[str]:
        return [c.text for c in self.client.calls if c.name in ("send", "edit") and c.chat == chat]

    def emit(self, user: str, text: str, *, group: bool = False) -> str:
        """``user`` writes ``text`` in their direct chat (or the group, with the trigger)."""
        message_id = f"3EB0T{next(_ids):06d}"
        if group:
            self.client.emit(in_group(user, f"@fetch {text}", id=message_id, pushname=user))
        else:
            self.client.emit(text_from(user, text, id=message_id, pushname=user))
        return message_id

    async def say(
        self,
        user: str,
        text: str,
        *,
        group: bool = False,
        wait_for: str | None = None,
        chat: str | None = None,
        timeout: float = 30,
    ) -> list[str]:
        """Write as ``user``; return what Fetch sent to ``chat`` (default: where it was
        written) since: at least one message, or up to the one containing ``wait_for``."""
        where = chat or (GROUP_CHAT if group else f"{user}@s.whatsapp.net")
        before = len(self.to(where))
        self.emit(user, text, group=group)
        return await self.expect(where, wait_for, before, timeout)

    async def expect(
        self, chat: str, needle: str | None, after: int = 0, timeout: float = 30
    ) -> list[str]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            new = self.to(chat)[after:]
            if new and (needle is None or any(needle in t for t in new)):
                await asyncio.sleep(0.05)
                return self.to(chat)[after:]
            await asyncio.sleep(0.02)
        raise AssertionError(f"nothing with {needle!r} in {chat}; got {self.to(chat)[after:]!r}")

    async def idle(self) -> None:
        await self.app.drain()

    def tools_offered(self, request: int = -1) -> list[str]:
        body = self.model.model_requests[request].body or {}
        return sorted(t["function"]["name"] for t in body.get("tools") or [])

    def messages_sent(self, request: int = -1) -> list[dict[str, Any]]:
        body = self.model.model_requests[request].body or {}
        return list(body.get("messages", []))


def wa_team_settings(
    make_settings: Callable[..., Settings], model_url: str, **extra: str
) -> Settings:
    alice = {"ids": [f"whatsapp:{ALICE}"], "profile": "collaborator", "repos": ["demo"]}
    members = {"alice": alice}
    env = {
        **OWNER_DIRECT,
        "FETCH_MODEL_BASE_URL": model_url + "/v1",
        "FETCH_MODEL": "planner-1",
        "FETCH_MODEL_API_KEY": "sk-orch",
        "FETCH__MODEL__MAX_RETRIES": "0",
        "FETCH__MEMBERS": json.dumps(members),
        "FETCH__GATEWAY__RATE_PER_MINUTE": "100000",
        "FETCH__WHATSAPP__SENDS_PER_MINUTE": "100000",
    }
    env.update(extra)
    return make_settings(**env)


@pytest.fixture
async def wa_team_factory(
    make_settings: Callable[..., Settings],
) -> AsyncIterator[Callable[..., Any]]:
    apps: list[App] = []
    servers: list[ScriptedModelServer] = []

    async def start(client: FakeWhatsAppClient | None = None, **extra: str) -> WaTeam:
        model = ScriptedModelServer()
        await model.__aenter__()
        servers.append(model)
        client = client or FakeWhatsAppClient()
        app = await start_app(wa_team_settings(make_settings, model.url, **extra), client)
        apps.append(app)
        return WaTeam(app, client, model)

    yield start
    for app in apps:
        await app.__aexit__(None, None, None)
    for model in servers:
        await model.__aexit__(None, None, None)


class OwnerUnreachable(FakeWhatsAppClient):
    """WhatsApp refuses every send to the owner's direct chat (a number not on WhatsApp,
    a block): the send raises as neonize's would."""

    async def send_message(self, to: Any, message: Any) -> str:
        if f"{to.User}@{to.Server}" == OWNER_DM:
            raise RuntimeError("the owner's number is not on WhatsApp")
        return await super().send_message(to, message)
