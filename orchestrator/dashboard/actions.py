"""A task page's buttons: stop, pause, resume, approve, reject.

Each is said in the task's chat exactly as the owner would say it from the phone: an
``Inbound`` from the owner handed to the gateway (``/stop``, ``/pause``, ``/resume``; a
diff's answer as a reaction on the diff message carrying the approval's nonce, as the
web chat's and Telegram's buttons do). So the same gate, dedupe, queue, permission
check and approval checks decide, the reply lands in that chat, and nothing here moves
a task or an approval by itself. The dashboard is the web token's holder: the owner.

Approve and reject are bound to the approval the page showed (its nonce is in the
form): a page left open on an older diff answers nothing. Every action is a POST the
auth wrapper has already checked for the CSRF token; it answers with a 303 back to the
task's page and a note, so a reload never repeats it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from urllib.parse import quote

from aiohttp import web

from core.events import Inbound, SessionKey
from orchestrator.dashboard.context import Dash
from orchestrator.dashboard.queries import TaskItem
from orchestrator.dashboard.timeline import session_key

COMMANDS = {"stop": "/stop", "pause": "/pause", "resume": "/resume"}
ANSWERS = {"approve": ("yes", "👍"), "reject": ("no", "👎")}


@dataclass(frozen=True, slots=True)
class Controls:
    """Which buttons the task's page shows now."""

    stop: bool
    pause: bool
    resume: bool
    nonce: str | None  # the pending approval's: Approve and Reject answer exactly it


async def controls_of(dash: Dash, item: TaskItem) -> Controls:
    key = session_key(item.session)
    handle = dash.services.runner.running(key) if key is not None else None
    mine = handle is not None and handle.task_id == item.id
    paused = mine and handle is not None and handle.paused
    pending = await dash.queries.pending_approval(item.id)
    return Controls(
        stop=item.status == "running",
        pause=mine and not paused,
        resume=paused,
        nonce=pending[0] if pending is not None and item.status == "proposed" else None,
    )


def _back(task_id: int, note: str) -> web.Response:
    return web.Response(status=303, headers={"Location": f"/tasks/{task_id}?note={quote(note)}"})


def _from_owner(
    key: SessionKey,
    text: str,
    reply_to: str | None = None,
    reaction: str | None = None,
    approval_nonce: str | None = None,
) -> Inbound:
    return Inbound(
        channel=key.channel,
        chat=key.chat,
        sender=key.chat,  # in a private chat the owner's own id: their queue, in order
        message_id="dash-" + uuid.uuid4().hex,
        text=text,
        from_owner=True,  # behind the web token: only the owner gets here
        reply_to=reply_to,
        reaction=reaction,
        approval_nonce=approval_nonce,
    )


async def task_action(dash: Dash, request: web.Request) -> web.Response:
    verb = request.match_info["verb"]
    try:
        task_id = int(request.match_info["id"])
    except ValueError:
        return web.Response(status=303, headers={"Location": "/tasks?note=no%20such%20task"})
    item = await dash.queries.task(task_id)
    if item is None:
        return web.Response(status=303, headers={"Location": "/tasks?note=no%20such%20task"})
    if dash.sink is None:
        return _back(task_id, "Fetch is not taking messages now")
    if verb in COMMANDS:
        return await _command(dash, item, verb)
    if verb in ANSWERS:
        form = await request.post()
        nonce = form.get("nonce")
        return await _answer(dash, item, verb, nonce if isinstance(nonce, str) else "")
    return _back(task_id, f"unknown action {verb[:40]}")


async def _command(dash: Dash, item: TaskItem, verb: str) -> web.Response:
    key = session_key(item.session)
    now = await controls_of(dash, item)
    if key is None or not getattr(now, verb):
        return _back(item.id, f"task #{item.id} is {item.status}: nothing to {verb}")
    assert dash.sink is not None
    await dash.sink(_from_owner(key, COMMANDS[verb]))
    return _back(item.id, f"asked to {verb} task #{item.id}; the chat has the answer")


async def _answer(dash: Dash, item: TaskItem, verb: str, nonce: str) -> web.Response:
    pending = await dash.queries.pending_approval(item.id)
    if pending is None or item.status != "proposed":
        return _back(item.id, f"task #{item.id} has no diff waiting (it is {item.status})")
    if not nonce or nonce != pending[0]:
        return _back(item.id, "that diff is no longer the one waiting: see the newest")
    key = session_key(pending[1])
    if key is None:
        return _back(item.id, "the diff's chat is unknown")
    message = (await dash.services.sessions.get(key)).data.approval_message_id
    if message is None:  # a reaction counts only on the diff message itself
        return _back(item.id, "answer this diff in its chat (yes or no)")
    word, emoji = ANSWERS[verb]
    assert dash.sink is not None
    await dash.sink(_from_owner(key, word, reply_to=message, reaction=emoji, approval_nonce=nonce))
    return _back(item.id, f"answered {word} to task #{item.id}'s diff; the chat has the outcome")


__all__ = ["ANSWERS", "COMMANDS", "Controls", "controls_of", "task_action"]
