"""Golden tests of the gemini-cli, codex and copilot stream parsers.

``streams/<harness>-<case>.jsonl`` are real stdout recordings: each adapter's own command
line (codex with stderr folded in, as the adapter runs it) against ScriptedModelServer,
gemini 0.61.0, codex 0.169.0, copilot 1.0.102. Cases: ``edit`` (README.md typo fixed),
``denied`` (a write to /tmp/outside.txt, outside the workspace), ``401`` (every call
refused) and ``cancelled`` (SIGINT to the group while the model request hung).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from pathlib import Path
from typing import Any

import pytest

from harnesses.base import Harness, HarnessEvent
from harnesses.codex import Codex
from harnesses.copilot_cli import CopilotCli
from harnesses.gemini_cli import GeminiCli

STREAMS = Path(__file__).parent / "streams"
HARNESSES: dict[str, Harness] = {
    "gemini-cli": GeminiCli(),
    "codex": Codex(),
    "copilot": CopilotCli(),
}


def lines(name: str) -> list[str]:
    return (STREAMS / f"{name}.jsonl").read_text().splitlines()


def parse_all(harness: Harness, stream: list[str]) -> list[HarnessEvent]:
    # A fresh context, like the runner's fresh asyncio task per run.
    return contextvars.Context().run(lambda: [e for ln in stream for e in harness.parse(ln)])


def final(events: list[HarnessEvent]) -> HarnessEvent | None:
    """What the runner judges by: the last done or error event."""
    return next((e for e in reversed(events) if e.kind in {"done", "error"}), None)


def of(events: list[HarnessEvent], kind: str) -> list[HarnessEvent]:
    return [e for e in events if e.kind == kind]


# -- the edit that works ---------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(HARNESSES))
def test_edit_ends_done_with_the_answer(name: str) -> None:
    events = parse_all(HARNESSES[name], lines(f"{name}-edit"))
    end = final(events)
    assert end is not None and end.kind == "done", events
    assert end.text == "Fixed the typo."
    assert end.data["session_id"]
    assert of(events, "session")[0].data["session_id"] == end.data["session_id"]
    assert [e.text.rsplit("/", 1)[-1] for e in of(events, "file_change")] == ["README.md"]
    assert len(of(events, "tool_use")) == 1


def test_gemini_edit_events() -> None:
    events = parse_all(HARNESSES["gemini-cli"], lines("gemini-cli-edit"))
    assert [e.kind for e in events] == [
        "session",
        "tool_use",
        "file_change",
        "text",
        "text",
        "usage",
        "done",
    ]
    assert events[0].data == {
        "session_id": "2fc74f7e-5aed-4802-a0e3-944a51d3cc9c",
        "model": "gemini-2.5-flash",
    }
    tool = events[1]
    assert tool.text == "replace" and tool.data["input"]["new_string"] == "The quick brown fox."
    assert events[2].text == "README.md"  # as the model named it, relative to the workspace
    assert events[5].data == {"tokens_in": 18577, "tokens_out": 48}


def test_codex_edit_events() -> None:
    events = parse_all(HARNESSES["codex"], lines("codex-edit"))
    assert [e.kind for e in events] == [
        "session",
        "tool_use",
        "file_change",
        "text",
        "usage",
        "done",
    ]
    assert events[0].data == {"session_id": "01a1fdc9-5be8-7771-9357-1285dd0d335f"}
    assert events[2].text == "/tmp/rec/work/README.md"
    assert events[4].data == {"tokens_in": 19441, "tokens_out": 4}


def test_copilot_edit_events() -> None:
    events = parse_all(HARNESSES["copilot"], lines("copilot-edit"))
    # BYOK prints no token counts, so no usage event (the relay log has them).
    assert [e.kind for e in events] == ["tool_use", "file_change", "text", "session", "done"]
    assert events[0].text == "apply_patch"
    assert "*** Update File: README.md" in events[0].data["input"]
    assert events[1].text == "/tmp/rec/work/README.md"


# -- denied edits: every CLI exits 0 and says "success" at the end ----------------------------


@pytest.mark.parametrize(
    ("name", "why"),
    [
        (
            "gemini-cli",
            'Gemini CLI was denied: Path not in workspace: Attempted path "/tmp/outside.txt"',
        ),
        (
            "codex",
            "Codex was denied: patch rejected: writing outside of the project; "
            "rejected by user approval settings",
        ),
        (
            "copilot",
            "Copilot was denied: Permission denied because no interactive user "
            "response was available",
        ),
    ],
)
def test_denied_write_is_an_error(name: str, why: str) -> None:
    events = parse_all(HARNESSES[name], lines(f"{name}-denied"))
    end = final(events)
    assert end is not None and end.kind == "error", events
    assert end.text.startswith(why)
    assert not of(events, "file_change")


def test_gemini_tool_failure_that_is_no_denial_still_succeeds() -> None:
    """A replace whose old_string is missing is the model's mistake to fix, not a denial."""
    stream = lines("gemini-cli-edit")
    missed = json.loads(stream[3])
    missed.update(
        status="error",
        error={
            "type": "edit_no_occurrence_found",
            "message": "Failed to edit, 0 occurrences found",
        },
    )
    stream[3] = json.dumps(missed)
    events = parse_all(HARNESSES["gemini-cli"], stream)
    end = final(events)
    assert end is not None and end.kind == "done"
    assert not of(events, "file_change")


# -- model errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("gemini-cli", "API error 401 UNAUTHENTICATED: invalid api key"),
        (
            "codex",
            "unexpected status 401 Unauthorized: invalid api key, url: "
            "http://127.0.0.1:39419/responses",
        ),
        ("copilot", "Authentication failed with provider at http://127.0.0.1:36703 (HTTP 401)."),
    ],
)
def test_auth_error(name: str, message: str) -> None:
    events = parse_all(HARNESSES[name], lines(f"{name}-401"))
    end = final(events)
    assert end is not None and end.kind == "error"
    assert end.text == message


def test_codex_retry_notice_is_outranked_by_a_completed_turn() -> None:
    # The notice is from shared/facts/harness-clis.md §4 (default retries).
    notice = (
        '{"type":"error","message":"Reconnecting... 1/5 (unexpected status 401 '
        'Unauthorized: fake failure 401, url: http://127.0.0.1:9/v1/responses)"}'
    )
    stream = lines("codex-edit")
    stream.insert(3, notice)
    end = final(parse_all(HARNESSES["codex"], stream))
    assert end is not None and end.kind == "done"


def test_codex_fatal_stderr_line_is_an_error() -> None:
    # Real stderr (folded into stdout) of codex 0.169 with wire_api = "chat".
    line = (
        'Error loading config.toml: wire_api = "chat" is no longer supported. '
        'How to fix: set wire_api = "responses"'
    )
    assert parse_all(HARNESSES["codex"], [line]) == [HarnessEvent("error", line)]
    panic = "thread 'main' panicked at codex-rs/exec/src/lib.rs:1:1:"
    assert parse_all(HARNESSES["codex"], [panic]) == [HarnessEvent("error", panic)]


# -- cancelled ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["gemini-cli", "codex"])
def test_cancelled_run_has_no_result(name: str) -> None:
    assert final(parse_all(HARNESSES[name], lines(f"{name}-cancelled"))) is None


def test_copilot_cancelled_run_is_an_error_despite_exit_code_zero() -> None:
    stream = lines("copilot-cancelled")
    assert json.loads(stream[-1])["exitCode"] == 0
    end = final(parse_all(HARNESSES["copilot"], stream))
    assert end is not None and end.kind == "error"
    # The reason read "user_abort" here, "user_initiated" in other runs.
    assert end.text.startswith("Copilot was interrupted (user_")


# -- runs are kept apart ----------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(HARNESSES))
async def test_concurrent_runs_do_not_share_state(name: str) -> None:
    """One adapter serves every chat: a denial in one run must not fail another."""
    harness = HARNESSES[name]

    async def run(case: str) -> HarnessEvent | None:
        events = []
        for line in lines(f"{name}-{case}"):
            events += harness.parse(line)
            await asyncio.sleep(0)  # interleave the two streams line by line
        return final(events)

    denied, edit = await asyncio.gather(run("denied"), run("edit"))
    assert denied is not None and denied.kind == "error"
    assert edit is not None and edit.kind == "done"


@pytest.mark.parametrize("name", sorted(HARNESSES))
def test_a_new_stream_starts_afresh_in_the_same_context(name: str) -> None:
    harness = HARNESSES[name]
    stream = lines(f"{name}-denied") + lines(f"{name}-edit")
    end = final(parse_all(harness, stream))
    assert end is not None and end.kind == "done"


# -- garbage ---------------------------------------------------------------------------------

GARBAGE = [
    "",
    "   ",
    "not json at all",
    "{",
    '{"half": ',
    "[1, 2]",
    '"text"',
    "null",
    '{"no_type": true}',
    '{"type": 7}',
    '{"type": "unheard.of", "data": {}}',
    "\x00\xff binary",
    "Reading additional input from stdin...",
]


@pytest.mark.parametrize("name", sorted(HARNESSES))
@pytest.mark.parametrize("line", GARBAGE)
def test_garbage_lines_are_no_events(name: str, line: str) -> None:
    assert parse_all(HARNESSES[name], [line]) == []


def _mangled(value: Any, junk: Any) -> Any:
    if isinstance(value, dict):
        return {k: (v if k == "type" else _mangled(v, junk)) for k, v in value.items()}
    return junk


@pytest.mark.parametrize("name", sorted(HARNESSES))
@pytest.mark.parametrize("junk", [None, [], "x", 3, {"a": 1}, True])
def test_real_lines_with_wrong_types_never_raise(name: str, junk: Any) -> None:
    """Same event types, every value replaced by junk: events or not, no exception."""
    for case in ("edit", "denied", "401", "cancelled"):
        for line in lines(f"{name}-{case}"):
            obj = HARNESSES[name].json_line(line)
            if obj is not None:
                parse_all(HARNESSES[name], [json.dumps(_mangled(obj, junk))])
