"""Turn reply steps into assistant turns, choosing tools from what the request offers.

``WriteFile`` and ``EditFile`` name an intent, not a tool: each CLI has its own file tools
(see ``tests/fakes/cli_recipes.md``), and the request body lists the ones it offers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tests.fakes import patches
from tests.fakes.steps import EditFile, Part, Reply, Text, ToolCall, WriteFile
from tests.fakes.wire import OfferedTool, ScriptError

# First match wins. Claude Code: Write/Edit; Gemini CLI: write_file/replace; Codex and
# Copilot (GPT models): apply_patch; Copilot on the Anthropic wire: create/edit.
WRITE_TOOLS = ("Write", "write_file", "apply_patch", "create")
EDIT_TOOLS = ("Edit", "replace", "apply_patch", "edit")

TurnParts = list[Part]


@dataclass(frozen=True)
class Offer:
    """What one request lets the fake choose from."""

    tools: Mapping[str, OfferedTool]
    write_default: str  # the dialect's usual tools, when the request offers none we know
    edit_default: str
    # Codex's apply_patch "Add File" replaces an existing file; Copilot's refuses ("File
    # already exists") but takes "Delete File" + "Add File", which Codex in turn rejects.
    add_file_overwrites: bool = False

    def pick(self, candidates: tuple[str, ...], default: str) -> str:
        return next((name for name in candidates if name in self.tools), default)

    def patch_call(self, patch: str) -> ToolCall:
        # apply_patch is a custom (freeform) tool for gpt-5 class models; should a model get
        # it as a JSON function instead, the patch goes in an "input" string.
        offered = self.tools.get("apply_patch")
        if offered is not None and offered.kind == "function":
            return ToolCall("apply_patch", {"input": patch})
        return ToolCall("apply_patch", custom_input=patch)


def write_turns(step: WriteFile, offer: Offer) -> list[TurnParts]:
    tool = offer.pick(WRITE_TOOLS, offer.write_default)
    if tool == "Write":
        write = ToolCall("Write", {"file_path": step.path, "content": step.content})
        if step.overwrite:  # "File has not been read yet. Read it first before writing to it."
            return [[ToolCall("Read", {"file_path": step.path})], [write]]
        return [[write]]
    if tool == "write_file":  # Gemini CLI overwrites without complaint
        return [[ToolCall("write_file", {"file_path": step.path, "content": step.content})]]
    if tool == "create":
        if step.overwrite:
            raise ScriptError("Copilot's create refuses existing files; use EditFile")
        return [[ToolCall("create", {"path": step.path, "file_text": step.content})]]
    if tool == "apply_patch":
        if step.patch is not None:
            patch = step.patch
        elif step.overwrite and not offer.add_file_overwrites:
            patch = patches.replace_file(step.path, step.content)
        else:
            patch = patches.add_file(step.path, step.content)
        return [[offer.patch_call(patch)]]
    raise ScriptError(f"no file-writing tool known for {tool!r}")


def edit_turns(step: EditFile, offer: Offer) -> list[TurnParts]:
    tool = offer.pick(EDIT_TOOLS, offer.edit_default)
    if tool == "Edit":  # Claude Code only edits files it has Read in the session
        edit_args = {"file_path": step.path, "old_string": step.old, "new_string": step.new}
        return [[ToolCall("Read", {"file_path": step.path})], [ToolCall("Edit", edit_args)]]
    if tool == "replace":  # Gemini CLI requires an "instruction" too
        args = {
            "file_path": step.path,
            "instruction": f"Replace {step.old!r} with {step.new!r}.",
            "old_string": step.old,
            "new_string": step.new,
        }
        return [[ToolCall("replace", args)]]
    if tool == "edit":
        return [[ToolCall("edit", {"path": step.path, "old_str": step.old, "new_str": step.new})]]
    if tool == "apply_patch":
        return [[offer.patch_call(patches.update_file(step.path, step.old, step.new))]]
    raise ScriptError(f"no file-editing tool known for {tool!r}")


def turns_of(step: Reply, offer: Offer) -> list[TurnParts]:
    """The assistant turns one reply step becomes (more than one only for Read-first cases)."""
    if isinstance(step, Text | ToolCall):
        return [[step]]
    if isinstance(step, WriteFile):
        return write_turns(step, offer)
    if isinstance(step, EditFile):
        return edit_turns(step, offer)
    parts: TurnParts = []
    for part in step.parts:
        sub = turns_of(part, offer)
        if len(sub) != 1:
            raise ScriptError(f"{part!r} needs several turns and cannot be part of a Turn")
        parts.extend(sub[0])
    if not parts:
        raise ScriptError("Turn() needs at least one part")
    return [parts]


def mismatches(parts: TurnParts, tools: Mapping[str, OfferedTool]) -> list[str]:
    """Why tool calls in ``parts`` do not fit the tools offered (the CLI would reject them).

    Catches a fake drifting from a new CLI version: a renamed tool or a new required field.
    """
    found = []
    for part in parts:
        if not isinstance(part, ToolCall) or not tools:
            continue
        offered = tools.get(part.name)
        if offered is None:
            found.append(f"{part.name!r} is not offered (offered: {sorted(tools)})")
        elif (part.custom_input is not None) != (offered.kind == "custom"):
            found.append(f"{part.name!r} is a {offered.kind} tool")
        elif offered.schema and part.raw_arguments is None:
            required = offered.schema.get("required") or []
            missing = [key for key in required if key not in part.args]
            if missing:
                found.append(f"{part.name!r} lacks required {missing}")
    return found
