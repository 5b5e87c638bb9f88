"""The offline demo harness: no model, no key. It fixes common typos in the files a
request names, so a newcomer sees message → diff → approval → commit → undo at once.
It runs through the kennel like any real CLI (``python -m harnesses.demo_cli``)."""

from __future__ import annotations

import sys
from typing import Any

from harnesses.base import Harness, HarnessEvent, HarnessRequest


class DemoHarness(Harness, name="demo"):
    provider = None
    binary = sys.executable
    summary = "offline demo: fixes common typos, no model needed"

    def command(self, req: HarnessRequest) -> tuple[list[str], dict[str, str]]:
        argv = [sys.executable, "-m", "harnesses.demo_cli", req.prompt]
        env = {"PATH": req.path_env, "HOME": str(req.state_dir), "LANG": "C.UTF-8"}
        return argv, env

    def event(self, obj: dict[str, Any]) -> list[HarnessEvent]:
        kind = obj.get("type")
        if kind in {"text", "file_change", "done", "error", "tool_use"}:
            return [HarnessEvent(kind, str(obj.get("text", "")))]
        return []
