"""Markdown with YAML frontmatter, parsed into a strict settings model (identity's
COLLAR.md and ALPHA.md): a bad file names file, key and expectation, like a bad config.
(Skills parse their own SKILL.md in skills/parse.py: a bad skill is skipped, not fatal.)"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import frontmatter
import yaml
from pydantic import ValidationError

from core.errors import ConfigError
from core.settings import StrictSettings

M = TypeVar("M", bound=StrictSettings)


def load_markdown(path: Path, model: type[M]) -> M:
    """The frontmatter as ``model``'s fields and the markdown text as its ``body``."""
    try:
        post = frontmatter.load(str(path))
    except FileNotFoundError as err:
        raise ConfigError(str(path), "", "file not found") from err
    except (yaml.YAMLError, ValueError) as err:
        raise ConfigError(
            str(path), "frontmatter", f"valid YAML between --- lines ({err})"
        ) from err
    meta = dict(post.metadata)
    if "body" in meta:
        raise ConfigError(str(path), "body", "no 'body' key: the markdown text is the body")
    try:
        return model.model_validate({**meta, "body": post.content.strip()})
    except ValidationError as err:
        first = err.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        raise ConfigError(str(path), key, first["msg"]) from err


__all__ = ["load_markdown"]
