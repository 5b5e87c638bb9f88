"""What the owner set from the phone for one chat (``/autonomy semi``): the last chat
layer, kept in ``FETCH_HOME/chats.yaml`` so a restart keeps it. Only layered keys
(layers.py) are accepted; the file is written whole, atomically, readable by Fetch only."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from core import yamlload
from orchestrator.permissions.layers import Layer, flatten


class ChatOverrides:
    def __init__(self, path: Path) -> None:
        self._path = path
        self._values: dict[str, dict[str, Any]] = {}
        if path.is_file():
            raw = yamlload.safe_load(path.read_text(encoding="utf-8")) or {}
            if isinstance(raw, dict):
                for chat, tree in raw.items():
                    if isinstance(tree, dict):
                        try:
                            self._values[str(chat)] = flatten(tree)
                        except ValueError:
                            continue  # a key no longer layered: dropped, not fatal

    def layer(self, chat: str) -> list[Layer]:
        values = self._values.get(chat)
        if not values:
            return []
        return [Layer("chat", f"set in the chat ({self._path.name})", dict(values))]

    def get(self, chat: str, key: str) -> Any:
        return self._values.get(chat, {}).get(key)

    def set(self, chat: str, key: str, value: Any) -> None:
        """Validated like config (raises ValueError naming the key)."""
        checked = flatten({key: value})
        self._values.setdefault(chat, {}).update(checked)
        self._save()

    def _save(self) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yaml.safe_dump(self._values, fh, sort_keys=True)
        os.replace(tmp, self._path)
