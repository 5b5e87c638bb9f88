"""The offline demo harness: no model, no key. It fixes common typos in the files a
request names, so a newcomer sees message → diff → approval → commit → undo at once.
It runs through the kennel like any real CLI (``python -m harnesses.demo_cli``; in the
Docker kennel, its Node port ``kennel/demo_cli.js`` that the image carries)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from harnesses.base import Harness, HarnessEvent, HarnessRequest
from harnesses.instructions import write_user_instructions

IMAGE_DEMO_CLI = "/opt/kennel/demo_cli.js"  # kennel/demo_cli.js, in the kennel image


class DemoHarness(Harness, name="demo"):
    provider = None
    binary = sys.executable
    summary = "offline demo: fixes common typos, no model needed"

    def prepare(self, req: HarnessRequest, host_state_dir: Path) -> None:
        # $HOME/fetch-instructions.md: the stand-in CLI names the pack member it read there.
        write_user_instructions(req, host_state_dir, "demo")

    def command(self, req: HarnessRequest) -> tuple[list[str], dict[str, str]]:
        if req.kennel == "docker":  # the image has Node and a port of demo_cli, no Python
            argv = ["node", IMAGE_DEMO_CLI, req.prompt]
        else:
            argv = [sys.executable, "-m", "harnesses.demo_cli", req.prompt]
        env = {"PATH": req.path_env, "HOME": str(req.state_dir), "LANG": "C.UTF-8"}
        return argv, env

    def event(self, obj: dict[str, Any]) -> list[HarnessEvent]:
        kind = obj.get("type")
        if kind in {"text", "file_change", "done", "error", "tool_use", "question"}:
            return [HarnessEvent(kind, str(obj.get("text", "")))]
        return []
