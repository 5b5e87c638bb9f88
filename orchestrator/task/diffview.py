"""Diffs sized for a phone: the files, +/- counts and the first hunks, narrow lines.

Everything shown comes from files a hostile harness wrote, so every line is made inert
first: terminal control and escape sequences, C0/C1 controls and bidi overrides are shown
as visible escapes (``\\x1b``, ``\\u202e``), never passed through. Big and binary files are
named with their size, not shown; the patch itself arrives already capped (gitops).
"""

from __future__ import annotations

import re

from orchestrator.boundary.gitops import PATCH_CAP, Change, FileStat

WIDTH = 60  # characters a 6-inch screen shows in monospace without wrapping badly
FIRST_HUNK_LINES = 14
PAGE_LINES = 30

# C0 controls but tab, DEL, C1 controls; bidi embeddings, overrides and isolates; the
# invisible marks and separators that reorder or break a line (and the zero-width space,
# which only ``inert_fences`` may add).
_CONTROLS = [*range(0x00, 0x09), *range(0x0A, 0x20), 0x7F, *range(0x80, 0xA0)]
_FORMATS = [
    0x061C,
    0x200B,
    0x200E,
    0x200F,
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
    0x2028,
    0x2029,
    0xFEFF,
]
_INERT = {c: f"\\x{c:02x}" for c in _CONTROLS} | {c: f"\\u{c:04x}" for c in _FORMATS}


def visible(text: str) -> str:
    """``text`` with every control, escape and bidi character spelled out."""
    return text.translate(_INERT)


# Three backticks anywhere end WhatsApp's monospace, and a line that starts with them
# (after spaces: a diff's context line " ```python") is a fence to the splitter and to
# both renderers. Inside the diff's own block such a run is broken with zero-width
# spaces (the only ones shown: a file's own are spelled out by ``visible``), so nothing
# a file holds can close the diff's block or open another; it still reads as ```.
_BACKTICKS = re.compile(r"`{3,}")
ZWSP = "\u200b"


def inert_fences(line: str) -> str:
    return _BACKTICKS.sub(lambda m: ZWSP.join(m.group(0)), line)


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TB"  # pragma: no cover - the loop always returns


def _cut(line: str) -> str:
    line = visible(line)
    line = line if len(line) <= WIDTH else line[: WIDTH - 1] + "…"
    return inert_fences(line)


def _lines(patch: str) -> list[str]:
    # split on "\n" only: str.splitlines would also split on \r, \x0b, \x1c, \u2028...
    # which must be shown, not obeyed.
    lines = patch.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _hunk_lines(patch: str) -> list[str]:
    """Only the lines a person reads: hunk headers and +/- / context, no git headers."""
    out: list[str] = []
    current = ""
    for line in _lines(patch):
        if line.startswith("diff --git "):
            current = line.split(" b/", 1)[-1]
            out.append(_cut(f"▸ {current}"))
        elif line.startswith(
            (
                "index ",
                "--- ",
                "+++ ",
                "new file mode",
                "deleted file mode",
                "similarity index",
                "rename from",
                "rename to",
                "old mode",
                "new mode",
            )
        ):
            continue
        elif line.startswith("GIT binary patch") or line.startswith("Binary files"):
            out.append("  (binary or big file, not shown)")
        elif line.startswith(("literal ", "delta ")) or (
            out
            and out[-1] == "  (binary or big file, not shown)"
            and line
            and line[0] not in "@ +-"
        ):
            continue
        else:
            out.append(_cut(line))
    return out


def _describe(f: FileStat) -> str:
    if f.big:
        return f"• {f.path}: {human_size(f.size)}, not shown"
    if f.binary:
        return f"• {f.path} (binary, {human_size(f.size)}, not shown)"
    return f"• {f.path} +{f.added} −{f.removed}"


def _cut_note(change: Change) -> str:
    return (
        f"\n(the diff is longer than {human_size(PATCH_CAP)}; the rest is not shown)"
        if change.truncated
        else ""
    )


def summary(change: Change, repo: str) -> str:
    plus = sum(f.added for f in change.files)
    minus = sum(f.removed for f in change.files)
    n = len(change.files)
    head = [f"📝 {inert_fences(visible(repo))}: {n} file{'s' if n != 1 else ''}, +{plus} −{minus}"]
    for f in change.files[:8]:
        head.append(_cut(_describe(f)))
    if n > 8:
        head.append(f"• …and {n - 8} more")
    head += _left_out(change)
    body = _hunk_lines(change.patch)
    shown = body[:FIRST_HUNK_LINES]
    text = "\n".join(head) + "\n\n```\n" + "\n".join(shown) + "\n```"
    if len(body) > FIRST_HUNK_LINES:
        text += f"\n({len(body) - FIRST_HUNK_LINES} more lines: say more)"
    else:
        text += _cut_note(change)
    return text + "\n\nApply? (yes/no) · more · show <file>"


def _left_out(change: Change) -> list[str]:
    """What the kennel left that is not part of the change (and is never applied)."""
    if not change.left_out:
        return []
    lines = [f"🚫 Left out, never applied ({len(change.left_out)}):"]
    lines += [_cut(f"• {inert_fences(visible(item))}") for item in change.left_out[:6]]
    if len(change.left_out) > 6:
        lines.append(f"• …and {len(change.left_out) - 6} more")
    return lines


def page(change: Change, start: int) -> tuple[str, int]:
    """The next page of hunk lines after ``start``; returns the text and the new offset."""
    body = _hunk_lines(change.patch)
    chunk = body[start : start + PAGE_LINES]
    if not chunk:
        return "That was the whole diff." + _cut_note(change) + "\n\nApply? (yes/no)", start
    end = start + len(chunk)
    rest = len(body) - end
    tail = f"\n({rest} more lines: say more)" if rest > 0 else _cut_note(change)
    return "```\n" + "\n".join(chunk) + "\n```" + tail + "\n\nApply? (yes/no)", end


def file_view(patch: str, path: str) -> str:
    body = _hunk_lines(patch)
    if not body:
        return f"{inert_fences(visible(path))} is not part of this change.\n\nApply? (yes/no)"
    cut = body[:PAGE_LINES]
    more = f"\n({len(body) - PAGE_LINES} more lines)" if len(body) > PAGE_LINES else ""
    return "```\n" + "\n".join(cut) + "\n```" + more + "\n\nApply? (yes/no)"
