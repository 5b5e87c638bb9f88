"""Settings: one YAML file plus environment overrides, validated once at start.

Precedence: embedded defaults < YAML file < friendly env vars (``FETCH_HOME``...) <
generic ``FETCH__SECTION__KEY=value`` overrides. Any bad value stops start-up with a
``ConfigError`` that names the file, the dotted key and what was expected.

Each subsystem defines its own section next to its code (``kennel/settings.py``,
``harnesses/settings.py``, ``channels/*_settings.py``, all on ``core.settings``); this
module composes them with the application's own sections.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, PrivateAttr, ValidationError, field_validator, model_validator

from channels.http_settings import HttpSettings
from channels.telegram_settings import TelegramSettings
from channels.terminal_settings import TerminalSettings
from channels.webchat_settings import WebChatSettings
from channels.webhook_settings import WebhookSettings
from channels.whatsapp_settings import WhatsAppSettings
from core import yamlload
from core.errors import ConfigError
from core.settings import StrictSettings
from harnesses.settings import HarnessSettings
from kennel.settings import KennelSettings, ProviderSettings, default_providers
from orchestrator.blocks.settings import BlockSettings
from orchestrator.costs.settings import BudgetSettings, Price
from orchestrator.hearing.settings import TranscriptionSettings
from orchestrator.improve.settings import ImproveSettings
from orchestrator.mcphost.settings import McpSettings
from orchestrator.permissions.settings import MEMBER_NAME, MemberSettings, PermissionSettings
from orchestrator.providers.settings import ProviderEntry, check_chain

ALLOW_ENTRY = re.compile(
    r"^(?:whatsapp:\d{6,15}|telegram:-?\d{1,20}|webhook:[A-Za-z0-9_.-]{1,64}"
    r"|terminal:[A-Za-z0-9_.-]{1,64})$"
)


class ModelSettings(StrictSettings):
    """The orchestrator model: any OpenAI-compatible endpoint. ``base_url`` unset = no model."""

    base_url: str | None = None
    api_key: str | None = None
    name: str = "gpt-4o-mini"
    max_iterations: int = Field(25, ge=1, le=25)
    timeout_seconds: float = Field(60.0, gt=0)
    max_retries: int = Field(2, ge=0, le=10)
    # Each model turn sees at most this many recent messages of the chat, and one request
    # stays under this many tokens (~4 characters each): older turns are dropped and folded
    # in blocks (orchestrator/agent/window.py), so most requests extend the previous one.
    history_messages: int = Field(30, ge=0, le=200)
    context_tokens: int = Field(24_000, ge=1_000, le=2_000_000)
    # A chain of endpoints tried in order (orchestrator/providers/): instead of base_url.
    # max_retries is then how often one endpoint is waited for on 429 before the next.
    providers: tuple[ProviderEntry, ...] = ()
    max_attempts: int = Field(6, ge=1, le=50)  # requests per model call, all endpoints
    total_seconds: float = Field(180.0, gt=0, le=3600)  # and the time they may take
    # base_url's one endpoint takes image content (model.providers: per entry, images).
    images: bool = False

    @model_validator(mode="after")
    def _one_chain(self) -> ModelSettings:
        check_chain(self.providers, self.base_url)
        return self

    @property
    def configured(self) -> bool:
        return bool(self.base_url or self.providers)


class ApprovalSettings(StrictSettings):
    ttl_seconds: int = Field(3600, ge=30)
    # supervised: every diff is asked; semi: committed unasked when the tests pass and no
    # risky path is touched; autonomous: committed on a branch fetch/task-<id> that the
    # owner merges or drops with one word (orchestrator/task/autonomy.py). Layered per
    # repository and chat; a committed .fetch.yaml may only lower it.
    autonomy: Literal["supervised", "semi", "autonomous"] = "supervised"
    # A change touching more files than this is risky (always a branch, or asked).
    risky_files: int = Field(10, ge=1)
    # Tests before approval (orchestrator/task/testrun.py): run in the kennel, bounded.
    run_tests: bool = True
    test_timeout_seconds: float = Field(300.0, gt=0, le=3600)


class GatewaySettings(StrictSettings):
    max_message_chars: int = Field(16_000, ge=100, le=1_000_000)
    rate_per_minute: float = Field(30.0, gt=0)
    trigger: str = "@fetch"


class SchedulerSettings(StrictSettings):
    """Reminders and recurring jobs (see orchestrator/scheduler/)."""

    enabled: bool = True
    tick_seconds: float = Field(1.0, gt=0, le=60)
    lease_seconds: float = Field(300.0, ge=5)
    max_attempts: int = Field(3, ge=1, le=20)
    retry_base_seconds: float = Field(30.0, ge=0)
    ntfy_url: str | None = None  # e.g. https://ntfy.sh/my-topic: push for fired jobs


class StoreSettings(StrictSettings):
    """Where the store lives (orchestrator/store/): '' is SQLite in the home (fetch.db,
    the default); ``postgresql://user:pass@host:5432/db`` runs every table family on
    that PostgreSQL server (it needs pgvector)."""

    url: str = ""

    @field_validator("url")
    @classmethod
    def _postgres_only(cls, value: str) -> str:
        value = value.strip()
        if value and not value.startswith(("postgresql://", "postgres://")):
            raise ValueError(
                "'' (SQLite in the home) or a PostgreSQL URL: postgresql://user@host:5432/db"
            )
        return value


class MemorySettings(StrictSettings):
    """Memory (see orchestrator/memory/): embeddings and summaries via any
    OpenAI-compatible endpoint; without one, search is keyword-only (FTS5)."""

    enabled: bool = True
    embedding_base_url: str | None = None
    embedding_api_key: str | None = None
    embedding_model: str = "text-embedding-3-small"
    embedding_dimensions: int = Field(1536, ge=8, le=8192)
    summary_model: str | None = None  # default: the orchestrator model
    dedup_threshold: float = Field(0.95, gt=0, le=1)
    archive_tokens: int = Field(25_000, ge=500)
    vector_weight: float = Field(0.7, ge=0, le=1)
    min_score: float = Field(0.1, ge=0, le=1)


class Settings(StrictSettings):
    home: Path = Path("~/.fetch")
    workspace: Path | None = None  # default: {home}/workspace with a demo repo
    owner: str = "owner"
    # Senders besides the owner who may use Fetch, as "channel:id" (e.g. whatsapp:4915112345,
    # telegram:123456). Empty = the owner only. No wildcards, ever.
    allowlist: tuple[str, ...] = ()
    # Named people with a profile (orchestrator/permissions/): {alice: {ids: [...],
    # profile: collaborator, repos: [myapp]}}. Their ids join the allowlist (the gate);
    # plain allowlist entries get ``permissions.allowlist_profile``.
    members: dict[str, MemberSettings] = Field(default_factory=dict)
    permissions: PermissionSettings = PermissionSettings()
    # Settings per repository and per chat ("channel:chat"): only the keys of
    # orchestrator/permissions/layers.py, later layers overriding earlier ones.
    repos: dict[str, dict[str, Any]] = Field(default_factory=dict)
    chats: dict[str, dict[str, Any]] = Field(default_factory=dict)
    model: ModelSettings = ModelSettings()
    # Voice notes -> text (orchestrator/hearing/): OpenAI-compatible /audio/transcriptions.
    transcription: TranscriptionSettings = TranscriptionSettings()
    providers: dict[str, ProviderSettings] = Field(default_factory=default_providers)
    harness: HarnessSettings = HarnessSettings()
    kennel: KennelSettings = KennelSettings()
    approvals: ApprovalSettings = ApprovalSettings()
    gateway: GatewaySettings = GatewaySettings()
    terminal: TerminalSettings = TerminalSettings()
    whatsapp: WhatsAppSettings = WhatsAppSettings()
    telegram: TelegramSettings = TelegramSettings()
    webhook: WebhookSettings = WebhookSettings()
    webchat: WebChatSettings = WebChatSettings()
    http: HttpSettings = HttpSettings()
    scheduler: SchedulerSettings = SchedulerSettings()
    store: StoreSettings = StoreSettings()  # SQLite (default) or PostgreSQL (store.url)
    memory: MemorySettings = MemorySettings()
    blocks: BlockSettings = BlockSettings()  # memory blocks' size limits (orchestrator/blocks/)
    improve: ImproveSettings = ImproveSettings()  # /improve /prs (orchestrator/improve/)
    mcp: McpSettings = McpSettings()  # the owner's MCP servers (orchestrator/mcphost/)
    # The owner's timezone (IANA name): reminders and cron run in it, DST-correct.
    timezone: str = "UTC"
    # What model calls cost (orchestrator/costs/): USD per 1M tokens over the shipped
    # defaults (data/prices.yaml), and spend limits.
    prices: dict[str, Price] = Field(default_factory=dict)
    budgets: BudgetSettings = BudgetSettings()
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "WARNING"
    # Where each value came from, for the checks made after loading (startcheck.py):
    # the dotted keys the environment set -> "environment NAME", and the file read.
    _env_sources: dict[str, str] = PrivateAttr(default_factory=dict)
    _file: str = PrivateAttr(default="")
    _file_tree: dict[str, Any] = PrivateAttr(default_factory=dict)

    def source_of(self, dotted: str) -> str:
        """Who to blame for ``dotted``: the environment variable that set it, else the
        config file, never a file that was not read."""
        return _blame(dotted.split("."), self._env_sources, self._file_tree, self._file)

    @field_validator("allowlist")
    @classmethod
    def _allowlist_entries(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            if any(c in entry for c in "*?[]"):
                raise ValueError(f"{entry!r}: wildcards are refused; list each sender")
            if not ALLOW_ENTRY.match(entry):
                raise ValueError(
                    f"{entry!r} is not 'channel:id' (whatsapp:<digits>, telegram:<user id>,"
                    " webhook:<name>, terminal:<name>)"
                )
        return value

    @field_validator("members")
    @classmethod
    def _member_names(cls, value: dict[str, MemberSettings]) -> dict[str, MemberSettings]:
        for name in value:
            if not MEMBER_NAME.match(name) or name == "owner":
                raise ValueError(
                    f"{name!r}: a member name is lower case letters, digits, "
                    "- or _ (and not 'owner')"
                )
        return value

    @field_validator("repos", "chats")
    @classmethod
    def _layers(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        from orchestrator.permissions.layers import flatten

        for name, tree in value.items():
            try:
                flatten(tree)
            except ValueError as err:
                raise ValueError(f"{name}: {err}") from None
        return value

    @model_validator(mode="after")
    def _members_pass_the_gate(self) -> Settings:
        seen: dict[str, str] = {}
        for name, member in self.members.items():
            for sender in member.ids:
                if sender in seen:
                    raise ValueError(f"{sender} belongs to both {seen[sender]} and {name}")
                seen[sender] = name
        # The gate (and the adapters' read receipts) know one list of who may write.
        extra = tuple(s for s in seen if s not in self.allowlist)
        if extra:
            object.__setattr__(self, "allowlist", (*self.allowlist, *extra))
        return self

    @field_validator("timezone")
    @classmethod
    def _known_timezone(cls, value: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{value!r} is not an IANA timezone (e.g. Europe/Berlin)") from None
        return value

    @model_validator(mode="after")
    def _channels_have_owners(self) -> Settings:
        wa, tg, hook = self.whatsapp, self.telegram, self.webhook
        if wa.enabled and not (wa.owner and re.fullmatch(r"\d{6,15}", wa.owner)):
            raise ValueError(
                "whatsapp.owner must be the owner's number with + and the country"
                " code (e.g. +49 151 12345678) when WhatsApp is enabled"
            )
        if tg.enabled and not (
            tg.token and tg.owner_id and re.fullmatch(r"-?\d{1,20}", tg.owner_id)
        ):
            raise ValueError(
                "telegram.token and telegram.owner_id (numeric) are required "
                "when Telegram is enabled"
            )
        if (
            tg.enabled
            and tg.mode == "webhook"
            and not (
                tg.webhook_secret
                and re.fullmatch(r"[A-Za-z0-9_-]{16,256}", tg.webhook_secret)
                and tg.webhook_url
            )
        ):
            raise ValueError(
                "telegram webhook mode needs telegram.webhook_url and a "
                "telegram.webhook_secret of 16+ characters from A-Z a-z 0-9 _ -"
            )
        if hook.enabled and not (hook.secret and len(hook.secret) >= 16):
            raise ValueError(
                "webhook.secret (16+ characters) is required when the webhook channel is enabled"
            )
        return self

    @property
    def home_dir(self) -> Path:
        return self.home.expanduser().resolve()

    @property
    def workspace_dir(self) -> Path:
        ws = self.workspace if self.workspace is not None else self.home / "workspace"
        return ws.expanduser().resolve()

    @property
    def db_path(self) -> Path:
        return self.home_dir / "fetch.db"


# Friendly names people already know; each maps onto a dotted settings key.
_ENV_KEYS: dict[str, str] = {
    "FETCH_HOME": "home",
    "FETCH_STORE_URL": "store.url",
    "FETCH_WORKSPACE": "workspace",
    "FETCH_OWNER": "owner",
    "FETCH_MODEL_BASE_URL": "model.base_url",
    "FETCH_MODEL_API_KEY": "model.api_key",
    "FETCH_MODEL": "model.name",
    "FETCH_TRANSCRIPTION_BASE_URL": "transcription.base_url",
    "FETCH_TRANSCRIPTION_API_KEY": "transcription.api_key",
    "FETCH_HARNESS": "harness.default",
    "FETCH_KENNEL": "kennel.backend",
    "FETCH_KENNEL_IMAGE": "kennel.docker.image",
    "FETCH_RUN_DIR": "kennel.docker.run_dir",
    "FETCH_DOCKER_HOST": "kennel.docker.host",
    "FETCH_DOCKER_CERT_PATH": "kennel.docker.cert_path",
    "FETCH_LOG_LEVEL": "log_level",
    "FETCH_TIMEZONE": "timezone",
    "FETCH_EMBEDDING_BASE_URL": "memory.embedding_base_url",
    "FETCH_EMBEDDING_API_KEY": "memory.embedding_api_key",
    "FETCH_NTFY_URL": "scheduler.ntfy_url",
    # GITHUB_TOKEN first: FETCH_GITHUB_TOKEN, read after it, wins when both are set.
    "GITHUB_TOKEN": "improve.token",
    "FETCH_GITHUB_TOKEN": "improve.token",
    "ANTHROPIC_API_KEY": "providers.anthropic.api_key",
    "CLAUDE_CODE_OAUTH_TOKEN": "providers.anthropic.oauth_token",
    "ANTHROPIC_BASE_URL": "providers.anthropic.base_url",
    "OPENAI_API_KEY": "providers.openai.api_key",
    "GEMINI_API_KEY": "providers.gemini.api_key",
    "FETCH_WHATSAPP_OWNER": "whatsapp.owner",
    "TELEGRAM_BOT_TOKEN": "telegram.token",
    "FETCH_TELEGRAM_WEBHOOK_URL": "telegram.webhook_url",
    "FETCH_TELEGRAM_OWNER_ID": "telegram.owner_id",
    "FETCH_WEBHOOK_SECRET": "webhook.secret",
}


def _set_dotted(tree: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = tree
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


def _env_value(raw: str) -> Any:
    """A list or mapping is written as YAML (``[a, b]``); a scalar stays the text it is and
    the field's own type converts it ("3" to 3, "false" to False). YAML would turn ``off``
    or ``no`` into False even where the field wants that word (network_isolation: off)."""
    try:
        parsed = yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw
    if isinstance(parsed, list | dict) or (parsed is None and raw.strip() in {"null", "~"}):
        return parsed
    return raw


def _env_overrides(env: Mapping[str, str]) -> list[tuple[str, str, Any]]:
    found: list[tuple[str, str, Any]] = []
    for name, dotted in _ENV_KEYS.items():
        if env.get(name):
            found.append((name, dotted, env[name]))
    for name, raw in env.items():
        if name.startswith("FETCH__") and raw != "":
            dotted = ".".join(p.lower() for p in name[len("FETCH__") :].split("__") if p)
            found.append((name, dotted, _env_value(raw)))
    return found


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yamlload.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else ""
        # One line: the problem, not PyYAML's multi-line excerpt with a caret under it.
        problem = getattr(err, "problem", None) or str(err).strip().splitlines()[0]
        raise ConfigError(str(path), where, f"is not valid YAML ({problem})") from err
    except OSError as err:
        raise ConfigError(str(path), "", f"cannot be read ({err.strerror})") from err
    except UnicodeDecodeError as err:
        raise ConfigError(
            str(path),
            "",
            f"is not a text file (byte {err.start} is not UTF-8); a YAML config file is text",
        ) from err
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(str(path), "(top level)", "a mapping of settings (key: value)")
    return data


def default_config_path(env: Mapping[str, str]) -> Path:
    if env.get("FETCH_CONFIG"):
        return Path(env["FETCH_CONFIG"]).expanduser()
    home = Path(env.get("FETCH_HOME") or "~/.fetch").expanduser()
    return home / "config.yaml"


def _has(tree: Any, parts: list[str]) -> bool:
    for part in parts:
        if not isinstance(tree, dict) or part not in tree:
            return False
        tree = tree[part]
    return True


def _blame(parts: list[str], origin: dict[str, str], file_tree: dict[str, Any], file: str) -> str:
    """The source of a bad value at ``parts``: the environment variable that set it or a
    parent of it; else, when the file does not hold it, the variables that set keys under
    it (a section's own check: FETCH__WHATSAPP__ENABLED without an owner); else the file.
    A file that does not exist is never named as the culprit."""
    for i in range(len(parts), 0, -1):
        hit = origin.get(".".join(parts[:i]))
        if hit:
            return hit
    prefix = ".".join(parts)
    under = sorted(
        {name for key, name in origin.items() if not prefix or key.startswith(prefix + ".")}
    )
    if under and not (file and _has(file_tree, parts)):
        return ", ".join(under)
    return file or "the settings (no config file was read; defaults and environment)"


def _key_of(message: str) -> list[str]:
    """A whole-settings check names its key in its message (``whatsapp.owner must ...``):
    that key's section is what to blame."""
    for match in re.finditer(r"\b([a-z_]+)\.[a-z_]+", message):
        if match.group(1) in Settings.model_fields:
            return [match.group(1)]
    return []


def load_settings(path: Path | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Build validated ``Settings`` or raise ``ConfigError`` naming file, key and expectation."""
    env = os.environ if env is None else env
    path = path if path is not None else default_config_path(env)
    explicit = "FETCH_CONFIG" in env or path != default_config_path(env)
    tree: dict[str, Any] = {}
    file = ""
    if path.exists():
        tree, file = _read_yaml(path), str(path)
    elif explicit:
        raise ConfigError(str(path), "", "file not found")
    file_tree = copy.deepcopy(tree)  # what the file itself said, before the environment
    origin: dict[str, str] = {}
    for name, dotted, value in _env_overrides(env):
        _set_dotted(tree, dotted, value)
        origin[dotted] = f"environment {name}"
    # A provider given only a key (ANTHROPIC_API_KEY, or YAML) keeps its default endpoint.
    providers = tree.setdefault("providers", {})
    if isinstance(providers, dict):
        for name, default in default_providers().items():
            entry = providers.setdefault(name, {})
            if isinstance(entry, dict):
                entry.setdefault("base_url", default.base_url)
    try:
        settings = Settings.model_validate(tree)
    except ValidationError as err:
        first = err.errors()[0]
        parts = [str(p) for p in first["loc"]]
        message = str(first["msg"]).removeprefix("Value error, ")
        source = _blame(parts or _key_of(message), origin, file_tree, file)
        dotted = ".".join(parts) or "(settings)"
        got = first.get("input")
        # A key or secret is never echoed into a log or the terminal, even a wrong one.
        secret = re.search(r"key|secret|token|password", dotted, re.IGNORECASE)
        whole = isinstance(got, dict) or not parts
        shown = "" if whole or secret else f" (got {got!r})"
        raise ConfigError(source, dotted, f"{message}{shown}") from err
    settings._env_sources, settings._file, settings._file_tree = origin, file, file_tree
    return settings
