"""The whole loop with the offline demo harness: real SQLite, real git, the real local
kennel (process group + network namespace) running a real subprocess."""

from __future__ import annotations

from collections.abc import Callable

from orchestrator.config import Settings
from tests.conftest import Driver, git, start_driver, tree_snapshot


async def test_fix_approve_commit_undo(fetch: Driver) -> None:
    repo = fetch.services.workspace.path("demo")
    original = git(repo, "rev-parse", "HEAD")
    before = tree_snapshot(repo)
    diff = await fetch.ask("fix the typo in README.md of demo", "Apply? (yes/no)")
    assert "README.md +1 −1" in diff and "-Teh quick" in diff and "+The quick" in diff
    assert fetch.services.sessions.live()[0].state == "GUARDING"
    done = await fetch.ask("yes", "Committed")
    head = git(repo, "rev-parse", "HEAD")
    assert head != original and head[:7] in done
    assert git(repo, "rev-parse", "HEAD^") == original
    assert "The quick brown fox" in (repo / "README.md").read_text()
    message = git(repo, "log", "-1", "--format=%B")
    assert "fix the typo in README.md of demo" in message and "Approved-by: owner" in message
    assert git(repo, "status", "--porcelain") == ""
    undone = await fetch.ask("/undo", "Reverted")
    assert head[:7] in undone
    assert git(repo, "rev-parse", "HEAD^{tree}") == git(repo, "rev-parse", f"{original}^{{tree}}")
    assert tree_snapshot(repo) == before
    assert "Nothing to undo" in await fetch.ask("/undo", "undo")


async def test_no_leaves_tree_byte_identical(fetch: Driver) -> None:
    repo = fetch.services.workspace.path("demo")
    (repo / ".gitignore").write_text("ignored.log\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore")
    (repo / "ignored.log").write_text("keep me")
    before = tree_snapshot(repo)
    head = git(repo, "rev-parse", "HEAD")
    await fetch.ask("fix the typo in README.md of demo", "Apply?")
    # The kennel worked on its own layer: the owner's tree is untouched until a yes.
    assert tree_snapshot(repo) == before
    reply = await fetch.ask("no", "Discarded")
    assert head[:7] in reply
    assert tree_snapshot(repo) == before
    assert git(repo, "rev-parse", "HEAD") == head
    assert fetch.services.sessions.live()[0].state == "ALERT"


async def test_guarding_holds_other_input(fetch: Driver) -> None:
    await fetch.ask("fix the typo in README.md of demo", "Apply?")
    held = await fetch.ask("add a test for app.py", "waiting for you")
    assert "yes or no" in held
    assert "GUARDING" in await fetch.ask("/status", "Fetch ·")
    await fetch.ask("no", "Discarded")


async def test_restart_between_diff_and_yes_commits_that_diff(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings()
    app, first = await start_driver(settings)
    repo = first.services.workspace.path("demo")
    base = git(repo, "rev-parse", "HEAD")
    try:
        await first.ask("fix the typo in README.md of demo", "Apply?")
    finally:
        await app.__aexit__(None, None, None)
    app, second = await start_driver(settings)
    try:
        session = await second.services.sessions.get(second.terminal_key())
        assert session.state == "GUARDING" and session.data.approval_id is not None
        await second.ask("yes", "Committed")
        assert git(repo, "rev-parse", "HEAD^") == base
        assert "+The quick" in git(repo, "show", "HEAD")
    finally:
        await app.__aexit__(None, None, None)


async def test_changed_files_after_diff_are_not_committed(fetch: Driver) -> None:
    repo = fetch.services.workspace.path("demo")
    head = git(repo, "rev-parse", "HEAD")
    await fetch.ask("fix the typo in README.md of demo", "Apply?")
    (repo / "sneaky.txt").write_text("not shown to the owner\n")
    await fetch.ask("yes", "Committed")
    # The yes covered the diff only: the commit is its tree, and the file that appeared
    # in the owner's tree meanwhile is theirs, left alone and uncommitted.
    assert git(repo, "rev-parse", "HEAD^") == head
    assert git(repo, "show", "--name-only", "--format=", "HEAD") == "README.md"
    assert (repo / "sneaky.txt").read_text() == "not shown to the owner\n"
    assert git(repo, "status", "--porcelain") == "?? sneaky.txt"


async def test_an_owner_edit_of_a_path_the_diff_writes_refuses_the_yes(fetch: Driver) -> None:
    repo = fetch.services.workspace.path("demo")
    head = git(repo, "rev-parse", "HEAD")
    await fetch.ask("fix the typo in README.md of demo", "Apply?")
    (repo / "README.md").write_text("the owner's own words\n")
    refused = await fetch.ask("yes", "Not committed")
    assert "changes of its own" in refused
    assert git(repo, "rev-parse", "HEAD") == head
    assert (repo / "README.md").read_text() == "the owner's own words\n"
    await fetch.ask("no", "Discarded")
    assert (repo / "README.md").read_text() == "the owner's own words\n"


async def test_duplicate_message_runs_once(fetch: Driver) -> None:
    await fetch.push("fix the typo in README.md of demo", message_id="wamid-1")
    await fetch.push("fix the typo in README.md of demo", message_id="wamid-1")
    await fetch.expect("Apply?")
    extra = await fetch.quiet(1.0)
    assert not any("On it" in t for t in extra), extra
    tasks = await fetch.services.store.db.conn.execute_fetchall("SELECT COUNT(*) FROM tasks")
    assert next(iter(tasks))[0] == 1


async def test_dirty_repo_is_refused_untouched(fetch: Driver) -> None:
    repo = fetch.services.workspace.path("demo")
    (repo / "wip.txt").write_text("owner's work in progress\n")
    reply = await fetch.ask("fix the typo in README.md of demo", "uncommitted changes")
    assert "wip.txt" in reply
    assert (repo / "wip.txt").read_text() == "owner's work in progress\n"
    assert "Teh quick" in (repo / "README.md").read_text()


async def test_more_and_show_file(fetch: Driver) -> None:
    await fetch.ask("fix the typo in README.md of demo", "Apply?")
    shown = await fetch.ask("show README.md", "Apply?")
    assert "+The quick" in shown
    missing = await fetch.ask("show nope.txt", "Apply?")
    assert "not part of this change" in missing
    await fetch.ask("more", "Apply?")
    await fetch.ask("no", "Discarded")


async def test_checklist_completion_and_bare_undo(fetch: Driver) -> None:
    repo = fetch.services.workspace.path("demo")
    start = await fetch.ask("fix the typo in README.md of demo", "On it")
    assert "✅ started" in start and "⬚ your review" in start and "⬚ commit" in start
    await fetch.expect("Apply?")
    done = await fetch.ask("yes", "Committed")
    assert "• README.md +1 −1" in done and "tests run:" in done
    assert "Say undo to revert" in done
    assert "Reverted" in await fetch.ask("undo", "Reverted")
    assert "Teh quick" in (repo / "README.md").read_text()


async def test_every_message_fits_a_phone_screen(fetch: Driver) -> None:
    """No tables, no long lines outside the (already cut) diff blocks."""
    await fetch.ask("/help", "Fetch")
    await fetch.ask("/commands", "Commands")
    await fetch.ask("/status", "Fetch ·")
    await fetch.ask("/harness", "Harnesses")
    await fetch.ask("banana", "not sure")
    await fetch.ask("fix the typo in README.md of demo", "Apply?")
    await fetch.ask("yes", "Committed")
    await fetch.ask("/undo", "Reverted")
    for text in fetch.seen:
        in_code = False
        for line in text.splitlines():
            if line.strip().startswith("```"):
                in_code = not in_code
            assert len(line) <= 61, f"too wide for a phone: {line!r}"
            assert not (line.count("|") >= 2 and not in_code), f"a table: {line!r}"
