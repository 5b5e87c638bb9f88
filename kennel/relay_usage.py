"""What a model call cost and which model it asked for, read from the bytes the relay
passes through (the CLI's own report is not trusted, and some CLIs report nothing)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

USAGE_IN = ("input_tokens", "prompt_tokens", "promptTokenCount")
USAGE_OUT = ("output_tokens", "completion_tokens", "candidatesTokenCount")
# A request body above this is not parsed as a whole (it runs on Fetch's event loop):
# the model name is looked for near its start instead.
PARSE_LIMIT = 256 * 1024
_MODEL = re.compile(rb'"model"\s*:\s*"([^"\\]{1,200})"')
# An upstream line (SSE event or JSON body) kept for the usage scan at most this long.
LINE_LIMIT = 16 * 1024 * 1024


@dataclass
class Usage:
    tokens_in: int = 0
    tokens_out: int = 0

    def add_from(self, obj: Any) -> None:
        """Take the largest usage figures found anywhere in ``obj`` (streams repeat them)."""
        found_in, found_out = _walk_usage(obj)
        self.tokens_in = max(self.tokens_in, found_in)
        self.tokens_out = max(self.tokens_out, found_out)


def _walk_usage(obj: Any) -> tuple[int, int]:
    best_in = best_out = 0
    stack = [obj]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if isinstance(value, int) and not isinstance(value, bool):
                    if key in USAGE_IN:
                        best_in = max(best_in, value)
                    elif key in USAGE_OUT:
                        best_out = max(best_out, value)
                elif isinstance(value, dict | list):
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)
    return best_in, best_out


def model_of(body: bytes, path: str) -> str:
    if "/models/" in path:  # gemini puts the model in the path
        return path.split("/models/", 1)[1].split(":", 1)[0][:200]
    if len(body) > PARSE_LIMIT:
        found = _MODEL.search(body, 0, 1024 * 1024)
        return found.group(1).decode("utf-8", "replace") if found else ""
    try:
        parsed = json.loads(body) if body else {}
    except ValueError:
        return ""
    return str(parsed.get("model", ""))[:200] if isinstance(parsed, dict) else ""


class UsageScanner:
    """Feeds on the upstream's bytes as they pass; parses each complete line (an SSE event
    or a JSON body) for usage. Appending is amortised O(1), so a body without newlines
    costs linear time, and a line past ``LINE_LIMIT`` is dropped (it is not a usage
    report, and it is not held in memory)."""

    def __init__(self) -> None:
        self.usage = Usage()
        self._line = bytearray()
        self._overlong = False

    def feed(self, chunk: bytes) -> None:
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            self._take(chunk[start:end])
            self._line.clear()
            self._overlong = False
            start = end + 1
        self._take(chunk[start:], partial=True)

    def close(self) -> Usage:
        self._take(b"")
        self._line.clear()
        return self.usage

    def _take(self, part: bytes, *, partial: bool = False) -> None:
        if not self._overlong:
            self._line += part
            if len(self._line) > LINE_LIMIT:
                self._line.clear()
                self._overlong = True
        if partial or self._overlong:
            return
        line = bytes(self._line).strip()
        if line.startswith(b"data:"):
            line = line[5:].strip()
        if not line.startswith(b"{") or b"oken" not in line:
            return
        try:
            self.usage.add_from(json.loads(line))
        except ValueError:
            return


__all__ = ["Usage", "UsageScanner", "model_of"]
