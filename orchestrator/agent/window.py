"""The history window: which of the chat's recent messages a turn shows whole, and what
it shows folded, kept byte-stable between turns so that each request (minus its trailing
session note) is a prefix of the next one's, which is what a provider's prompt cache reuses.

The window is anchored: it starts at a stored message id and grows turn by turn (each
turn appends the owner's line and the answer at its end) until it passes a limit:
``model.history_messages`` messages, or the token room the budget leaves it. Then it is
rebased once, in a block, leaving room for ``block`` more messages (half the limit,
in whole turns; none for a window under four) on both counts:

- the oldest messages beyond ``history_messages - block`` are dropped, as the old sliding
  window dropped them (archival memory keeps them);
- the oldest of the rest are folded until what stays leaves room for ``block`` messages
  of the average size (a quarter to a half of the token room left free), into ONE
  fold (one summariser call per block; deterministic truncation without a summariser or
  when it fails), appended to the folds shown before the window. Folds are dropped,
  oldest first, only when they outgrow their tenth of the budget, and only at a rebase.

Between two rebases nothing before the newest messages changes. The state lives in the
session (``SessionData.history_window``) so a restart resumes the same window; it belongs
to one conversation (``since``): /clear starts another, and so does a fresh state.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from orchestrator.agent.compaction import Message, Summarise, fold_text, message_tokens, tokens

Row = tuple[int, Message]  # (message id, the message as the model reads it)


@dataclass
class WindowState:
    since: int = 0  # the conversation (its first message id) this window belongs to
    start: int = 0  # the first message shown whole (0: every one since ``since``)
    folds: list[tuple[int, str]] = field(default_factory=list)  # (first id, fold), oldest first
    archive: list[str] = field(default_factory=list)  # archival summaries, read at a rebase
    archived_before: int = -1  # the message the archive lines were read for (-1: never)
    folded: int = 0  # blocks folded so far: at most one summariser call each
    rebased: int = 0  # rebases so far: the only turns whose prefix changes

    @classmethod
    def load(cls, raw: dict[str, Any], since: int) -> WindowState:
        """The stored window of conversation ``since``; a fresh one for another (or for
        a stored value this version cannot read)."""
        try:
            state = cls(
                since=int(raw["since"]),
                start=int(raw["start"]),
                folds=[(int(first), str(text)) for first, text in raw["folds"]],
                archive=[str(line) for line in raw["archive"]],
                archived_before=int(raw["archived_before"]),
                folded=int(raw["folded"]),
                rebased=int(raw["rebased"]),
            )
        except (KeyError, TypeError, ValueError):
            return cls(since=since)
        return state if state.since == since else cls(since=since)

    def dump(self) -> dict[str, Any]:
        return asdict(self)

    def oldest(self, rows: list[Row], current: int | None) -> int:
        """The oldest message this turn shows (folded or whole): archival summaries are
        those of chunks ending before it. Stable between rebases: the first turn's
        message is the next turn's oldest row."""
        if self.folds:
            return self.folds[0][0]
        if rows:
            return rows[0][0]
        return self.start or current or 2**62


def block_of(limit: int) -> int:
    """Messages freed beyond the limit at a rebase: half the window, in whole turns (an
    owner's line and its answer); none for a window under four (it trims as before)."""
    return limit // 2 // 2 * 2


def folds_message(folds: list[tuple[int, str]]) -> str:
    return "\n\n".join(text for _first, text in folds)


def _size(rows: list[Row]) -> int:
    return sum(message_tokens(m) for _id, m in rows)


async def fit(
    state: WindowState,
    rows: list[Row],
    limit: int,
    budget: int,
    summarise: Summarise | None = None,
) -> tuple[list[Message], bool]:
    """The folds (one message, if any) and the messages shown whole, from ``rows`` (the
    chat's newest, oldest first, every one at or after ``state.start``; pass at least
    ``limit + 1`` when there are as many so an overflow is seen); True when the window was
    rebased (``state`` changed and should be stored)."""
    room = budget - budget // 10  # the folds get the rest
    rebased = len(rows) > limit or _size(rows) > room
    if rebased:
        rows = await _rebase(state, rows, limit, budget, room, summarise)
    shown: list[Message] = []
    if state.folds:
        shown.append({"role": "user", "content": folds_message(state.folds)})
    shown += [m for _id, m in rows]
    return shown, rebased


async def _rebase(
    state: WindowState,
    rows: list[Row],
    limit: int,
    budget: int,
    room: int,
    summarise: Summarise | None,
) -> list[Row]:
    block = block_of(limit)
    # Room for ``block`` more messages on both counts, so the next rebase is a block away
    # (near a limit counts as over: this turn's prefix changes anyway). The oldest beyond
    # the message limit are dropped; those beyond the token room too are folded.
    keep = rows[max(0, len(rows) - (limit - block)) :]
    average = _size(rows) / max(1, len(rows))
    target = min(max(room - int(block * average), room // 2), room * 3 // 4)
    folded: list[Row] = []
    while keep and _size(keep) > target:
        folded.append(keep.pop(0))
    cap = budget // 10
    if folded:
        text = await fold_text([m for _id, m in folded], cap, summarise)
        state.folds.append((folded[0][0], text))
        state.folded += 1
    while state.folds and tokens(folds_message(state.folds)) > cap:
        state.folds.pop(0)  # the oldest fold goes first; archival memory has the rest
    # Nothing left whole: the window starts after the newest message seen.
    state.start = keep[0][0] if keep else rows[-1][0] + 1
    state.rebased += 1
    return keep
