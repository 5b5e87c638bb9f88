"""Diffs sized for a phone: the files, +/- counts and the first hunks, narrow lines."""

from __future__ import annotations

from orchestrator.gitops import Change

WIDTH = 60  # characters a 6-inch screen shows in monospace without wrapping badly
FIRST_HUNK_LINES = 14
PAGE_LINES = 30


def _cut(line: str) -> str:
    return line if len(line) <= WIDTH else line[: WIDTH - 1] + "…"


def _hunk_lines(patch: str) -> list[str]:
    """Only the lines a person reads: hunk headers and +/- / context, no git headers."""
    out: list[str] = []
    current = ""
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            current = line.split(" b/", 1)[-1]
            out.append(f"▸ {current}")
        elif line.startswith(("index ", "--- ", "+++ ", "new file mode", "deleted file mode",
                              "similarity index", "rename from", "rename to", "old mode",
                              "new mode")):
            continue
        elif line.startswith("GIT binary patch") or line.startswith("Binary files"):
            out.append("  (binary file)")
        elif line.startswith(("literal ", "delta ")) or (out and out[-1] == "  (binary file)"
                                                         and line and line[0] not in "@ +-"):
            continue
        else:
            out.append(_cut(line))
    return out


def summary(change: Change, repo: str) -> str:
    plus = sum(f.added for f in change.files)
    minus = sum(f.removed for f in change.files)
    n = len(change.files)
    head = [f"📝 {repo}: {n} file{'s' if n != 1 else ''}, +{plus} −{minus}"]
    for f in change.files[:8]:
        head.append(_cut(f"• {f.path} " + ("(binary)" if f.binary else f"+{f.added} −{f.removed}")))
    if n > 8:
        head.append(f"• …and {n - 8} more")
    body = _hunk_lines(change.patch)
    shown = body[:FIRST_HUNK_LINES]
    text = "\n".join(head) + "\n\n```\n" + "\n".join(shown) + "\n```"
    if len(body) > FIRST_HUNK_LINES:
        text += f"\n({len(body) - FIRST_HUNK_LINES} more lines: say more)"
    return text + "\n\nApply? (yes/no) · more · show <file>"


def page(change: Change, start: int) -> tuple[str, int]:
    """The next page of hunk lines after ``start``; returns the text and the new offset."""
    body = _hunk_lines(change.patch)
    chunk = body[start : start + PAGE_LINES]
    if not chunk:
        return "That was the whole diff.\n\nApply? (yes/no)", start
    end = start + len(chunk)
    rest = len(body) - end
    tail = f"\n({rest} more lines: say more)" if rest > 0 else ""
    return "```\n" + "\n".join(chunk) + "\n```" + tail + "\n\nApply? (yes/no)", end


def file_view(patch: str, path: str) -> str:
    body = _hunk_lines(patch)
    if not body:
        return f"{path} is not part of this change.\n\nApply? (yes/no)"
    cut = body[:PAGE_LINES]
    more = f"\n({len(body) - PAGE_LINES} more lines)" if len(body) > PAGE_LINES else ""
    return "```\n" + "\n".join(cut) + "\n```" + more + "\n\nApply? (yes/no)"
