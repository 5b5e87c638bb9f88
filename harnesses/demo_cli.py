"""A tiny stand-in coding CLI for the demo harness (see ``harnesses.demo``)."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

TYPOS = {
    "teh": "the",
    "helo": "hello",
    "wrold": "world",
    "recieve": "receive",
    "seperate": "separate",
    "occured": "occurred",
    "adn": "and",
    "definately": "definitely",
    "untill": "until",
    "wich": "which",
    "becuase": "because",
    "thier": "their",
    "accomodate": "accommodate",
    "enviroment": "environment",
    "langauge": "language",
}
WORD = re.compile(r"\b(" + "|".join(TYPOS) + r")\b", re.IGNORECASE)


def emit(kind: str, text: str) -> None:
    print(json.dumps({"type": kind, "text": text}), flush=True)


INSTRUCTIONS = "fetch-instructions.md"  # harnesses/instructions.py writes it in $HOME
MEMBER = re.compile(r"^# Fetch pack member: (\S+)", re.MULTILINE)


def member() -> str:
    """The pack member named by the user-level instructions, as a real CLI would read them."""
    try:
        text = (Path(os.environ.get("HOME", "/nonexistent")) / INSTRUCTIONS).read_text("utf-8")
    except OSError:
        return ""
    found = MEMBER.search(text)
    return f"{found.group(1)}: " if found else ""


def _fix(match: re.Match[str]) -> str:
    word = match.group(0)
    fixed = TYPOS[word.lower()]
    return fixed.capitalize() if word[0].isupper() else fixed


def main(prompt: str) -> int:
    root = Path.cwd()
    named = [root / t for t in re.findall(r"[\w./-]+\.\w+", prompt)]
    targets = [p for p in named if p.is_file() and root in p.resolve().parents]
    if not targets:
        targets = [p for p in (root / "README.md",) if p.is_file()]
    if not targets:
        emit("error", "demo harness: name a file to fix, e.g. 'fix the typo in README.md'")
        return 0
    changed = 0
    for path in targets:
        emit("tool_use", f"Read {path.name}")
        text = path.read_text(encoding="utf-8")
        fixed, count = WORD.subn(_fix, text)
        if count:
            path.write_text(fixed, encoding="utf-8")
            emit("file_change", path.name)
            changed += count
    who = member()
    if changed:
        emit("done", f"{who}Fixed {changed} typo(s) in {', '.join(p.name for p in targets)}.")
    else:
        emit("done", f"{who}No typos I know of in {', '.join(p.name for p in targets)}.")
    return 0


if __name__ == "__main__":
    sys.exit(main(" ".join(sys.argv[1:])))
