"""Who Fetch is (COLLAR.md) and who it serves (ALPHA.md); the system prompt is built here."""

from identity.loader import Alpha, Collar, Identity, load_identity
from identity.prompt import FrozenContext, PromptContext, build_system_prompt, session_note

__all__ = [
    "Alpha",
    "Collar",
    "FrozenContext",
    "Identity",
    "PromptContext",
    "build_system_prompt",
    "load_identity",
    "session_note",
]
