"""A patch as the task page shows it: one foldable section per file, each line classed
(added, removed, hunk header, file header, context) for its colour.

Only data comes out of here, never markup: the template escapes every line. Each line is
first made inert exactly as on the phone (``diffview.visible``: terminal escapes, C0/C1
controls and bidi overrides spelled out), so a file cannot reorder or hide what the page
shows. A file with many lines starts folded, so a long diff stays walkable on a phone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestrator.task.diffview import visible

FOLD_LINES = 400  # a file section longer than this starts closed
_HEADERS = (
    "diff --git ",
    "index ",
    "--- ",
    "+++ ",
    "new file mode",
    "deleted file mode",
    "old mode",
    "new mode",
    "similarity index",
    "rename from",
    "rename to",
    "Binary files",
)


@dataclass(frozen=True, slots=True)
class Line:
    kind: str  # add | del | hunk | head | ctx
    text: str


@dataclass(slots=True)
class FileDiff:
    path: str
    lines: list[Line] = field(default_factory=list)
    added: int = 0
    removed: int = 0

    @property
    def folded(self) -> bool:
        return len(self.lines) > FOLD_LINES


def _path_of(header: str) -> str:
    """``diff --git a/x b/x`` -> ``x`` (the new side; a rename shows where it went)."""
    rest = header[len("diff --git ") :]
    cut = rest.rfind(" b/")
    return rest[cut + 3 :] if cut >= 0 else rest


def _kind(line: str, in_hunk: bool) -> str:
    if line.startswith("@@"):
        return "hunk"
    if in_hunk:
        if line.startswith("+"):
            return "add"
        if line.startswith("-"):
            return "del"
        return "ctx"
    return "head" if line.startswith(_HEADERS) else "ctx"


def split_files(patch: str) -> tuple[list[Line], list[FileDiff]]:
    """(what comes before the first file: a commit's header and message, the files)."""
    preamble: list[Line] = []
    files: list[FileDiff] = []
    current: FileDiff | None = None
    in_hunk = False
    for raw in patch.splitlines():
        text = visible(raw)
        if raw.startswith("diff --git "):
            current = FileDiff(_path_of(text))
            files.append(current)
            in_hunk = False
        elif raw.startswith("@@"):
            in_hunk = True
        kind = _kind(raw, in_hunk)
        if current is None:
            preamble.append(Line("ctx", text))
            continue
        current.lines.append(Line(kind, text))
        if kind == "add":
            current.added += 1
        elif kind == "del":
            current.removed += 1
    return preamble, files


__all__ = ["FOLD_LINES", "FileDiff", "Line", "split_files"]
