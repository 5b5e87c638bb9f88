"""Who Fetch is (COLLAR.md) and who it serves (ALPHA.md); the system prompt is built here."""

from identity.loader import Alpha, Collar, Identity, load_identity
from identity.pack import Agent, Pack, Route, load_pack
from identity.prompt import FrozenContext, PromptContext, build_system_prompt, session_note

__all__ = [
    "Agent",
    "Alpha",
    "Collar",
    "FrozenContext",
    "Identity",
    "Pack",
    "PromptContext",
    "Route",
    "build_system_prompt",
    "load_identity",
    "load_pack",
    "session_note",
]
