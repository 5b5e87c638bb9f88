"""What memory hands out: items (either layer) and search hits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

MemoryKind = Literal["fact", "preference", "learning"]
KINDS: tuple[MemoryKind, ...] = ("fact", "preference", "learning")
ITEM_COLUMNS = (
    "id, kind, content, tags, source, thread, first_msg, last_msg, started, ended,"
    " path, created, updated, subject, chat"
)


@dataclass(frozen=True, slots=True)
class Item:
    id: int
    kind: str  # fact | preference | learning | archive
    content: str  # the memory, or an archive chunk's summary
    tags: tuple[str, ...]
    source: str
    thread: str | None
    first_msg: int | None
    last_msg: int | None
    started: float | None
    ended: float | None
    path: str | None
    created: float
    updated: float
    subject: str = "owner"  # whose memory (orchestrator/permissions/)
    chat: str | None = None  # a kennel's memory: the chat ("channel:chat") of its task

    @property
    def layer(self) -> str:
        return "archive" if self.kind == "archive" else "memory"

    @classmethod
    def from_row(cls, row: Any) -> Item:
        return cls(
            int(row[0]),
            str(row[1]),
            str(row[2]),
            tuple(str(row[3]).split()),
            str(row[4]),
            row[5],
            row[6],
            row[7],
            row[8],
            row[9],
            row[10],
            float(row[11]),
            float(row[12]),
            str(row[13]),
            row[14],
        )


@dataclass(frozen=True, slots=True)
class Hit:
    item: Item
    score: float
    vector: float  # cosine similarity (0 when not matched by vector)
    keyword: float  # bm25, normalised to the best keyword hit of this search

    def as_dict(self) -> dict[str, Any]:
        i = self.item
        out: dict[str, Any] = {
            "id": i.id,
            "source": i.layer,
            "kind": i.kind,
            "score": round(self.score, 3),
        }
        if i.kind == "archive":
            out |= {
                "summary": i.content,
                "thread": i.thread,
                "time_range": [i.started, i.ended],
                "read": f"memory_read({i.id}) returns the full transcript",
            }
        else:
            out |= {"content": i.content, "tags": list(i.tags), "updated": i.updated}
        return out


@dataclass(frozen=True, slots=True)
class WriteResult:
    item: Item
    merged: bool  # True: an existing near-duplicate was updated instead of adding one
    similarity: float = 0.0


@dataclass(slots=True)
class Progress:
    """Background re-embedding, shown in /status."""

    total: int = 0
    done: int = 0
    error: str | None = None
    running: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
