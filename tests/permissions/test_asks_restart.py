"""Open permission questions survive a restart of the app: the owner's
``/grants yes <nonce>`` still answers one afterwards; one that expired meanwhile is
refused, saying so, and allows nothing."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable

from channels.terminal import TerminalChannel
from orchestrator.app import App, build_app
from orchestrator.config import Settings
from tests.conftest import Driver
from tests.fakes.model_server import ScriptedModelServer
from tests.permissions.conftest import ALICE, OWNER, Phone, Team, team_settings

OWNER_DM = f"{OWNER}@s.whatsapp.net"
RULES = [
    {"effect": "ask", "what": "instinct:remind", "who": "alice"},
    {"effect": "ask", "what": "instinct:remember", "who": "alice"},
]


def _nonce(team: Team, action: str) -> str:
    asked = [t for t in team.to(OWNER_DM) if t.startswith("🔐") and f"({action})" in t]
    return re.search(r"/grants yes (\w+)", asked[-1]).group(1)  # type: ignore[union-attr]


async def test_an_open_ask_is_answered_after_a_restart_and_an_expired_one_refused(
    make_settings: Callable[..., Settings],
) -> None:
    async with ScriptedModelServer() as model:
        settings = team_settings(
            make_settings, model.url, FETCH__PERMISSIONS__RULES=json.dumps(RULES)
        )

        def team_of(app: App, phone: Phone, terminal: TerminalChannel) -> Team:
            return Team(app, Driver(app, terminal), phone, model)

        phone, terminal = Phone(), TerminalChannel(settings.terminal.chat)
        async with build_app(settings, channels=[terminal, phone]) as app:
            team = team_of(app, phone, terminal)
            assert "needs the owner's yes" in (await team.say(ALICE, "/remind in 5m x"))[-1]
            assert "needs the owner's yes" in (await team.say(ALICE, "/remember y"))[-1]
            remind, remember = _nonce(team, "instinct:remind"), _nonce(team, "instinct:remember")
        # While Fetch is down, the /remember question runs out of time.
        with sqlite3.connect(settings.db_path) as db:
            db.execute("UPDATE asks SET expires = expires - 3600 WHERE nonce = ?", (remember,))

        phone, terminal = Phone(), TerminalChannel(settings.terminal.chat)
        async with build_app(settings, channels=[terminal, phone]) as app:
            team = team_of(app, phone, terminal)
            listing = (await team.say(OWNER, "/grants", chat=OWNER_DM))[-1]
            assert f"{remind}: alice asks for instinct:remind" in listing
            assert remember not in listing  # expired: not waiting any more
            said = await team.say(OWNER, f"/grants yes {remind} once", chat=OWNER_DM)
            assert "Granted" in said[-1]
            assert "allowed instinct:remind (once)" in team.to(ALICE)[-1]
            assert not (await team.say(ALICE, "/remind in 5m x"))[-1].startswith(("🔒", "🔐"))
            late = (await team.say(OWNER, f"/grants yes {remember} always", chat=OWNER_DM))[-1]
            assert "expired unanswered" in late and "nothing was allowed" in late
            assert "needs the owner's yes" in (await team.say(ALICE, "/remember y"))[-1]
            # Answered questions are gone for good, across restarts too.
            again = (await team.say(OWNER, f"/grants yes {remind} once", chat=OWNER_DM))[-1]
            assert "No open question" in again and "expired unanswered" not in again
        with sqlite3.connect(settings.db_path) as db:
            left = {r[0] for r in db.execute("SELECT nonce FROM asks")}
        assert remind not in left and remember not in left
