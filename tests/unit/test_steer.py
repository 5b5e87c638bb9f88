"""Steering's bookkeeping (orchestrator/task/steer.py) over a fake stdin: what comes
before the CLI runs waits and follows the prompt; stdin closes only once every message
was taken; what a CLI never took, or never got, is said back. The real CLI's side is in
tests/e2e/test_steering.py."""

from __future__ import annotations

import json

from harnesses.base import HarnessEvent
from harnesses.claude_code import ClaudeCode
from orchestrator.task.steer import Steering


class FakeStdin:
    """The part of ``KennelProcess`` steering uses."""

    def __init__(self, broken_after: int | None = None) -> None:
        self.lines: list[str] = []
        self.closed = False
        self.broken_after = broken_after

    async def write_input(self, data: bytes) -> bool:
        if self.closed or (self.broken_after is not None and len(self.lines) >= self.broken_after):
            return False
        self.lines.append(json.loads(data)["message"]["content"][0]["text"])
        return True

    def close_input(self) -> None:
        self.closed = True


async def test_messages_before_the_cli_runs_follow_the_prompt() -> None:
    steering = Steering(ClaudeCode())
    assert await steering.send("early one")
    stdin = FakeStdin()
    await steering.attach(stdin, "the task")  # type: ignore[arg-type]
    assert stdin.lines == ["the task", "early one"]
    steering.on_event(HarnessEvent("input", "the task"))
    steering.on_event(HarnessEvent("done", "first turn"))  # "early one" not taken yet
    assert not stdin.closed and steering.open
    assert await steering.send("late one")
    steering.on_event(HarnessEvent("input", "early one"))
    steering.on_event(HarnessEvent("input", "late one"))
    steering.on_event(HarnessEvent("done", "all done"))
    assert stdin.closed and not await steering.send("too late")
    assert steering.untaken() == []


async def test_what_the_cli_never_took_or_never_got_is_said_back() -> None:
    steering = Steering(ClaudeCode())
    await steering.send("a")
    await steering.send("b")
    stdin = FakeStdin(broken_after=2)  # the CLI went after the prompt and "a"
    await steering.attach(stdin, "the task")  # type: ignore[arg-type]
    assert stdin.lines == ["the task", "a"]
    assert not steering.open and steering.untaken() == ["a", "b"]
    never = Steering(ClaudeCode())
    await never.send("c")
    never.close()  # the run ended before its CLI started (a failed setup)
    assert never.untaken() == ["c"]
