"""The web chat's outbox: ids that only grow (across restarts too), a bounded keep per
chat, and a gap said when a page was away longer than the keep."""

from __future__ import annotations

from channels.web.outbox import Outbox


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def test_ids_grow_and_a_restart_never_reuses_one() -> None:
    clock = Clock(1_000.0)
    first = Outbox(10, clock)
    said = [await first.put("owner", f"reply {i}") for i in range(5)]
    assert [e.id for e in said] == sorted({e.id for e in said})
    clock.now += 1.0  # Fetch restarts a second later: a fresh, empty keep
    second = Outbox(10, clock)
    after = await second.put("owner", "after the restart")
    assert after.id > said[-1].id and after.message_id not in {e.message_id for e in said}
    # The page's Last-Event-ID from before the restart gets everything said since.
    since = second.since("owner", said[-1].id)
    assert [e.text for e in since.events] == ["after the restart"] and not since.gap


async def test_the_keep_is_bounded_per_chat_and_a_gap_is_said() -> None:
    box = Outbox(3, Clock(5.0))
    first = await box.put("owner", "one")
    for text in ("two", "three", "four", "five"):
        await box.put("owner", text)
    await box.put("other", "elsewhere")
    since = box.since("owner", first.id)
    assert [e.text for e in since.events] == ["three", "four", "five"]
    assert since.gap  # "two" is gone: the page is told, not given a silent hole
    latest = since.events[-1].id
    assert box.since("owner", latest).events == [] and not box.since("owner", latest).gap
    assert [e.text for e in box.since("other", 0).events] == ["elsewhere"]


async def test_edits_and_the_owner_words_are_events_of_their_own_kind() -> None:
    box = Outbox(10, Clock(5.0))
    mine = await box.put("owner", "fix it", owner=True)
    reply = await box.put("owner", "⏳ working")
    edit = await box.put("owner", "✅ done", edit_of=reply.message_id)
    diff = await box.put("owner", "diff", nonce="ab12")
    assert (mine.kind, reply.kind, edit.kind, diff.kind) == ("owner", "message", "edit", "message")
    assert edit.message_id == reply.message_id and diff.as_json()["nonce"] == "ab12"
