"""What the orchestrator model's endpoint answered, checked before the planner reads it.

Real endpoints answer HTTP 200 with things that are not a chat completion: an HTML page
(a proxy, a login portal), an error object (``{"error": {...}}``), a body without
choices. The openai SDK hands those over as they are (a ``str``, a completion without
choices), and some servers send a tool call's ``arguments`` as a JSON object instead of
the JSON string the API defines. ``problem`` words the first kind for the owner (the
planner raises it as ``PlannerUnavailable``: a task falls back to the harness);
``normalise_arguments`` repairs the second in place, so the tool runs as asked.
"""

from __future__ import annotations

import json
from typing import Any


def _snippet(value: object, limit: int = 80) -> str:
    text = " ".join(str(value).split())
    return text[:limit] + ("…" if len(text) > limit else "")


def problem(response: Any) -> str | None:
    """Why ``response`` is not a usable chat completion; None when it is one."""
    if isinstance(response, str | bytes):
        kind = "an HTML page" if "<html" in str(response[:200]).lower() else "plain text"
        return (
            f"the orchestrator model endpoint answered {kind}, not a completion "
            f"({_snippet(response)!r})"
        )
    error = getattr(response, "error", None)
    if error is not None:
        message = error.get("message") if isinstance(error, dict) else error
        return f"the orchestrator model endpoint answered an error: {_snippet(message)}"
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        return "the model answered with no choices"
    if getattr(choices[0], "message", None) is None:
        return "the model answered a choice without a message"
    return None


def normalise_arguments(calls: list[Any]) -> None:
    """Tool call arguments as the JSON string the API defines (a server may send the
    object itself; ``None`` is no arguments)."""
    for call in calls:
        function = getattr(call, "function", None)
        if function is None:
            continue
        arguments = getattr(function, "arguments", None)
        if arguments is None:
            function.arguments = "{}"
        elif not isinstance(arguments, str):
            function.arguments = json.dumps(arguments)
