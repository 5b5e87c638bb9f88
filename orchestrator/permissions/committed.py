"""A repository's committed ``.fetch.yaml``: read at HEAD through the hardened host git
(orchestrator/boundary/gitops.py), never from the working tree (the sandbox writes that), and
only ever narrowing (layers.py). A key it may not set (or a bad value) is left out and
named in one log line; the rest of the file, the restrictions it adds, still applies."""

from __future__ import annotations

import logging
from typing import Any

import yaml

from core.errors import GitError
from orchestrator.boundary.gitops import Repo
from orchestrator.permissions.layers import Layer, read_committed_layer

log = logging.getLogger(__name__)
COMMITTED_FILE = ".fetch.yaml"
COMMITTED_MAX = 64 * 1024


def committed_values(repo: Repo, name: str, head: str) -> dict[str, Any]:
    """The layered values of ``.fetch.yaml`` at ``head``; {} when absent or unusable."""
    try:
        text = repo.run("show", f"{head}:{COMMITTED_FILE}", strip=False)
    except GitError:
        return {}
    try:
        values, problems = read_committed_layer(text[:COMMITTED_MAX], f"{name}:{COMMITTED_FILE}")
    except (ValueError, yaml.YAMLError) as err:  # the repo's file, not the owner's config
        log.warning("%s:%s at %s ignored: %s", name, COMMITTED_FILE, head[:7], err)
        return {}
    for problem in problems:
        log.warning("%s:%s at %s: %s; ignored", name, COMMITTED_FILE, head[:7], problem)
    return values


def committed_layer(values: dict[str, Any], name: str, head: str) -> Layer | None:
    if not values:
        return None
    return Layer(
        "repo (committed)", f"{name}:{COMMITTED_FILE} at {head[:7]}", values, narrow_only=True
    )
