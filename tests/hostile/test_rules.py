"""The small rules the hostile tests lean on, one case each."""

from __future__ import annotations

import pytest

from orchestrator.boundary.gitconfig import key_allowed
from orchestrator.boundary.gittree import escapes
from orchestrator.task.diffview import human_size


@pytest.mark.parametrize(
    "key",
    [
        "core.repositoryformatversion",
        "core.filemode",
        "remote.origin.url",
        "remote.My.Fork.fetch",
        "branch.feature/x.merge",
        "user.email",
        "extensions.objectformat",
    ],
)
def test_harmless_keys_are_allowed(key: str) -> None:
    assert key_allowed(key)


@pytest.mark.parametrize(
    "key",
    [
        "core.fsmonitor",
        "core.hookspath",
        "core.worktree",
        "core.pager",
        "core.sshcommand",
        "core.askpass",
        "core.editor",
        "core.excludesfile",
        "core.attributesfile",
        "filter.lfs.process",
        "diff.evil.textconv",
        "diff.external",
        "include.path",
        "includeif.gitdir:/.path",
        "credential.helper",
        "remote.origin.uploadpack",
        "remote.origin.vcs",
        "remote.origin.promisor",
        "branch.main.mergeoptions",
        "submodule.x.update",
        "alias.st",
        "extensions.worktreeconfig",
        "gpg.program",
        "remote.url",
        "branch.merge",
        "sequence.editor",
        "pager.diff",
    ],
)
def test_everything_else_is_refused(key: str) -> None:
    assert not key_allowed(key)


@pytest.mark.parametrize(
    ("path", "target", "out"),
    [
        ("a", "/etc/passwd", True),
        ("a", "..", True),
        ("a/b", "../../x", True),
        ("a/b", "../c", False),
        ("a", "b/../../c", True),
        ("a", ".git/config", True),
        ("d/a", "../sub/.GIT/hooks", True),
        ("a", "src/app.py", False),
        ("a", "", True),
    ],
)
def test_symlink_targets(path: str, target: str, out: bool) -> None:
    assert escapes(path, target) is out


def test_sizes_read_like_a_person_would() -> None:
    assert human_size(512) == "512 B"
    assert human_size(16 * 1024) == "16.0 KB"
    assert human_size(200 * 1024 * 1024) == "200.0 MB"
    assert human_size(1024**3) == "1.0 GB"
