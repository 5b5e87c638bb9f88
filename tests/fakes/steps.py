"""Script steps for :class:`tests.fakes.model_server.ScriptedModelServer`.

Each model request consumes one step. Steps are plain frozen dataclasses so a test reads as a
transcript; the dialect modules decide how each one looks on the wire.

Reply steps (become an assistant turn):
    Text, ToolCall, Turn (several parts in one turn), WriteFile (dialect-aware file write),
    EditFile (dialect-aware edit; may expand into more than one turn, see its docstring).
Control steps (shape the HTTP exchange itself):
    Error, Hang, Garbage, Delay.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Text:
    """Assistant text that ends the turn (``end_turn`` / ``stop`` / ``STOP``)."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    """One tool call.

    ``args`` is the JSON object of arguments. ``custom_input`` makes it a *custom* (freeform)
    tool call on the OpenAI dialects (Chat ``type:"custom"``, Responses ``custom_tool_call``),
    which is how Copilot's and Codex's ``apply_patch`` is called; Anthropic and Gemini have no
    such thing and use ``args``. ``raw_arguments`` replaces the JSON-encoded ``args`` string
    verbatim, so a test can send arguments that are not valid JSON (not possible on Gemini,
    whose arguments are a JSON object on the wire). ``id`` pins the call id; by default each
    call gets a fresh unique one.
    """

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    custom_input: str | None = None
    raw_arguments: str | None = None
    id: str | None = None


Part = Text | ToolCall


@dataclass(frozen=True, init=False)
class Turn:
    """Several parts in one assistant turn, e.g. ``Turn(Text("Writing it"), ToolCall(...))``.

    The turn stops for tools when any part is a tool call.
    """

    parts: tuple[Part | WriteFile, ...]

    def __init__(self, *parts: Part | WriteFile) -> None:
        object.__setattr__(self, "parts", parts)


@dataclass(frozen=True)
class WriteFile:
    """Write ``content`` to ``path`` with whatever file-writing tool the request offers.

    Chosen by the tools in the request body (first match wins): ``Write`` (Claude Code),
    ``write_file`` (Gemini CLI), ``apply_patch`` (Codex, Copilot on GPT models), ``create``
    (Copilot on the Anthropic wire). Without any of those, the dialect's usual tool is used.

    A file that already exists needs ``overwrite=True``:

    * Claude Code refuses ``Write`` to a file it has not ``Read`` in the session, so a
      ``Read`` turn is sent first (this step then answers *two* requests);
    * Copilot's ``apply_patch`` refuses ``*** Add File:`` of an existing path, so the patch
      is ``*** Delete File:`` + ``*** Add File:``; Codex rejects that pair but its Add File
      overwrites, so requests from Codex (``originator: codex_*``) get a plain Add File;
    * Copilot's ``create`` (Anthropic wire) cannot overwrite at all: use :class:`EditFile`;
    * Gemini's ``write_file`` overwrites either way.

    ``patch=`` sends your own apply_patch text instead (see :mod:`tests.fakes.patches`).
    """

    path: str
    content: str
    patch: str | None = None
    overwrite: bool = False


@dataclass(frozen=True)
class EditFile:
    """Replace ``old`` with ``new`` in an existing file, in the dialect's native way.

    * Claude Code (``Edit`` offered): two turns, ``Read{file_path}`` then
      ``Edit{file_path, old_string, new_string}``: Claude refuses an Edit of a file it has not
      Read in the session. So this step answers *two* requests.
    * Gemini CLI (``replace`` offered): ``replace{file_path, old_string, new_string}``.
    * Codex / Copilot (``apply_patch``): an ``*** Update File:`` patch. apply_patch matches
      whole lines, so ``old`` must be one or more complete lines of the file.
    * Copilot on the Anthropic wire (``edit`` offered): ``edit{path, old_str, new_str}``.
    """

    path: str
    old: str
    new: str


@dataclass(frozen=True)
class Error:
    """An HTTP error with a vendor-shaped JSON error body."""

    status: int
    message: str = "fake failure"
    headers: tuple[tuple[str, str], ...] = ()  # e.g. (("Retry-After", "1"),)


@dataclass(frozen=True)
class Hang:
    """Accept the request and do not answer for ``seconds`` (or until the server closes).

    ``after_headers=True`` first sends ``200`` and SSE headers, then stalls mid-stream;
    otherwise nothing at all is sent. If the client gives up first, the request's index is
    added to ``srv.disconnected``. When the time runs out the request gets a 504 error.
    """

    seconds: float = 3600
    after_headers: bool = False


@dataclass(frozen=True)
class Garbage:
    """``200`` with a body that no dialect can parse."""

    body: bytes = b"this is not what you expected {"
    content_type: str = "application/json"


@dataclass(frozen=True)
class Delay:
    """Wait ``seconds``, then play ``step``."""

    seconds: float
    step: Step


Reply = Text | ToolCall | Turn | WriteFile | EditFile
Step = Reply | Error | Hang | Garbage | Delay
