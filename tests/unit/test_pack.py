"""The pack (identity/pack.py): the shipped agents and ROUTING.md, the owner's overlay,
routing by rules, and bad files named by file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ConfigError
from identity import load_pack
from orchestrator.app import SHIPPED_DATA

SHIPPED = SHIPPED_DATA / "agents"


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def agent(name: str, role: str = "does things", extra: str = "", body: str = "Be good.") -> str:
    return f"---\nname: {name}\nrole: {role}\n{extra}---\n{body}\n"


def routing(default: str = "coder", rules: str = "") -> str:
    return f"---\ndefault: {default}\n{rules}---\nWhy these rules.\n"


def test_the_shipped_pack_routes_by_its_rules() -> None:
    pack = load_pack(SHIPPED)
    assert {"coder", "reviewer", "test-fixer", "docs-writer"} <= set(pack.names())
    assert pack.default.name == "coder" and not pack.problems
    cases = {
        "fix the failing test in demo": "test-fixer",
        "the tests are failing in api": "test-fixer",
        "test_login is flaky": "test-fixer",
        "fix the tests": "test-fixer",
        "Review my last change in demo": "reviewer",
        "please do a code review of app.py": "reviewer",
        "fix the typo in README.md of demo": "docs-writer",
        "write the release notes for 1.2": "docs-writer",
        "add a --verbose flag to the cli": "coder",
        "preview the page": "coder",  # a whole word, never a part of one
        "attest the build": "coder",
    }
    for task, member in cases.items():
        assert pack.route(task).agent.name == member, task
    assert pack.route("add a flag").reason == "default"
    assert "failing test" in pack.route("fix the failing test").reason
    for shipped in pack.agents.values():
        assert shipped.instructions and shipped.role and shipped.when


def test_the_owner_pack_overrides_by_name_and_adds_members(tmp_path: Path) -> None:
    own = tmp_path / "agents"
    write(own, "reviewer.md", agent("reviewer", "my strict reviewer", body="Be harsh."))
    write(own, "sql-expert.md", agent("sql-expert", "writes SQL", 'harness: codex\nmodel: "o4"\n'))
    write(
        own,
        "ROUTING.md",
        routing(rules="rules:\n  - match: [sql, '/\\bquer(y|ies)\\b/']\n    agent: sql-expert\n"),
    )
    pack = load_pack(SHIPPED, own)
    assert not pack.problems
    assert pack.get("reviewer") is not None
    assert pack.agents["reviewer"].instructions == "Be harsh."
    assert pack.source["reviewer"] == "yours" and pack.source["coder"] == "shipped"
    sql = pack.agents["sql-expert"]
    assert (sql.harness, sql.model) == ("codex", "o4")
    assert pack.route("speed up the slow queries").agent.name == "sql-expert"
    # The owner's ROUTING.md replaced the shipped rules.
    assert pack.route("fix the failing test").agent.name == "coder"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (agent("broken", extra="colour: red\n"), "colour"),  # unknown key: a typo
        ("---\nname: broken\n---\nno role\n", "role"),
        (agent("other-name"), "name"),  # must be the file's name
        (agent("broken", extra="harness: Claude Code\n"), "harness"),
        ("---\nname: [broken\n---\n", "frontmatter"),
    ],
)
def test_a_bad_owner_agent_is_skipped_naming_file_and_key(
    tmp_path: Path, text: str, key: str
) -> None:
    own = tmp_path / "agents"
    write(own, "broken.md", text)
    pack = load_pack(SHIPPED, own)
    assert "broken" not in pack.names() and "coder" in pack.names()
    assert len(pack.problems) == 1
    assert pack.problems[0].startswith(f"skipped agents/broken.md: {key}")
    if key == "colour":
        assert pack.problems[0].endswith("no such key (known: name, role, harness, model, when)")


def test_a_bad_owner_routing_falls_back_to_the_shipped_one(tmp_path: Path) -> None:
    own = tmp_path / "agents"
    write(own, "ROUTING.md", routing(rules="rules:\n  - match: [sql]\n    agent: nobody\n"))
    pack = load_pack(SHIPPED, own)
    assert pack.problems == (
        "skipped agents/ROUTING.md: rules.0.agent: one of the pack: coder, docs-writer, "
        "reviewer, test-fixer; the shipped routing applies",
    )
    assert pack.route("fix the failing test").agent.name == "test-fixer"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (routing(default="nobody"), "default"),
        (
            routing(rules="rules:\n  - match: ['/(unclosed/']\n    agent: coder\n"),
            "rules.0.match.0",
        ),
        (routing(rules="rules:\n  - match: []\n    agent: coder\n"), "rules.0.match"),
        (routing(rules="rules:\n  - match: ['  ']\n    agent: coder\n"), "rules.0.match.0"),
        (routing(rules="rules:\n  - match: [x]\n    agent: ghost\n"), "rules.0.agent"),
        (routing(rules="rules:\n  - match: [x]\n    agent: coder\n    why: no\n"), "rules.0.why"),
    ],
)
def test_a_bad_shipped_routing_stops_start_up_naming_file_and_key(
    tmp_path: Path, text: str, key: str
) -> None:
    shipped = tmp_path / "shipped"
    write(shipped, "coder.md", agent("coder"))
    path = write(shipped, "ROUTING.md", text)
    with pytest.raises(ConfigError) as err:
        load_pack(shipped)
    assert (err.value.source, err.value.key) == (str(path), key)


def test_a_bad_shipped_agent_stops_start_up(tmp_path: Path) -> None:
    shipped = tmp_path / "shipped"
    write(shipped, "coder.md", "---\nname: coder\n---\n")
    write(shipped, "ROUTING.md", routing())
    with pytest.raises(ConfigError, match=r"coder\.md: role: required"):
        load_pack(shipped)
