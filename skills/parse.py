"""One ``SKILL.md`` text -> a ``Skill``, or the ``SkillProblem`` that skips it.

Never raises: a skill file is data (the owner's, or a repository's, which is untrusted),
and a bad one must cost that one skill, not Fetch's start-up. The problem names the
file, the field and what is expected there, worded for a phone."""

from __future__ import annotations

from typing import Any

import yaml
from frontmatter.default_handlers import YAMLHandler
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from skills.model import (
    BODY_MAX,
    DESCRIPTION_MAX,
    FILE_MAX,
    Skill,
    SkillMeta,
    SkillProblem,
    Source,
)

# libyaml's safe loader when PyYAML was built with it: ~10x faster at start-up.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
KNOWN = "name, description, cli"
HINTS = {
    "name": "lowercase letters, digits and '-' (at most 64), e.g. python-testing",
    "description": f"one line (at most {DESCRIPTION_MAX} characters) saying when to use it",
    "cli": "true or false (hand it to the coding CLI on every run)",
    "body": f"at most {BODY_MAX} characters of instructions below the frontmatter",
}


def parse(raw: bytes, origin: str, source: Source) -> Skill | SkillProblem:
    if len(raw) > FILE_MAX:
        return SkillProblem(origin, "file", f"at most {FILE_MAX} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return SkillProblem(origin, "file", "UTF-8 text")
    if not text.lstrip().startswith("---"):
        return SkillProblem(
            origin, "frontmatter", "YAML between --- lines first (name, description)"
        )
    try:
        head, content = YAMLHandler().split(text.lstrip())
    except ValueError:
        return SkillProblem(origin, "frontmatter", "a closing --- line after the frontmatter")
    try:
        loaded = yaml.load(head, Loader=_LOADER)
    except yaml.YAMLError as err:
        return SkillProblem(origin, "frontmatter", f"valid YAML between --- lines ({_where(err)})")
    if not isinstance(loaded, dict):
        return SkillProblem(
            origin, "frontmatter", "valid YAML between --- lines: keys and values (name: ...)"
        )
    meta: dict[str, Any] = loaded
    if "body" in meta:
        return SkillProblem(origin, "body", "no 'body' key: the markdown text is the body")
    try:
        checked = SkillMeta.model_validate({**meta, "body": content.strip()})
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "frontmatter"
        return SkillProblem(origin, field, _expected(first, field))
    return Skill(
        name=checked.name,
        description=" ".join(checked.description.split()),
        body=checked.body,
        source=source,
        origin=origin,
        cli=checked.cli,
    )


def _where(err: yaml.YAMLError) -> str:
    """The YAML error in a few words, with its line in the file (the first --- is line 1)."""
    problem = str(getattr(err, "problem", None) or "not YAML")
    mark = getattr(err, "problem_mark", None)
    return f"{problem}, line {mark.line + 1}" if mark is not None else problem


def _expected(error: ErrorDetails, field: str) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        return f"no such key (known: {KNOWN})"
    if kind == "missing":
        return "required: " + HINTS.get(field, "a value")
    return HINTS.get(field, error["msg"])


__all__ = ["parse"]
