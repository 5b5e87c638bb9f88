"""Settings in layers: global (FETCH_HOME config and environment) < repository < chat,
later overriding earlier, every value able to say where it came from.

Only the keys in ``LAYERED`` may be set per repository or per chat. A repository's
layer comes from FETCH_HOME (``repos: {name: {...}}`` in config.yaml, then
``FETCH_HOME/repos/<name>.yaml``) and from its committed ``.fetch.yaml`` (read at HEAD,
never from the working tree, which the sandbox writes). The committed file may only
NARROW: a value that would widen is ignored and the explanation says so.

How each key combines: ``permissions.mode`` (``normal`` < ``view``): a later layer
replaces it, a narrowing-only layer only towards ``view``; ``permissions.deny`` (action
patterns, e.g. ``path:secrets/**``) only ever adds; ``approvals.ttl_seconds``: a later
layer replaces it, a narrowing-only layer only lowers it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import yamlload

if TYPE_CHECKING:
    from orchestrator.config import Settings


def _mode(value: Any) -> str:
    if value not in ("normal", "view"):
        raise ValueError(f"{value!r}: expected normal or view")
    return str(value)


def _patterns(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v for v in value):
        raise ValueError("expected a list of action patterns (e.g. path:secrets/**)")
    return tuple(value)


def _ttl(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 30:
        raise ValueError(f"{value!r}: expected whole seconds, at least 30")
    return value


AUTONOMY = ("supervised", "semi", "autonomous")  # from the narrowest


def _autonomy(value: Any) -> str:
    if value not in AUTONOMY:
        raise ValueError(f"{value!r}: expected {', '.join(AUTONOMY)}")
    return str(value)


def _command(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 1000:
        raise ValueError("expected a shell command (run inside the kennel)")
    return value.strip()


LAYERED: dict[str, Callable[[Any], Any]] = {
    "permissions.mode": _mode,
    "permissions.deny": _patterns,
    "approvals.ttl_seconds": _ttl,
    "approvals.autonomy": _autonomy,
    "test_command": _command,
}
_MODE_RANK = {"normal": 0, "view": 1}


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{permissions: {mode: view}}`` -> ``{"permissions.mode": "view"}``, validated;
    a key that cannot be layered raises ValueError naming it."""
    out: dict[str, Any] = {}
    for name, value in tree.items():
        dotted = f"{prefix}{name}"
        if isinstance(value, Mapping) and dotted not in LAYERED:
            out.update(flatten(value, dotted + "."))
            continue
        check = LAYERED.get(dotted)
        if check is None:
            raise ValueError(
                f"{dotted} cannot be set per repository or chat (only {', '.join(LAYERED)})"
            )
        try:
            out[dotted] = check(value)
        except ValueError as err:
            raise ValueError(f"{dotted}: {err}") from None
    return out


def flatten_lenient(tree: Mapping[str, Any], prefix: str = "") -> tuple[dict[str, Any], list[str]]:
    """Like :func:`flatten`, but a key that cannot be layered, or a bad value, is left out
    and named (one line each) instead of failing the whole file: a repository's committed
    ``.fetch.yaml`` must not lose the restrictions it adds over one key it may not set."""
    out: dict[str, Any] = {}
    problems: list[str] = []
    for name, value in tree.items():
        dotted = f"{prefix}{name}"
        if isinstance(value, Mapping) and dotted not in LAYERED:
            values, more = flatten_lenient(value, dotted + ".")
            out.update(values)
            problems += more
            continue
        check = LAYERED.get(dotted)
        if check is None:
            problems.append(f"{dotted} cannot be set per repository (only {', '.join(LAYERED)})")
            continue
        try:
            out[dotted] = check(value)
        except ValueError as err:
            problems.append(f"{dotted}: {err}")
    return out, problems


@dataclass(frozen=True, slots=True)
class Layer:
    name: str  # global | repo | chat
    source: str  # the file and key, or the environment variable
    values: dict[str, Any]
    narrow_only: bool = False
    sources: dict[str, str] = field(default_factory=dict)  # per key, where it differs

    def source_of(self, key: str) -> str:
        return self.sources.get(key, self.source)


@dataclass(slots=True)
class Resolved:
    key: str
    value: Any
    source: str
    steps: list[str] = field(default_factory=list)  # one line per layer that spoke

    def explain(self) -> str:
        return "\n".join([f"{self.key} = {self.value!r}  (from {self.source})", *self.steps])


def _combine(key: str, current: Any, new: Any, narrow_only: bool) -> tuple[Any, str]:
    """The value after a layer spoke, and a note when it was not taken as given."""
    if key == "permissions.deny":
        return tuple(dict.fromkeys((*current, *new))), "added"
    if not narrow_only:
        return new, "overrides"
    if key == "test_command":  # it runs only inside the kennel: nothing to widen
        return new, "overrides (runs only in the kennel)"
    if key == "approvals.autonomy":
        wider = AUTONOMY.index(new) > AUTONOMY.index(current)
    else:
        wider = (
            (_MODE_RANK[new] < _MODE_RANK[current]) if key == "permissions.mode" else new > current
        )
    if wider:
        return current, "IGNORED: would widen (a repository may only narrow)"
    return new, "narrows"


# Keys a repository's committed cap binds whatever a later (chat) layer says: for these
# the narrowing-only layers are applied last.
CAPPED = ("approvals.autonomy",)


def resolve(key: str, layers: list[Layer]) -> Resolved:
    """The first layer must be the global one and hold every key."""
    if key in CAPPED:
        layers = [x for x in layers if not x.narrow_only] + [x for x in layers if x.narrow_only]
    first = layers[0]
    result = Resolved(
        key,
        first.values[key],
        first.source_of(key),
        [f"  {first.name}: {first.values[key]!r} ({first.source_of(key)})"],
    )
    for layer in layers[1:]:
        if key not in layer.values:
            continue
        value, note = _combine(key, result.value, layer.values[key], layer.narrow_only)
        result.steps.append(f"  {layer.name}: {layer.values[key]!r} ({layer.source}) -> {note}")
        if value != result.value:
            result.value, result.source = value, layer.source
    return result


def read_yaml_layer(text: str, where: str) -> dict[str, Any]:
    data = yamlload.safe_load(text) if text.strip() else {}
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a mapping of settings")
    return flatten(data)


def read_committed_layer(text: str, where: str) -> tuple[dict[str, Any], list[str]]:
    """A committed file's layer: the keys it may set, and one line per key it may not."""
    data = yamlload.safe_load(text) if text.strip() else {}
    if data is None:
        return {}, []
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a mapping of settings")
    return flatten_lenient(data)


def looks_like_group(chat: str) -> bool:
    """Group chats by their id: WhatsApp ``…@g.us``, Telegram negative ids."""
    return chat.endswith("@g.us") or chat.startswith("-")


def global_layer(
    settings: Settings, group: bool, source_of: Callable[[str], str] | None = None
) -> list[Layer]:
    """The global layer; ``source_of(dotted)`` names where a global value came from."""
    p = settings.permissions
    mode_key = "permissions.group_mode" if group else "permissions.mode"
    values = {
        "permissions.mode": p.group_mode if group else p.mode,
        "permissions.deny": p.deny,
        "approvals.ttl_seconds": settings.approvals.ttl_seconds,
        "approvals.autonomy": settings.approvals.autonomy,
        "test_command": "",
    }  # "": detected (orchestrator/task/testrun.py)
    name = source_of or (lambda dotted: "global config")
    sources = {
        k: f"{name(mode_key if k == 'permissions.mode' else k)}"
        f"{' (' + mode_key + ')' if k == 'permissions.mode' else ''}"
        for k in values
    }
    return [Layer("global", "global config", values, sources=sources)]


def chat_layer(settings: Settings, chat: str | None, config_source: str = "config") -> list[Layer]:
    if chat is None or chat not in settings.chats:
        return []
    return [Layer("chat", f"{config_source}: chats.{chat}", flatten(settings.chats[chat]))]


def home_repo_layers(
    home: Path, repo: str, configured: Mapping[str, Any], config_source: str
) -> list[Layer]:
    """The owner's own layers for ``repo``: config.yaml ``repos.<repo>``, then the file
    ``FETCH_HOME/repos/<repo>.yaml``."""
    layers: list[Layer] = []
    if repo in configured:
        layers.append(Layer("repo", f"{config_source}: repos.{repo}", flatten(configured[repo])))
    path = home / "repos" / f"{repo}.yaml"
    if path.is_file():
        layers.append(
            Layer("repo", str(path), read_yaml_layer(path.read_text(encoding="utf-8"), str(path)))
        )
    return layers
