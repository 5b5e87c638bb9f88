"""No content can close or open a diff's formatting (issue 12): a real git diff of a
Markdown file that passes near an unchanged code fence, with ``` runs, backticks and
*bold*/_italic_/~strike~ in the changed lines, rendered for WhatsApp (its markup, then
the splitter) and Telegram (the splitter, then HTML): the diff stays one code block in
every message, and every diff line is inside it."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from channels.telegram.format import LIMIT, to_html
from channels.whatsapp.format import SAFE_CHARS, to_whatsapp
from core.text import split_message, utf16_units
from orchestrator.boundary.gitops import Change, Repo
from orchestrator.task import diffview
from tests.conftest import git, make_repo

BEFORE = """# Notes

Some text with *bold* and _italic_.

```python
print("inside")
```

The end.
"""
AFTER = """# Notes

Some changed text with *bold*, _italic_ and ~strike~.
Use ``` fences ``` inline, `code`, ````four```` and `` two ``.

```python
print("inside")
```

The end, *new* _too_.
"""
MARKERS = ("Some changed text", "Use ", 'print("inside")', "The end", "```python")


def _change(tmp_path: Path, before: str, after: str) -> Change:
    repo = make_repo(tmp_path, "notes", {"README.md": before})
    (repo / "README.md").write_text(after)
    change = Repo(repo).change()
    git(repo, "status")  # the repository is untouched by reading it
    return change


def _plain(text: str) -> str:
    return text.replace(diffview.ZWSP, "")


def _whatsapp_mono(message: str) -> list[str]:
    """What WhatsApp shows monospace: between a ``` and the next, anywhere."""
    parts = message.split("```")
    assert len(parts) % 2 == 1, f"an odd number of ``` in:\n{message}"
    return parts[1::2]


def _diff_lines(text: str) -> list[str]:
    inside = text.split("\n```\n", 1)[1].rsplit("\n```", 1)[0]
    return [line for line in inside.split("\n") if line.strip()]


@pytest.mark.parametrize("limit", [SAFE_CHARS, 300])
def test_whatsapp_keeps_the_diff_one_block(tmp_path: Path, limit: int) -> None:
    text = diffview.summary(_change(tmp_path, BEFORE, AFTER), "notes")
    diff = _diff_lines(text)
    assert any("```python" in _plain(line) for line in diff)  # the unchanged fence is there
    messages = split_message(to_whatsapp(text), limit)
    assert len(messages) >= (2 if limit == 300 else 1)
    mono = "\n".join(m for message in messages for m in _whatsapp_mono(message))
    for line in diff:
        assert line in mono, f"{line!r} is outside the code block:\n{messages}"
    for message in messages:
        outside = "".join(message.split("```")[0::2])
        assert "Apply?" in outside or "Some changed" not in outside


@pytest.mark.parametrize("limit", [LIMIT, 300])
def test_telegram_keeps_the_diff_in_pre(tmp_path: Path, limit: int) -> None:
    text = diffview.summary(_change(tmp_path, BEFORE, AFTER), "notes")
    diff = _diff_lines(text)
    rendered = [to_html(m) for m in split_message(text, limit, utf16_units)]
    pre = "\n".join(
        html.unescape(body)
        for message in rendered
        for body in re.findall(r"<pre><code[^>]*>(.*?)</code></pre>", message, re.S)
    )
    for line in diff:
        assert line in pre, f"{line!r} is outside <pre>:\n{rendered}"
    for message in rendered:
        outside = re.sub(r"<pre>.*?</pre>", "", message, flags=re.S)
        assert "<b>" not in outside and "<code>" not in outside.replace("<pre>", ""), message


def test_the_diff_still_reads_as_the_file(tmp_path: Path) -> None:
    """Only zero-width spaces were added: without them, the lines are git's lines."""
    change = _change(tmp_path, BEFORE, AFTER)
    shown = [_plain(line) for line in _diff_lines(diffview.summary(change, "notes"))]
    for marker in MARKERS:
        assert any(marker in line for line in shown), marker
    assert any(
        line.startswith("+Use ``` fences ``` inline, `code`, ````four```` and") for line in shown
    ), shown


def test_a_files_own_zero_width_space_is_spelled_out(tmp_path: Path) -> None:
    change = _change(tmp_path, BEFORE, BEFORE + "`\u200b`\u200b` fake\n")
    shown = diffview.summary(change, "notes")
    assert "+`\\u200b`\\u200b` fake" in shown
