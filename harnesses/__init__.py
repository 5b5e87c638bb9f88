"""Coding CLI adapters, one per file, behind one protocol (``harnesses.base.Harness``)."""

from __future__ import annotations

from harnesses.base import Harness


def builtin_harnesses() -> list[Harness]:
    """Every adapter Fetch ships, in the order ``/harness`` lists them."""
    from harnesses.claude_code import ClaudeCode
    from harnesses.codex import Codex
    from harnesses.copilot_cli import CopilotCli
    from harnesses.demo import DemoHarness
    from harnesses.gemini_cli import GeminiCli

    return [ClaudeCode(), GeminiCli(), Codex(), CopilotCli(), DemoHarness()]
