"""The tool result cache: one entry per (tool, arguments, repository state), least
recently used dropped first, emptied by any write the executor runs."""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

SIZE = 256


def cache_key(tool: str, args: dict[str, Any], state: str) -> str:
    return f"{tool}\0{json.dumps(args, sort_keys=True, ensure_ascii=False)}\0{state}"


class ResultCache:
    def __init__(self, size: int = SIZE) -> None:
        self._size = size
        self._entries: OrderedDict[str, str] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> str | None:
        value = self._entries.get(key)
        if value is None:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return value

    def put(self, key: str, value: str) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
