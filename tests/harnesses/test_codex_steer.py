"""Steering codex (issue 23, 4), through real parts: the real codex CLI in the bwrap
kennel runs as its app server (harnesses/codex_driver.py); a message the owner sends
while its first model request is held reaches it as ``turn/steer``: the owner is told
"📨 passed to codex", codex drops the held request and its next one carries the text, the
task ends with the turn's answer and the edit, in one turn. One that comes after the
turn's last request gets a turn of its own in the same thread."""

from __future__ import annotations

import io
import json
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from harnesses import codex_driver
from harnesses.codex import Codex
from orchestrator.config import Settings
from tests.conftest import Driver, start_driver
from tests.fakes.model_server import Delay, EditFile, Hang, ScriptedModelServer, Text
from tests.fakes.require import require_binary

pytestmark = pytest.mark.real
STEER = "also: use British spelling"


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture
async def codex(
    model: ScriptedModelServer, make_settings: Callable[..., Settings]
) -> AsyncIterator[tuple[Driver, Settings]]:
    require_binary("codex")
    settings = make_settings(
        FETCH_HARNESS="codex",
        FETCH__PROVIDERS__OPENAI__BASE_URL=model.url + "/v1",
        OPENAI_API_KEY="sk-canary-steer-c0d3",
    )
    app, driver = await start_driver(settings)
    try:
        yield driver, settings
    finally:
        await app.__aexit__(None, None, None)


def _carrying(model: ScriptedModelServer, text: str) -> list[int]:
    return [i for i, r in enumerate(model.model_requests) if text in json.dumps(r.body)]


def _status(db: Path, message_id: str) -> str:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT status FROM inbound WHERE message_id = ?", (message_id,))
        return str(row.fetchone()[0])
    finally:
        conn.close()


async def test_a_message_mid_run_is_steered_into_codex_s_next_request(
    codex: tuple[Driver, Settings], model: ScriptedModelServer
) -> None:
    fetch, settings = codex
    # The first request is held (its stream open, nothing in it) until the steer comes.
    model.script(
        Hang(120, after_headers=True),
        EditFile("README.md", "Teh quick brown fox.", "The quick brown fox."),
        Text("Fixed, and noted the spelling."),
    )
    await fetch.ask("fix the typo in README.md of demo", "On it")
    await model.wait_for_requests(1, timeout=90)
    assert _carrying(model, STEER) == []
    await fetch.push(STEER, message_id="steer-1")
    assert "(task #" in await fetch.expect("📨 passed to codex", 20)
    # Codex gives up the held request at once; the next one carries the text.
    assert await model.wait_for_disconnects(1, timeout=30) == [0]
    card = await fetch.expect("Apply?", 90)
    assert "+The quick" in card and "noted the spelling" in card
    assert _carrying(model, STEER)[0] == 1
    assert len(model.model_requests) == 3 and not model.pending  # one turn, no extra
    assert _status(settings.db_path, "steer-1") == "done"  # passed on, not kept
    await fetch.ask("no", "Discarded")
    assert not [m for m in await fetch.quiet(0.5) if "📭" in m or "📥" in m]


async def test_a_message_during_the_turn_s_last_request_is_answered_before_the_end(
    codex: tuple[Driver, Settings], model: ScriptedModelServer
) -> None:
    fetch, _ = codex
    model.script(
        EditFile("README.md", "Teh quick brown fox.", "The quick brown fox."),
        Delay(3.0, Text("Fixed the typo.")),  # the turn's last request
        Text("Switched to British spelling."),  # the message's own turn
    )
    await fetch.ask("fix the typo in README.md of demo", "On it")
    await model.wait_for_requests(2, timeout=90)
    await fetch.push(STEER)
    await fetch.expect("📨 passed to codex", 20)
    card = await fetch.expect("Apply?", 90)
    assert "Switched to British spelling." in card and "+The quick" in card
    assert _carrying(model, STEER) == [2]
    assert not model.pending


async def test_a_question_s_answer_resumes_the_same_codex_thread(
    codex: tuple[Driver, Settings], model: ScriptedModelServer
) -> None:
    """Codex ends its turn asking; the owner's answer resumes its thread (``thread/resume``
    in a new app server): the request carries the first turn and the answer."""
    fetch, _ = codex
    await fetch.ask("/model codex gpt-5.6-sol", "now use gpt-5.6-sol")  # /model holds too
    model.script(
        Text("Which word should replace Teh: The or A?"),
        EditFile("README.md", "Teh quick brown fox.", "The quick brown fox."),
        Text("Used your word."),
    )
    asked = await fetch.ask("fix the typo in README.md of demo", "asks", 90)
    assert "Which word should replace Teh" in asked
    await fetch.ask("The, please", "Passed your answer")
    card = await fetch.expect("Apply?", 90)
    assert "+The quick" in card and "Used your word." in card
    resumed = json.dumps(model.model_requests[1].body)
    assert "The, please" in resumed and "Which word should replace Teh" in resumed
    assert not model.pending
    assert {r.body.get("model") for r in model.model_requests if r.body} == {"gpt-5.6-sol"}


# -- without codex: the driver's state machine and the reading of its lines ------------


class _Child:
    """Stands in for the app server's process: what the driver writes to it."""

    def __init__(self) -> None:
        self.stdin = io.StringIO()

    def sent(self) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.stdin.getvalue().splitlines()]


def _driver(capsys: pytest.CaptureFixture[str]) -> tuple[codex_driver.Driver, _Child]:
    child = _Child()
    options = {"codex": "codex", "sandbox": "workspace-write", "resume": "", "images": ["/a.png"]}
    driver = codex_driver.Driver(child, options)  # type: ignore[arg-type]
    driver.on_line(json.dumps({"id": 1, "result": {}}))
    driver.on_line(json.dumps({"id": 2, "result": {"thread": {"id": "th-1"}}}))
    capsys.readouterr()
    return driver, child


def test_a_codex_without_the_app_server_is_said_in_one_line(tmp_path: Path) -> None:
    """An older codex (no ``app-server``): the driver, run as the kennel runs it, ends
    with codex's own words as an error line, not a bare exit code."""
    old = tmp_path / "codex"
    old.write_text("#!/bin/sh\necho \"error: unrecognized subcommand '$1'\" >&2\nexit 2\n")
    old.chmod(0o755)
    options = {"codex": str(old), "sandbox": "workspace-write", "resume": "", "images": []}
    done = subprocess.run(
        [sys.executable, "-I", codex_driver.__file__, json.dumps(options)],
        input=json.dumps({"text": "the prompt"}) + "\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2, done.stderr
    events = [e for line in done.stdout.splitlines() for e in Codex().parse(line)]
    assert events[-1].kind == "error"
    assert "codex app-server ended (exit code 2)" in events[-1].text
    assert "unrecognized subcommand 'app-server'" in events[-1].text


def test_the_driver_steers_the_running_turn_and_queues_a_late_message(
    capsys: pytest.CaptureFixture[str],
) -> None:
    driver, child = _driver(capsys)
    driver.on_input(json.dumps({"text": "the prompt"}))
    start = child.sent()[-1]
    assert start["method"] == "turn/start" and start["params"]["threadId"] == "th-1"
    assert start["params"]["input"][1] == {"type": "localImage", "path": "/a.png"}
    driver.on_input(json.dumps({"text": "early"}))  # the turn's id is not known yet: waits
    assert child.sent()[-1]["method"] == "turn/start"
    driver.on_line(json.dumps({"id": start["id"], "result": {"turn": {"id": "tu-1"}}}))
    steer = child.sent()[-1]
    assert steer["method"] == "turn/steer" and steer["params"]["expectedTurnId"] == "tu-1"
    assert steer["params"]["input"][0]["text"] == "early"
    # The turn ends before codex answers the steer: refused, it gets a turn of its own.
    driver.on_line(json.dumps({"method": "turn/completed", "params": {"turn": {"id": "tu-1"}}}))
    driver.on_line(json.dumps({"id": steer["id"], "error": {"message": "no active turn"}}))
    again = child.sent()[-1]
    assert again["method"] == "turn/start" and again["params"]["input"][0]["text"] == "early"
    assert len(again["params"]["input"]) == 1  # the images went with the first turn only
    taken = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert taken.count({"fetch": "input"}) == 1  # the prompt; "early" not yet
    driver.on_line(json.dumps({"id": again["id"], "result": {"turn": {"id": "tu-2"}}}))
    driver.on_eof()  # Fetch closes stdin: the app server's is closed once no turn runs
    assert not driver.closed
    driver.on_line(json.dumps({"method": "turn/completed", "params": {"turn": {"id": "tu-2"}}}))
    assert driver.closed


def test_the_driver_declines_approvals_and_says_a_refused_request(
    capsys: pytest.CaptureFixture[str],
) -> None:
    driver, child = _driver(capsys)
    ask = {"id": 7, "method": "item/fileChange/requestApproval", "params": {}}
    driver.on_line(json.dumps(ask))
    assert child.sent()[-1] == {"id": 7, "result": {"decision": "decline"}}
    driver.on_line(json.dumps({"id": 8, "method": "item/tool/requestUserInput", "params": {}}))
    assert child.sent()[-1]["error"]["code"] == -32601
    driver.on_input("not json")  # ignored, never a crash
    driver.on_input(json.dumps({"text": "go"}))
    start = child.sent()[-1]
    driver.on_line(json.dumps({"id": start["id"], "error": {"message": "model unknown"}}))
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert {"fetch": "error", "message": "model unknown"} in lines
    assert driver.closed and driver.failed  # nothing more to do: the app server ends


def _note(method: str, **params: Any) -> str:
    return json.dumps({"method": method, "params": params})


def test_the_app_server_s_lines_become_the_harness_s_events() -> None:
    codex = Codex()
    [session] = codex.parse(json.dumps({"fetch": "thread", "threadId": "th-9"}))
    assert session.data == {"session_id": "th-9"}
    assert [e.kind for e in codex.parse(json.dumps({"fetch": "input"}))] == ["input"]
    change = {"type": "fileChange", "status": "completed", "changes": [{"path": "a.py"}]}
    kinds = [e.kind for e in codex.parse(_note("item/completed", item=change))]
    assert kinds == ["tool_use", "file_change"]
    shell = {"type": "commandExecution", "command": "ls", "exitCode": 0, "status": "completed"}
    [ran] = codex.parse(_note("item/completed", item=shell))
    assert ran.text == "shell" and ran.data["exit_code"] == 0
    said = {"type": "agentMessage", "text": "Done it."}
    assert codex.parse(_note("item/completed", item=said))[0].text == "Done it."
    total = {"inputTokens": 100, "outputTokens": 7}
    codex.parse(_note("thread/tokenUsage/updated", tokenUsage={"total": total}))
    usage, done = codex.parse(_note("turn/completed", turn={"status": "completed"}))
    assert usage.data == {"tokens_in": 100, "tokens_out": 7} and done.text == "Done it."
    # A second turn counts only its own tokens; a declined patch is a refused edit.
    total = {"inputTokens": 160, "outputTokens": 9}
    codex.parse(_note("thread/tokenUsage/updated", tokenUsage={"total": total}))
    refused = {"type": "fileChange", "status": "declined", "changes": [{"path": "b.py"}]}
    assert codex.parse(_note("item/completed", item=refused)) == []
    usage, denied = codex.parse(_note("turn/completed", turn={"status": "completed"}))
    assert usage.data == {"tokens_in": 60, "tokens_out": 2}
    assert denied.kind == "error" and "could not write b.py" in denied.text
    failed = {"status": "failed", "error": {"message": "quota exceeded"}}
    assert codex.parse(_note("turn/completed", turn=failed))[-1].text == "quota exceeded"
    [refusal] = codex.parse(json.dumps({"fetch": "error", "message": "bad model"}))
    assert refusal.kind == "error" and refusal.text == "bad model"
    # Its log is coloured even into a pipe: a rejected command is still seen.
    codex.parse("\x1b[2mERROR\x1b[0m router: \x1b[3merror\x1b[0m=exec command rejected: no")
    done = codex.parse(_note("turn/completed", turn={"status": "completed"}))[-1]
    assert done.kind == "error" and "exec command rejected" in done.text


def test_every_model_fetch_offers_for_codex_is_one_the_installed_codex_knows() -> None:
    """/model codex <slug> offers Codex.models: a slug codex does not know gets no
    apply_patch tool (its edits silently never happen), so each is checked against the
    real CLI's own list."""
    require_binary("codex")
    done = subprocess.run(
        ["codex", "debug", "models"], capture_output=True, text=True, timeout=60, check=True
    )
    known = {m["slug"] for m in json.loads(done.stdout)["models"]}
    assert set(Codex.models) <= known, set(Codex.models) - known
