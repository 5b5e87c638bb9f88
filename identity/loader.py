"""Markdown with YAML frontmatter, parsed into frozen models that reject unknown keys."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import frontmatter
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.errors import ConfigError


class _Front(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Collar(_Front):
    """Fetch's personality and standing directives."""

    name: str = Field(min_length=1, max_length=40)
    version: int = Field(ge=1)
    tone: str = "brief, friendly, precise"
    directives: tuple[str, ...] = ()
    body: str = ""


class Alpha(_Front):
    """The owner's profile."""

    name: str = Field(min_length=1, max_length=80)
    timezone: str = "UTC"
    languages: tuple[str, ...] = ()
    preferences: tuple[str, ...] = ()
    body: str = ""


@dataclass(frozen=True, slots=True)
class Identity:
    collar: Collar
    alpha: Alpha


M = TypeVar("M", bound=_Front)


def load_markdown(path: Path, model: type[M]) -> M:
    try:
        post = frontmatter.load(str(path))
    except FileNotFoundError as err:
        raise ConfigError(str(path), "", "file not found") from err
    except (yaml.YAMLError, ValueError) as err:
        raise ConfigError(str(path), "frontmatter", f"valid YAML between --- lines ({err})") \
            from err
    meta = dict(post.metadata)
    if "body" in meta:
        raise ConfigError(str(path), "body", "no 'body' key: the markdown text is the body")
    try:
        return model.model_validate({**meta, "body": post.content.strip()})
    except ValidationError as err:
        first = err.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        raise ConfigError(str(path), key, first["msg"]) from err


def load_identity(folder: Path) -> Identity:
    return Identity(
        collar=load_markdown(folder / "COLLAR.md", Collar),
        alpha=load_markdown(folder / "ALPHA.md", Alpha),
    )
