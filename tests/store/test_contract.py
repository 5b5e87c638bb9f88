"""What each store port promises, asserted for the SQLite and the in-memory
implementation alike (the ``ports`` fixture runs every test once per implementation)."""

from __future__ import annotations

import time

from core.events import SessionKey
from tests.store.conftest import Ports

KEY = SessionKey("terminal", "owner")
OTHER = SessionKey("telegram", "42")


# -- sessions --------------------------------------------------------------------------
async def test_an_unsaved_session_loads_as_none(ports: Ports) -> None:
    assert await ports.sessions.load(KEY) is None


async def test_a_saved_session_loads_back_as_a_copy(ports: Ports) -> None:
    data = {"repo": "demo", "turns": [1, 2]}
    await ports.sessions.save(KEY, "IDLE", data)
    data["repo"] = "changed after saving"
    row = await ports.sessions.load(KEY)
    assert row is not None
    assert (row.key, row.state, row.data) == (KEY, "IDLE", {"repo": "demo", "turns": [1, 2]})
    row.data["repo"] = "changed after loading"
    again = await ports.sessions.load(KEY)
    assert again is not None and again.data["repo"] == "demo"


async def test_saving_again_replaces_state_and_data(ports: Ports) -> None:
    await ports.sessions.save(KEY, "IDLE", {"a": 1})
    await ports.sessions.save(KEY, "WORKING", {"b": 2})
    row = await ports.sessions.load(KEY)
    assert row is not None and (row.state, row.data) == ("WORKING", {"b": 2})
    assert await ports.sessions.load(OTHER) is None


async def test_sessions_are_found_by_state(ports: Ports) -> None:
    third = SessionKey("whatsapp", "7")
    await ports.sessions.save(KEY, "WORKING", {"n": 1})
    await ports.sessions.save(OTHER, "IDLE", {"n": 2})
    await ports.sessions.save(third, "GUARDING", {"n": 3})
    working = await ports.sessions.in_states(("WORKING",))
    assert [(r.key, r.state, r.data) for r in working] == [(KEY, "WORKING", {"n": 1})]
    both = await ports.sessions.in_states(("WORKING", "GUARDING"))
    assert {r.key for r in both} == {KEY, third}
    assert await ports.sessions.in_states(("STOPPED",)) == []


# -- inbox -----------------------------------------------------------------------------
async def test_a_message_is_accepted_once_per_channel_and_id(ports: Ports) -> None:
    assert await ports.inbox.accept("wa", "m1", KEY, {"x": 1})
    assert not await ports.inbox.accept("wa", "m1", KEY, {"x": 2})
    assert await ports.inbox.accept("tg", "m1", KEY, {"x": 3})
    assert await ports.inbox.accept("wa", "m2", KEY, {"x": 4})
    assert [p["x"] for p in await ports.inbox.queued()] == [1, 3, 4]


async def test_the_queue_replays_unfinished_messages_oldest_first(ports: Ports) -> None:
    for i in range(5):
        assert await ports.inbox.accept("wa", f"m{i}", KEY, {"i": i, "nested": {"k": [i]}})
    await ports.inbox.finish("wa", "m1")
    await ports.inbox.finish("wa", "m3")
    assert await ports.inbox.queued() == [{"i": i, "nested": {"k": [i]}} for i in (0, 2, 4)]


async def test_a_finished_message_stays_seen(ports: Ports) -> None:
    assert not await ports.inbox.seen("wa", "m1")
    await ports.inbox.accept("wa", "m1", KEY, {})
    assert await ports.inbox.seen("wa", "m1")
    await ports.inbox.finish("wa", "m1")
    assert await ports.inbox.seen("wa", "m1")
    assert not await ports.inbox.accept("wa", "m1", KEY, {})  # never handled twice
    assert await ports.inbox.queued() == []
    assert not await ports.inbox.seen("tg", "m1")


async def test_finishing_an_unknown_message_changes_nothing(ports: Ports) -> None:
    await ports.inbox.accept("wa", "m1", KEY, {"x": 1})
    await ports.inbox.finish("wa", "nope")
    assert not await ports.inbox.seen("wa", "nope")
    assert await ports.inbox.queued() == [{"x": 1}]


# -- messages --------------------------------------------------------------------------
async def test_a_chat_with_no_messages_used_no_tokens(ports: Ports) -> None:
    assert await ports.messages.token_totals(KEY) == (0, 0)


async def test_logged_rows_count_before_they_are_flushed(ports: Ports) -> None:
    ports.messages.log(KEY, "in", "hi")
    ports.messages.log(KEY, "out", "hello", model="m", tokens_in=10, tokens_out=3)
    ports.messages.log(OTHER, "out", "elsewhere", model="m", tokens_in=100, tokens_out=100)
    assert await ports.messages.token_totals(KEY) == (10, 3)


async def test_totals_stay_current_after_the_first_read(ports: Ports) -> None:
    ports.messages.log(KEY, "out", "a", model="m", tokens_in=1, tokens_out=2)
    assert await ports.messages.token_totals(KEY) == (1, 2)
    ports.messages.log(KEY, "out", "b", model="m", tokens_in=5, tokens_out=7)
    assert await ports.messages.token_totals(KEY) == (6, 9)
    await ports.messages.flush()
    assert await ports.messages.token_totals(KEY) == (6, 9)
    assert await ports.messages.token_totals(OTHER) == (0, 0)


async def test_added_rows_get_increasing_ids_and_count_in_totals(ports: Ports) -> None:
    first = await ports.messages.add(KEY, "in", "one")
    second = await ports.messages.add(KEY, "out", "two", model="m", tokens_in=4, tokens_out=1)
    assert 0 < first < second
    await ports.messages.flush()  # nothing queued: a no-op
    assert await ports.messages.token_totals(KEY) == (4, 1)


async def test_recent_is_the_chats_last_messages_oldest_first_queued_included(
    ports: Ports,
) -> None:
    first = await ports.messages.add(KEY, "in", "one")
    await ports.messages.add(OTHER, "in", "elsewhere")
    await ports.messages.add(KEY, "tool", "not conversation")
    ports.messages.log(KEY, "out", "two")
    ports.messages.log(KEY, "in", "three")
    rows = await ports.messages.recent(KEY, 2)
    assert [(d, t) for _i, d, t in rows] == [("out", "two"), ("in", "three")]
    assert first < rows[0][0] < rows[1][0]
    everything = await ports.messages.recent(KEY, 10)
    assert [t for _i, _d, t in everything] == ["one", "two", "three"]


async def test_the_log_keeps_who_said_each_line(ports: Ports) -> None:
    await ports.messages.add(KEY, "in", "from the owner", sender="owner")
    ports.messages.log(KEY, "in", "from alice", sender="alice")
    ports.messages.log(KEY, "out", "fetch answers")
    lines = await ports.messages.recent_lines(KEY, 10)
    assert [(line.text, line.sender) for line in lines] == [
        ("from the owner", "owner"),
        ("from alice", "alice"),
        ("fetch answers", ""),
    ]


# -- work: tasks -----------------------------------------------------------------------
async def test_a_new_task_is_running(ports: Ports) -> None:
    task_id = await ports.work.create_task(KEY, "demo", "fix the typo", "claude")
    task = await ports.work.get_task(task_id)
    assert task is not None
    assert (task.id, task.session, task.repo, task.prompt, task.harness, task.status) == (
        task_id,
        "terminal:owner",
        "demo",
        "fix the typo",
        "claude",
        "running",
    )
    assert await ports.work.get_task(task_id + 100) is None
    other = await ports.work.create_task(OTHER, "demo", "again", "codex")
    assert other != task_id


async def test_a_task_moves_through_its_statuses(ports: Ports) -> None:
    task_id = await ports.work.create_task(KEY, "demo", "p", "claude")
    await ports.work.finish_task(
        task_id, "proposed", "done: 3 files", tokens_in=5, tokens_out=6, cost_usd=0.01
    )
    task = await ports.work.get_task(task_id)
    assert task is not None and task.status == "proposed"
    await ports.work.set_task_status(task_id, "committed")
    task = await ports.work.get_task(task_id)
    assert task is not None and task.status == "committed"


async def test_orphaned_running_tasks_are_interrupted_and_no_other(ports: Ports) -> None:
    running = await ports.work.create_task(KEY, "demo", "p", "claude")
    other = await ports.work.create_task(OTHER, "demo", "q", "codex")
    asked = await ports.work.create_task(KEY, "demo", "r", "claude")
    await ports.work.set_task_status(asked, "question")  # waits for an answer: kept
    done = await ports.work.create_task(KEY, "demo", "s", "claude")
    await ports.work.finish_task(done, "proposed", "a diff")
    assert await ports.work.interrupt_orphans() == 2
    statuses = {}
    for task_id in (running, other, asked, done):
        task = await ports.work.get_task(task_id)
        assert task is not None
        statuses[task_id] = task.status
    assert statuses == {
        running: "interrupted",
        other: "interrupted",
        asked: "question",
        done: "proposed",
    }
    assert await ports.work.interrupt_orphans() == 0


async def test_task_checks_are_kept(ports: Ports) -> None:
    task_id = await ports.work.create_task(KEY, "demo", "p", "claude")
    assert await ports.work.task_checks(task_id) == []
    await ports.work.set_task_checks(task_id, ["pytest -q", "ruff check ."])
    assert await ports.work.task_checks(task_id) == ["pytest -q", "ruff check ."]
    assert await ports.work.task_checks(task_id + 100) == []


# -- work: approvals -------------------------------------------------------------------
async def _approval(ports: Ports, key: SessionKey, nonce: str, ttl: float = 600.0) -> int:
    task_id = await ports.work.create_task(key, "demo", "p", "claude")
    return await ports.work.create_approval(
        key, task_id, "demo", nonce, "hash", "base", "owner", ttl
    )


async def test_an_approval_starts_pending_with_its_expiry(ports: Ports) -> None:
    before = time.time()
    approval_id = await _approval(ports, KEY, "n1", ttl=600.0)
    row = await ports.work.get_approval(approval_id)
    assert row is not None
    assert (
        row.session,
        row.repo,
        row.nonce,
        row.diff_hash,
        row.base_sha,
        row.owner,
        row.status,
    ) == ("terminal:owner", "demo", "n1", "hash", "base", "owner", "pending")
    assert before + 600.0 <= row.expires_at <= time.time() + 600.0
    assert await ports.work.get_approval(approval_id + 100) is None


async def test_a_new_approval_supersedes_the_sessions_pending_one(ports: Ports) -> None:
    first = await _approval(ports, KEY, "n1")
    elsewhere = await _approval(ports, OTHER, "n2")
    second = await _approval(ports, KEY, "n3")
    statuses = [(await ports.work.get_approval(i)) for i in (first, elsewhere, second)]
    assert [r.status if r else None for r in statuses] == ["superseded", "pending", "pending"]
    assert not await ports.work.decide_approval(first, "approved")  # can never be answered


async def test_an_approval_is_decided_once(ports: Ports) -> None:
    approval_id = await _approval(ports, KEY, "n1")
    assert await ports.work.decide_approval(approval_id, "approved")
    assert not await ports.work.decide_approval(approval_id, "rejected")
    row = await ports.work.get_approval(approval_id)
    assert row is not None and row.status == "approved"
    assert not await ports.work.decide_approval(approval_id + 100, "approved")


# -- work: commits (for /undo) ---------------------------------------------------------
async def test_undo_walks_back_through_the_sessions_commits(ports: Ports) -> None:
    assert await ports.work.last_commit(KEY) is None
    task_id = await ports.work.create_task(KEY, "demo", "p", "claude")
    await ports.work.record_commit(KEY, "demo", "sha1", "base", task_id, "first")
    await ports.work.record_commit(KEY, "demo", "sha2", "sha1", None, "second")
    await ports.work.record_commit(OTHER, "demo", "sha9", "x", None, "elsewhere")
    last = await ports.work.last_commit(KEY)
    assert last is not None
    assert (last.session, last.repo, last.sha, last.parent, last.task_id, last.summary) == (
        "terminal:owner",
        "demo",
        "sha2",
        "sha1",
        None,
        "second",
    )
    await ports.work.mark_undone(last.id, "revert2")
    previous = await ports.work.last_commit(KEY)
    assert previous is not None
    assert (previous.sha, previous.task_id, previous.summary) == ("sha1", task_id, "first")
    await ports.work.mark_undone(previous.id, "revert1")
    assert await ports.work.last_commit(KEY) is None
    elsewhere = await ports.work.last_commit(OTHER)
    assert elsewhere is not None and elsewhere.sha == "sha9"


# -- work: intents (the git journal) ---------------------------------------------------
async def test_a_commit_intent_records_everything_at_once_when_done(ports: Ports) -> None:
    task_id = await ports.work.create_task(KEY, "demo", "p", "claude", requester="ann")
    approval_id = await ports.work.create_approval(
        KEY, task_id, "demo", "n", "hash", "base", "owner", 600
    )
    opened = await ports.work.open_intent(
        "commit", KEY, "demo", approval_id, "base", "tree1", "fetch: p"
    )
    intent = opened.id
    [row] = await ports.work.open_intents()
    assert row == opened
    assert (
        row.id,
        row.kind,
        row.session,
        row.repo,
        row.target,
        row.base,
        row.tree,
        row.message,
        row.status,
    ) == (
        intent,
        "commit",
        "terminal:owner",
        "demo",
        approval_id,
        "base",
        "tree1",
        "fetch: p",
        "open",
    )
    assert await ports.work.commit_done(intent, "sha1", "fetch: p")
    assert await ports.work.open_intents() == []
    approval = await ports.work.get_approval(approval_id)
    task = await ports.work.get_task(task_id)
    last = await ports.work.last_commit(KEY)
    assert approval is not None and approval.status == "approved"
    assert task is not None and task.status == "committed"
    assert last is not None and (
        last.sha,
        last.parent,
        last.task_id,
        last.summary,
        last.requester,
    ) == ("sha1", "base", task_id, "fetch: p", "ann")
    assert not await ports.work.commit_done(intent, "sha1", "fetch: p")  # once only


async def test_a_commit_intent_on_a_decided_approval_records_nothing(ports: Ports) -> None:
    approval_id = await _approval(ports, KEY, "n1")
    intent = (await ports.work.open_intent("commit", KEY, "demo", approval_id, "base", "t", "m")).id
    assert await ports.work.decide_approval(approval_id, "rejected")
    assert not await ports.work.commit_done(intent, "sha1", "m")
    assert await ports.work.last_commit(KEY) is None
    assert await ports.work.open_intents() == []


async def test_undo_and_void_intents_close(ports: Ports) -> None:
    await ports.work.record_commit(KEY, "demo", "sha1", "base", None, "first")
    last = await ports.work.last_commit(KEY)
    assert last is not None
    undo = (await ports.work.open_intent("undo", KEY, "demo", last.id, "sha1", "", "u")).id
    lost = (await ports.work.open_intent("undo", KEY, "demo", last.id, "sha1", "", "u")).id
    assert [i.id for i in await ports.work.open_intents()] == [undo, lost]
    await ports.work.void_intent(lost)
    await ports.work.undo_done(undo, "rev1")
    assert await ports.work.last_commit(KEY) is None
    assert await ports.work.open_intents() == []


async def test_an_unasked_intent_records_the_commit_in_its_session(ports: Ports) -> None:
    task_id = await ports.work.create_task(OTHER, "demo", "p", "demo", requester="ann")
    intent = (
        await ports.work.open_intent(
            "unasked", KEY, "demo", task_id, "base", "t", "fetch: p\n\nbody"
        )
    ).id
    assert not await ports.work.commit_done(intent, "sha1", "fetch: p")  # not a yes
    assert await ports.work.unasked_done(intent, "sha1", "fetch: p")
    assert await ports.work.open_intents() == []
    last = await ports.work.last_commit(KEY)  # the intent's session: where /undo is said
    task = await ports.work.get_task(task_id)
    assert last is not None and (
        last.sha,
        last.parent,
        last.task_id,
        last.summary,
        last.requester,
    ) == ("sha1", "base", task_id, "fetch: p", "ann")
    assert task is not None and task.status == "committed"
    assert not await ports.work.unasked_done(intent, "sha1", "fetch: p")  # once only


async def test_a_branch_intent_records_the_merge_question(ports: Ports) -> None:
    task_id = await ports.work.create_task(KEY, "demo", "p", "demo")
    older = await _approval(ports, KEY, "n0")
    intent = (await ports.work.open_intent("branch", KEY, "demo", task_id, "base", "t", "m")).id
    approval_id = await ports.work.branch_done(intent, "n1", "hash", "owner", 600)
    assert approval_id and await ports.work.open_intents() == []
    approval = await ports.work.get_approval(approval_id)
    assert approval is not None and (
        approval.task_id,
        approval.nonce,
        approval.diff_hash,
        approval.base_sha,
        approval.status,
    ) == (task_id, "n1", "hash", "base", "pending")
    assert approval.expires_at > time.time() + 500
    assert await ports.work.task_approval(task_id) == approval
    superseded = await ports.work.get_approval(older)
    assert superseded is not None and superseded.status == "superseded"
    task = await ports.work.get_task(task_id)
    assert task is not None and task.status == "branched"
    assert await ports.work.last_commit(KEY) is None  # not on the owner's branch yet
    assert await ports.work.branch_done(intent, "n2", "hash", "owner", 600) == 0
