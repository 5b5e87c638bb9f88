"""YAML for files a person or a repository wrote: safe, strict and bounded.

A key written twice is an error (PyYAML keeps the last one silently, so a setting the
owner thinks is in force may not be), and nesting deep enough to exhaust the parser's
recursion (a 5,000-deep file) is a clear error too, never a traceback.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode


class _Strict(yaml.SafeLoader):
    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Hashable] = set()
        for key_node, _value in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, Hashable) and key != "<<":
                if key in seen:
                    raise ConstructorError(
                        None, None, f"the key {key!r} is written twice", key_node.start_mark
                    )
                seen.add(key)
        return super().construct_mapping(node, deep)


def safe_load(text: str) -> Any:
    """``yaml.safe_load``, but a duplicate key or too deep a nesting is a ``YAMLError``."""
    try:
        return yaml.load(text, Loader=_Strict)
    except RecursionError as err:
        raise yaml.YAMLError("it is nested too deeply to read") from err


__all__ = ["safe_load"]
