"""Build ``apply_patch`` texts, the freeform patch format Codex and Copilot's GPT models use.

The grammar (from the tool's lark definition the CLIs send): ``*** Begin Patch``, then file
operations (``*** Add File: P`` with ``+`` lines, ``*** Delete File: P``, ``*** Update File: P``
with ``@@`` hunks of `` ``/``-``/``+`` lines), then ``*** End Patch``.
"""

from __future__ import annotations


def _lines(text: str) -> list[str]:
    # A trailing newline ends the last line; it does not start an empty one.
    return text.splitlines() if text else [""]


def add_file(path: str, content: str) -> str:
    """A patch creating ``path``. Refused or mangled by apply_patch if ``path`` exists."""
    body = "".join(f"+{line}\n" for line in _lines(content))
    return f"*** Begin Patch\n*** Add File: {path}\n{body}*** End Patch\n"


def update_file(path: str, old: str, new: str) -> str:
    """A patch replacing the whole lines ``old`` by ``new`` inside existing ``path``."""
    minus = "".join(f"-{line}\n" for line in _lines(old))
    plus = "".join(f"+{line}\n" for line in _lines(new))
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n{minus}{plus}*** End Patch\n"


def replace_file(path: str, content: str) -> str:
    """Delete then re-add ``path``: overwrites an existing file on Copilot (Codex rejects it;
    there, ``add_file`` already overwrites)."""
    body = "".join(f"+{line}\n" for line in _lines(content))
    return f"*** Begin Patch\n*** Delete File: {path}\n*** Add File: {path}\n{body}*** End Patch\n"


def delete_file(path: str) -> str:
    return f"*** Begin Patch\n*** Delete File: {path}\n*** End Patch\n"
