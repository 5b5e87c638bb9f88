"""``fetch config explain KEY [--repo NAME] [--chat CHANNEL:CHAT]``: a layered value and
where each layer's part of it came from (file and key, environment variable, default,
or a repository's committed ``.fetch.yaml``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.errors import GitError
from orchestrator.config import Settings, _env_overrides, _read_yaml
from orchestrator.permissions.committed import committed_layer, committed_values
from orchestrator.permissions.layers import (
    LAYERED,
    Layer,
    chat_layer,
    global_layer,
    home_repo_layers,
    looks_like_group,
    resolve,
)


def _global_source(path: Path, env: Mapping[str, str]) -> Any:
    overrides = {dotted: name for name, dotted, _ in _env_overrides(env)}
    tree = _read_yaml(path) if path.is_file() else {}

    def source_of(dotted: str) -> str:
        if dotted in overrides:
            return f"environment {overrides[dotted]}"
        node: Any = tree
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return "default"
            node = node[part]
        return f"{path}: {dotted}"

    return source_of


def explain(
    settings: Settings,
    key: str,
    *,
    config_path: Path,
    env: Mapping[str, str],
    repo: str | None = None,
    chat: str | None = None,
) -> str:
    if key not in LAYERED:
        return f"{key} is not a layered setting; layered: {', '.join(LAYERED)}"
    group = chat is not None and looks_like_group(chat.partition(":")[2])
    layers: list[Layer] = global_layer(settings, group, _global_source(config_path, env))
    if repo is not None:
        layers += home_repo_layers(settings.home_dir, repo, settings.repos, str(config_path))
        from orchestrator.workspace import Workspace

        try:
            git = Workspace(settings.workspace_dir).repo(repo)
            head = git.head()
        except (GitError, KeyError, ValueError) as err:
            layers.append(Layer("repo (committed)", f"{repo}: unreadable ({err})", {}))
        else:
            committed = committed_layer(committed_values(git, repo, head), repo, head)
            if committed is not None:
                layers.append(committed)
    layers += chat_layer(settings, chat, str(config_path))
    return resolve(key, layers).explain()
