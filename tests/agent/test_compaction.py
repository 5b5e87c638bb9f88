"""Compaction alone: under the budget nothing changes; over it the oldest messages fold
into one, by the summariser, or deterministically (truncation and a note) without one or
when it fails; the newest messages are kept whole."""

from __future__ import annotations

from orchestrator.agent.compaction import compact, message_tokens


def _history(n: int, size: int) -> list[dict[str, object]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i} " + "x" * size}
        for i in range(n)
    ]


async def test_under_the_budget_nothing_changes() -> None:
    history = _history(6, 100)
    assert await compact(history, 10_000) == history


async def test_without_a_model_it_truncates_deterministically() -> None:
    history = _history(10, 2000)  # ~500 tokens each
    first = await compact(history, 2000)
    assert first == await compact(history, 2000)  # the same input, the same bytes
    folded, kept = first[0], first[1:]
    assert str(folded["content"]).startswith("[")
    assert "earlier messages compacted: truncated, not summarised" in str(folded["content"])
    assert kept == history[-len(kept) :] and kept  # the newest, whole
    assert sum(message_tokens(m) for m in first) <= 2000


async def test_a_summariser_writes_the_fold_and_a_failing_one_falls_back() -> None:
    history = _history(10, 2000)
    seen: list[int] = []

    async def summarise(folded: list[dict[str, object]]) -> str:
        seen.append(len(folded))
        return "they talked about x"

    result = await compact(history, 2000, summarise)
    assert result[0]["content"] == "[summary of earlier messages]\nthey talked about x"
    assert seen and seen[0] == len(history) - (len(result) - 1)

    async def broken(folded: list[dict[str, object]]) -> str:
        raise RuntimeError("down")

    fallback = await compact(history, 2000, broken)
    assert "truncated, not summarised" in str(fallback[0]["content"])
