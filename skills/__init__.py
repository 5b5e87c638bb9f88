"""Skills: ``SKILL.md`` files (YAML frontmatter) discovered, validated and listed."""

from skills.loader import Skill, discover

__all__ = ["Skill", "discover"]
