"""The whole loop through the WhatsApp adapter (real neonize protobuf events on a foreign
thread, a recording send path): message → diff → 👍 reaction → commit → undo."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from orchestrator.app import App
from orchestrator.config import Settings
from tests.channels.whatsapp.builders import OWNER, reaction, text_from
from tests.channels.whatsapp.fake_client import FakeWhatsAppClient
from tests.channels.whatsapp.whole_app import OWNER_DIRECT, running, wait_for
from tests.conftest import git

STRANGER = "15550000000"


@pytest.fixture
async def whatsapp(
    make_settings: Callable[..., Settings],
) -> AsyncIterator[tuple[App, FakeWhatsAppClient]]:
    async with running(make_settings(**OWNER_DIRECT)) as pair:
        yield pair


async def test_message_diff_thumbs_up_commit(
    whatsapp: tuple[App, FakeWhatsAppClient],
) -> None:
    app, client = whatsapp
    assert app.services is not None
    repo = app.services.workspace.path("demo")
    base = git(repo, "rev-parse", "HEAD")
    client.emit(text_from(OWNER, "@fetch fix the typo in README.md of demo", id="3EBTASK1"))
    index, diff = await wait_for(client, "Apply?")
    assert "*" in diff or "```" in diff  # WhatsApp markup, monospace hunks
    diff_id = client.calls[index].message_id
    # A stranger's 👍 on the same message does nothing and gets no reply.
    sends_before = len(client.named("send"))
    client.emit(reaction(STRANGER, diff_id, "👍", id="3EBSTR1"))
    await asyncio.sleep(0.3)
    assert len(client.named("send")) == sends_before
    assert git(repo, "rev-parse", "HEAD") == base
    # The owner's 👍 on the diff commits exactly that diff.
    client.emit(reaction(OWNER, diff_id, "👍", id="3EBREACT1"))
    _, done = await wait_for(client, "Committed", after=index)
    assert "README.md" in done
    assert git(repo, "rev-parse", "HEAD^") == base
    assert "The quick" in (repo / "README.md").read_text()
    # Replayed after a reconnect: the same ids never run twice.
    client.emit(reaction(OWNER, diff_id, "👍", id="3EBREACT1"))
    client.emit(text_from(OWNER, "@fetch fix the typo in README.md of demo", id="3EBTASK1"))
    await asyncio.sleep(0.5)
    assert sum("On it" in t for t in client.sent_texts) == 1
    client.emit(text_from(OWNER, "undo", id="3EBUNDO1"))
    await wait_for(client, "Reverted")
    assert git(repo, "rev-parse", "HEAD^{tree}") == git(repo, "rev-parse", f"{base}^{{tree}}")
