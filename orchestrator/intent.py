"""Intent by patterns, with a confidence score; the model is asked only when unsure."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class Intent(StrEnum):
    CONVERSATION = "conversation"
    WORKSPACE = "workspace"
    TASK = "task"
    CLARIFY = "clarify"


@dataclass(frozen=True, slots=True)
class Classification:
    intent: Intent
    confidence: float
    reason: str

    @property
    def sure(self) -> bool:
        return self.confidence >= SURE


SURE = 0.7

_POLITE = (
    r"^(?:(?:hey|hi|ok|okay|so|now)[,!]?\s+)?"
    r"(?:please\s+|pls\s+|can you\s+|could you\s+|would you\s+|go\s+(?:and\s+)?)?"
)
_TASK_VERBS = (
    "fix|add|implement|write|refactor|rename|update|remove|delete|create|change|make|bump|"
    "improve|document|test|debug|optimi[sz]e|clean up|cleanup|migrate|port|convert|replace|"
    "move|extract|split|merge|upgrade|downgrade|format|lint|translate|rewrite|edit|correct|"
    "tweak|adjust|patch|build|set up|setup|configure|wire|hook up|support|handle|speed up"
)
TASK = re.compile(_POLITE + r"(?:" + _TASK_VERBS + r")\b", re.IGNORECASE)
CODE_WORDS = re.compile(
    r"\b(bug|test|tests|function|class|method|file|readme|typo|error|exception|endpoint|"
    r"module|api|code|repo|commit|lint|build|crash|flaky|\w+\.(?:py|js|ts|md|go|rs|java|"
    r"rb|json|ya?ml|toml|txt|html|css|sh))\b",
    re.IGNORECASE,
)
WORKSPACE = re.compile(
    r"^(?:(?:list|show)\s+(?:my\s+|the\s+)?(?:repos|repositories|projects|workspace)|"
    r"(?:which|what)\s+(?:repos|repositories|projects)|"
    r"(?:use|switch to|work on|open|select)\s+(?:the\s+)?(?:repo\s+|project\s+)?[\w.-]+$|"
    r"(?:my\s+)?(?:repos|repositories|projects|workspace)\??$)",
    re.IGNORECASE,
)
CONVERSATION = re.compile(
    r"^(?:hi|hello|hey|yo|hiya|good (?:morning|afternoon|evening|night)|thanks|thank you|"
    r"thx|ty|cheers|ok|okay|cool|nice|great|bye|see you|who are you|what are you|"
    r"how are you|what can you do|are you there|ping)\b[\s!.?]*$",
    re.IGNORECASE,
)
QUESTION = re.compile(
    r"^(?:what|why|how|when|where|who|is|are|does|do|can|should)\b", re.IGNORECASE
)


def classify(text: str) -> Classification:
    t = text.strip()
    if CONVERSATION.match(t):
        return Classification(Intent.CONVERSATION, 0.95, "greeting or small talk")
    if WORKSPACE.match(t):
        return Classification(Intent.WORKSPACE, 0.9, "workspace words")
    if TASK.match(t):
        strength = 0.9 if CODE_WORDS.search(t) else 0.75
        return Classification(Intent.TASK, strength, "starts with a coding verb")
    if QUESTION.match(t):
        if CODE_WORDS.search(t):
            return Classification(Intent.CLARIFY, 0.5, "a question about code")
        return Classification(Intent.CONVERSATION, 0.6, "a question")
    if CODE_WORDS.search(t):
        return Classification(Intent.TASK, 0.55, "mentions code but no verb")
    return Classification(Intent.CLARIFY, 0.3, "no pattern matched")
