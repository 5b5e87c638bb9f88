"""Identity markdown: frontmatter validated, unknown keys refused with the file named."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ConfigError
from identity import FrozenContext, PromptContext, build_system_prompt, load_identity, session_note
from orchestrator.app import SHIPPED_DATA


def test_shipped_identity_loads_and_builds_prompt() -> None:
    ident = load_identity(SHIPPED_DATA / "identity")
    prompt = (
        build_system_prompt(
            ident,
            FrozenContext(
                workspace="/ws",
                repos=("demo", "myapp"),
                day="2026-11-23 (Monday)",
                skills=(("a", "b"),),
            ),
        )
        + "\n"
        + session_note(
            PromptContext(
                state="ALERT",
                repos=("demo", "myapp"),
                active_repo="myapp",
                repo_status="myapp (main, clean)",
                harness="claude-code",
            )
        )
    )
    assert "You are Fetch" in prompt
    assert "Never change code without the owner's approval" in prompt
    assert "active repo: myapp" in prompt and "git status: myapp (main, clean)" in prompt
    assert "mode: ALERT" in prompt and "demo, myapp" in prompt


@pytest.mark.parametrize(
    ("collar", "key"),
    [
        ("---\nname: Fetch\nversion: 1\nmood: grumpy\n---\nhi", "mood"),
        ("---\nname: Fetch\nversion: zero\n---\nhi", "version"),
        ("---\nversion: 1\n---\nhi", "name"),
        ("---\nname: [unclosed\n---\nhi", "frontmatter"),
    ],
)
def test_bad_collar_is_refused(tmp_path: Path, collar: str, key: str) -> None:
    (tmp_path / "COLLAR.md").write_text(collar)
    (tmp_path / "ALPHA.md").write_text((SHIPPED_DATA / "identity" / "ALPHA.md").read_text())
    with pytest.raises(ConfigError) as info:
        load_identity(tmp_path)
    assert str(tmp_path / "COLLAR.md") in str(info.value) and key in str(info.value)


def test_missing_alpha(tmp_path: Path) -> None:
    (tmp_path / "COLLAR.md").write_text((SHIPPED_DATA / "identity" / "COLLAR.md").read_text())
    with pytest.raises(ConfigError, match=r"ALPHA\.md: file not found"):
        load_identity(tmp_path)


def test_the_identity_digest_is_remembered_for_one_identity_and_made_anew_for_another() -> None:
    """The prompt's identity digest is kept for the identity it was made from (it is
    frozen); another identity (a reload) gets its own, and the first one's comes back."""
    from dataclasses import replace

    from orchestrator.agent.prompt import identity_digest

    first = load_identity(SHIPPED_DATA / "identity")
    other = replace(first, alpha=first.alpha.model_copy(update={"timezone": "Asia/Tokyo"}))
    a = identity_digest(first)
    assert identity_digest(first) == a
    b = identity_digest(other)
    assert b != a
    assert identity_digest(first) == a
    assert identity_digest(replace(first)) == a  # an equal identity, another object
