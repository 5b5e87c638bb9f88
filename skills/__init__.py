"""Skills: ``SKILL.md`` files (YAML frontmatter + instructions) discovered, validated and
listed; a bad file is skipped with a problem, never fatal."""

from skills.catalog import Catalog, collect, discover, read_folder
from skills.model import BODY_MAX, DESCRIPTION_MAX, FILE_MAX, Skill, SkillProblem, Source
from skills.parse import parse

__all__ = [
    "BODY_MAX",
    "DESCRIPTION_MAX",
    "FILE_MAX",
    "Catalog",
    "Skill",
    "SkillProblem",
    "Source",
    "collect",
    "discover",
    "parse",
    "read_folder",
]
