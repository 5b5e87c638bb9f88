"""The pack: the agents Fetch hands coding tasks to (``agents/*.md``) and the rules that
pick one (``agents/ROUTING.md``).

An agent file's frontmatter says who it is (name, role, preferred harness and model, when
to use it); its markdown body is the instructions handed to the coding CLI. ROUTING.md's
frontmatter holds ordered rules (the first whose pattern matches the task wins) and the
default; its body explains them to humans. Routing is plain pattern matching, so Fetch
routes with no model configured.

Two folders: the shipped pack, then the owner's (``FETCH_HOME/agents``), where a file
with the same name replaces the shipped one. A bad shipped file is a bug and stops
start-up; a bad owner's file is skipped with a line that names file and key (the owner
fixes it from the phone's /identity), like a bad owner's skill.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import Field

from core.errors import ConfigError
from core.markdown import load_markdown
from core.settings import StrictSettings

log = logging.getLogger(__name__)

ROUTING = "ROUTING.md"
NAME = r"^[a-z0-9][a-z0-9-]{0,39}$"


class Agent(StrictSettings):
    """One pack member; ``body`` (the markdown text) is its instructions."""

    name: str = Field(pattern=NAME)
    role: str = Field(min_length=1, max_length=120)
    harness: str = Field(default="auto", pattern=r"^[a-z0-9][a-z0-9-]{0,39}$")
    model: str | None = Field(default=None, min_length=1, max_length=80)
    when: str = Field(default="", max_length=300)
    body: str = Field(default="", max_length=20_000)

    @property
    def instructions(self) -> str:
        return self.body


class Rule(StrictSettings):
    """``match``: keywords or phrases (whole words, any case) or ``/regex/`` (any case)."""

    match: tuple[str, ...] = Field(min_length=1)
    agent: str = Field(pattern=NAME)


class Routing(StrictSettings):
    default: str = Field(pattern=NAME)
    rules: tuple[Rule, ...] = ()
    body: str = ""


@dataclass(frozen=True, slots=True)
class Route:
    agent: Agent
    reason: str  # why this member: "rule 2 ('flaky')", "default", "asked for"


def _pattern(entry: str) -> re.Pattern[str]:
    if len(entry) > 2 and entry.startswith("/") and entry.endswith("/"):
        return re.compile(entry[1:-1], re.IGNORECASE)
    words = r"\s+".join(re.escape(w) for w in entry.split())
    return re.compile(rf"(?<!\w){words}(?!\w)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class _Compiled:
    patterns: tuple[tuple[re.Pattern[str], str], ...]  # (pattern, as written)
    agent: str


@dataclass(frozen=True, slots=True)
class Pack:
    agents: dict[str, Agent]  # in display order: shipped first, then the owner's
    routing: Routing
    source: dict[str, str] = field(default_factory=dict)  # name -> "shipped" | "yours"
    problems: tuple[str, ...] = ()  # owner's files skipped, each naming file and key
    _rules: tuple[_Compiled, ...] = ()

    @classmethod
    def empty(cls) -> Pack:
        """No pack: every task goes to the default harness with no instructions."""
        coder = Agent(name="coder", role="writes code")
        return cls({"coder": coder}, Routing(default="coder"), {"coder": "shipped"})

    def get(self, name: str) -> Agent | None:
        return self.agents.get(name)

    def names(self) -> list[str]:
        return list(self.agents)

    @property
    def default(self) -> Agent:
        return self.agents[self.routing.default]

    def route(self, task: str) -> Route:
        """The first rule whose pattern occurs in ``task``, else the default."""
        for number, rule in enumerate(self._rules, 1):
            for pattern, written in rule.patterns:
                if pattern.search(task):
                    return Route(self.agents[rule.agent], f"rule {number} ({written!r})")
        return Route(self.default, "default")


def _compile(path: Path, routing: Routing, agents: dict[str, Agent]) -> tuple[_Compiled, ...]:
    if routing.default not in agents:
        raise ConfigError(str(path), "default", f"one of the pack: {', '.join(agents)}")
    compiled: list[_Compiled] = []
    for i, rule in enumerate(routing.rules):
        if rule.agent not in agents:
            raise ConfigError(
                str(path), f"rules.{i}.agent", f"one of the pack: {', '.join(agents)}"
            )
        patterns = []
        for j, entry in enumerate(rule.match):
            if not entry.strip():
                raise ConfigError(str(path), f"rules.{i}.match.{j}", "a non-empty pattern")
            try:
                patterns.append((_pattern(entry.strip()), entry.strip()))
            except re.error as err:
                raise ConfigError(
                    str(path), f"rules.{i}.match.{j}", f"a valid /regex/ ({err})"
                ) from err
        compiled.append(_Compiled(tuple(patterns), rule.agent))
    return tuple(compiled)


M = TypeVar("M", bound=StrictSettings)


def _load(path: Path, model: type[M]) -> M:
    """``load_markdown``, its two commonest complaints put in the owner's words."""
    try:
        return load_markdown(path, model)
    except ConfigError as err:
        leaf = err.key.rsplit(".", 1)[-1]
        if err.expected == "Extra inputs are not permitted":
            known = ", ".join(f for f in model.model_fields if f != "body")
            raise ConfigError(err.source, err.key, f"no such key (known: {known})") from err
        if err.expected == "Field required" and leaf in model.model_fields:
            raise ConfigError(err.source, err.key, "required") from err
        raise


def load_agent(path: Path) -> Agent:
    agent = _load(path, Agent)
    if agent.name != path.stem:
        raise ConfigError(str(path), "name", f"{path.stem!r}, the file's name")
    return agent


def _agents(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.md") if p.name != ROUTING)


def _skipped(path: Path, err: ConfigError) -> str:
    # Phone-sized: the file's name, not the home's absolute path.
    where = f"{path.name}: {err.key}" if err.key else path.name
    return f"skipped agents/{where}: {err.expected}"


def load_pack(shipped: Path, own: Path | None = None) -> Pack:
    """The shipped pack (strict) overlaid with the owner's (bad files skipped, said why)."""
    agents = {a.name: a for a in map(load_agent, _agents(shipped))}
    source = dict.fromkeys(agents, "shipped")
    routing_path = shipped / ROUTING
    routing = _load(routing_path, Routing)
    rules = _compile(routing_path, routing, agents)
    problems: list[str] = []
    if own is not None:
        for path in _agents(own):
            try:
                agent = load_agent(path)
            except ConfigError as err:
                problems.append(_skipped(path, err))
                continue
            agents[agent.name] = agent
            source[agent.name] = "yours"
        mine = own / ROUTING
        if mine.is_file():
            try:
                routing = _load(mine, Routing)
                rules = _compile(mine, routing, agents)
            except ConfigError as err:
                problems.append(_skipped(mine, err) + "; the shipped routing applies")
                routing = load_markdown(routing_path, Routing)
                rules = _compile(routing_path, routing, agents)
    for line in problems:
        log.warning("pack: %s", line)
    return Pack(agents, routing, source, tuple(problems), rules)


__all__ = ["ROUTING", "Agent", "Pack", "Route", "Routing", "Rule", "load_agent", "load_pack"]
