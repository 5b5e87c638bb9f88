"""Vendor-side tools taken out of what a kennel sends, so a model call cannot be used as a
way out of the sandbox by proxy.

Each vendor can run tools itself, on the owner's account: search and fetch the web, run
code in its own containers, call remote MCP servers, read the owner's uploaded files, or
fetch an image or a document by URL. A hostile CLI could ask for any of them through the
relay's key. So they are removed from JSON request bodies, together with the
``anthropic-beta`` flags that switch them on, while the CLI's own tools (functions, bash,
text editor, computer use: the CLI runs those itself) and every other beta flag pass
unchanged: Claude Code sends eight or so flags on every call and stops working without
them, so flags are matched against a short denylist, never an allowlist.

The owner may keep a feature by name (``kennel.relay_server_tools``, e.g. ``web_search``):
its tools and its beta flags then pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Feature:
    """What one vendor-side feature looks like in each vendor's requests."""

    anthropic_tools: tuple[str, ...] = ()  # prefixes of a tool's "type"
    beta_flags: tuple[str, ...] = ()  # prefixes of an anthropic-beta flag
    openai_tools: tuple[str, ...] = ()  # prefixes of a tool's "type" (Responses, Chat)
    gemini_tools: tuple[str, ...] = ()  # keys of a Tool object (camelCase)
    body_keys: tuple[str, ...] = ()  # top-level request fields that turn it on


FEATURES: dict[str, Feature] = {
    "web_search": Feature(
        anthropic_tools=("web_search_",),
        beta_flags=("web-search",),
        openai_tools=("web_search",),
        gemini_tools=("googleSearch", "googleSearchRetrieval", "enterpriseWebSearch", "googleMaps"),
        body_keys=("web_search_options",),  # Chat Completions' search models
    ),
    # Also images and documents given by URL: the vendor fetches them.
    "web_fetch": Feature(
        anthropic_tools=("web_fetch_",), beta_flags=("web-fetch",), gemini_tools=("urlContext",)
    ),
    "code_execution": Feature(
        anthropic_tools=("code_execution_",),
        beta_flags=("code-execution", "skills-"),  # skills run in the code container
        openai_tools=("code_interpreter",),
        gemini_tools=("codeExecution",),
        body_keys=("container",),
    ),
    "mcp": Feature(
        anthropic_tools=("mcp_toolset",),
        beta_flags=("mcp-client",),
        openai_tools=("mcp",),
        body_keys=("mcp_servers",),
    ),
    # The owner's uploaded files, referenced by id (and Gemini's cached contents).
    "files": Feature(
        beta_flags=("files-api",),
        openai_tools=("file_search",),
        gemini_tools=("fileSearch",),
        body_keys=("cachedContent", "cached_content"),
    ),
    "image_generation": Feature(openai_tools=("image_generation",)),
}


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


class Stripper:
    """Takes the features not in ``allow`` out of request bodies and beta headers."""

    def __init__(self, provider: str, allow: Iterable[str] = ()) -> None:
        self.provider = provider
        self.allow = frozenset(allow)
        self.unknown = sorted(self.allow - FEATURES.keys())
        denied = [f for name, f in FEATURES.items() if name not in self.allow]
        self._anthropic = tuple(p for f in denied for p in f.anthropic_tools)
        self._beta = tuple(p for f in denied for p in f.beta_flags)
        self._openai = tuple(p for f in denied for p in f.openai_tools)
        gemini = [k for f in denied for k in f.gemini_tools]
        self._gemini = frozenset(gemini + [_snake(k) for k in gemini])  # proto JSON takes both
        self._keys = tuple(k for f in denied for k in f.body_keys)
        self._drop_urls = "web_fetch" not in self.allow
        self._drop_files = "files" not in self.allow

    # -- headers ---------------------------------------------------------------------------
    def beta(self, value: str) -> tuple[str, list[str]]:
        """An ``anthropic-beta`` value without the denied flags, and the flags removed."""
        flags = [f.strip() for f in value.split(",") if f.strip()]
        kept = [f for f in flags if not f.lower().startswith(self._beta)]
        return ",".join(kept), [f for f in flags if f not in kept]

    # -- bodies ----------------------------------------------------------------------------
    def body(self, body: dict[str, Any]) -> list[str]:
        """Remove the denied features from ``body`` in place; say what went."""
        removed: list[str] = []
        for key in self._keys:
            if key in body:
                del body[key]
                removed.append(key)
        if self.provider == "anthropic":
            self._tools(body, self._anthropic, removed)
            for message in _list(body.get("messages")):
                if isinstance(message, dict):
                    self._anthropic_blocks(message, removed)
        elif self.provider == "openai":
            self._tools(body, self._openai, removed)
            for item in _list(body.get("input")) + _list(body.get("messages")):
                if isinstance(item, dict):
                    self._openai_parts(item, removed)
        elif self.provider == "gemini":
            self._gemini_tools(body, removed)
            system = body.get("systemInstruction", body.get("system_instruction"))
            for content in [*_list(body.get("contents")), system]:
                if isinstance(content, dict):
                    self._gemini_parts(content, removed)
        return removed

    def _tools(self, body: dict[str, Any], prefixes: tuple[str, ...], removed: list[str]) -> None:
        tools = body.get("tools")
        if not isinstance(tools, list) or not prefixes:
            return
        kept, names = [], set()
        for tool in tools:
            kind = tool.get("type") if isinstance(tool, dict) else None
            if isinstance(kind, str) and kind.startswith(prefixes):
                removed.append(f"tool {kind}")
                names.add(str(tool.get("name", kind)))
                names.add(kind)
            else:
                kept.append(tool)
        body["tools"] = kept
        # A tool_choice naming a removed tool would make the vendor refuse the whole call.
        choice = body.get("tool_choice")
        if isinstance(choice, dict) and {choice.get("name"), choice.get("type")} & names:
            del body["tool_choice"]

    def _anthropic_blocks(self, holder: dict[str, Any], removed: list[str]) -> None:
        content = holder.get("content")
        if not isinstance(content, list):
            return
        for i, block in enumerate(content):
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            source = block.get("source")
            by = source.get("type") if isinstance(source, dict) else None
            if kind == "tool_result":
                self._anthropic_blocks(block, removed)
            elif kind in ("image", "document") and by == "url" and self._drop_urls:
                content[i] = {"type": "text", "text": _gone(f"{kind} by url", removed)}
            elif (kind == "container_upload" or by == "file") and self._drop_files:
                content[i] = {"type": "text", "text": _gone(f"{kind} by file id", removed)}

    def _openai_parts(self, item: dict[str, Any], removed: list[str]) -> None:
        content = item.get("content")
        if not isinstance(content, list):
            return
        for i, part in enumerate(content):
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind in ("input_image", "input_file"):  # Responses
                url = str(part.get("image_url") or part.get("file_url") or "")
                by_url, by_id = _web(url), bool(part.get("file_id"))
                text = "input_text"
            elif kind in ("image_url", "file"):  # Chat Completions
                inner = part.get(kind)
                inner = inner if isinstance(inner, dict) else {"url": inner}
                by_url, by_id = _web(str(inner.get("url") or "")), bool(inner.get("file_id"))
                text = "text"
            else:
                continue
            if by_url and self._drop_urls:
                content[i] = {"type": text, "text": _gone(f"{kind} by url", removed)}
            elif by_id and self._drop_files:
                content[i] = {"type": text, "text": _gone(f"{kind} by file id", removed)}

    def _gemini_tools(self, body: dict[str, Any], removed: list[str]) -> None:
        tools = body.get("tools")
        if not isinstance(tools, list):
            return
        kept = []
        for tool in tools:
            if isinstance(tool, dict):
                for key in [k for k in tool if k in self._gemini]:
                    del tool[key]
                    removed.append(f"tool {key}")
                if not tool:
                    continue
            kept.append(tool)
        body["tools"] = kept

    def _gemini_parts(self, content: dict[str, Any], removed: list[str]) -> None:
        for i, part in enumerate(_list(content.get("parts"))):
            data = part.get("fileData", part.get("file_data")) if isinstance(part, dict) else None
            if not isinstance(data, dict):
                continue
            uri = str(data.get("fileUri") or data.get("file_uri") or "")
            # An uploaded file is a URI under the API's /files/; anything else is a fetch.
            uploaded = "/files/" in uri
            if (uploaded and self._drop_files) or (not uploaded and self._drop_urls):
                content["parts"][i] = {"text": _gone("fileData", removed)}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _web(url: str) -> bool:
    return url.lower().startswith(("http:", "https:"))


def _gone(what: str, removed: list[str]) -> str:
    """The text put in place of a removed block: the conversation keeps its shape."""
    removed.append(what)
    return f"[Fetch's relay removed an {what}: the vendor would have fetched it]"


__all__ = ["FEATURES", "Feature", "Stripper"]
