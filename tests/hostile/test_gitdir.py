"""``.git`` itself relocated or booby-trapped (the unsafe local mode can write it), and
git variables leaking from Fetch's own environment into host git."""

from __future__ import annotations

import os
import shutil

import pytest

from core.errors import GitError
from orchestrator.boundary.gitops import Repo, guard_repo_config
from tests.conftest import git
from tests.hostile.conftest import Scene, exercise, snapshot


def steal_git(s: Scene) -> None:
    shutil.move(str(s.repo / ".git"), str(s.tmp / "stolen.git"))


def gitfile(s: Scene) -> None:
    steal_git(s)
    (s.repo / ".git").write_text(f"gitdir: {s.victim}/proj/.git\n")


def git_symlink(s: Scene) -> None:
    steal_git(s)
    (s.repo / ".git").symlink_to(s.victim / "proj" / ".git")


def commondir(s: Scene) -> None:
    (s.repo / ".git" / "commondir").write_text(f"{s.victim}/proj/.git\n")


def alternates(s: Scene) -> None:
    (s.repo / ".git" / "objects" / "info" / "alternates").write_text(
        f"{s.victim}/proj/.git/objects\n"
    )


def ref_symlink(s: Scene) -> None:
    (s.repo / ".git" / "refs" / "heads" / "evil").symlink_to(s.victim / "notes.txt")


def logs_symlink(s: Scene) -> None:
    logs = s.repo / ".git" / "logs"
    shutil.rmtree(logs, ignore_errors=True)
    logs.symlink_to(s.victim / "dir")


def reflog_hardlink(s: Scene) -> None:
    head_log = s.repo / ".git" / "logs" / "HEAD"
    head_log.unlink()
    os.link(s.victim / "notes.txt", head_log)


def config_symlink(s: Scene) -> None:
    (s.repo / ".git" / "config").unlink()
    (s.repo / ".git" / "config").symlink_to(s.victim / "proj" / ".git" / "config")


RELOCATIONS = {
    "gitfile": (gitfile, "gitfile"),
    "git symlink": (git_symlink, "symlink"),
    "commondir": (commondir, ".git/commondir"),
    "alternates": (alternates, "objects/info/alternates"),
    "ref symlink": (ref_symlink, "symlink"),
    "logs symlink": (logs_symlink, "symlink"),
    "reflog hard link": (reflog_hardlink, "hard-linked"),
    "config symlink": (config_symlink, "symlink"),
}


@pytest.mark.parametrize("answer", ["no", "yes"])
@pytest.mark.parametrize("name", list(RELOCATIONS))
def test_relocated_git_dir_is_refused(scene: Scene, name: str, answer: str) -> None:
    plant, says = RELOCATIONS[name]
    (scene.repo / "README.md").write_text("changed\n")
    victim = snapshot(scene.victim)
    plant(scene)
    errors = exercise(scene, answer)
    assert snapshot(scene.victim) == victim
    assert scene.fired() == []
    assert errors and all(says in e for e in errors), errors


def test_git_replaced_between_operations_stops_the_discard(scene: Scene) -> None:
    repo = Repo(scene.repo)
    (scene.repo / "README.md").write_text("changed\n")
    repo.change()
    git_symlink(scene)
    victim = snapshot(scene.victim)
    with pytest.raises(GitError, match="replaced"):
        repo.discard()
    assert snapshot(scene.victim) == victim


def test_root_swapped_for_a_link_stops_the_discard(scene: Scene) -> None:
    repo = Repo(scene.repo)
    shutil.move(str(scene.repo), str(scene.tmp / "moved"))
    scene.repo.symlink_to(scene.victim / "proj")
    victim = snapshot(scene.victim)
    with pytest.raises(GitError, match="no longer resolves"):
        repo.discard()
    with pytest.raises(GitError, match="no longer resolves"):
        repo.status_lines()
    assert snapshot(scene.victim) == victim


def test_guard_never_writes_through_a_replaced_git_dir(scene: Scene) -> None:
    victim = snapshot(scene.victim)
    with pytest.raises(GitError, match="replaced"), guard_repo_config(scene.repo):
        git_symlink(scene)
    assert snapshot(scene.victim) == victim


def test_guard_never_writes_through_linked_folders_in_git(scene: Scene) -> None:
    victim = snapshot(scene.victim)
    hooks = scene.repo / ".git" / "hooks"
    with pytest.raises(GitError, match="symlink"), guard_repo_config(scene.repo) as restored:
        shutil.rmtree(hooks)
        hooks.symlink_to(scene.victim / "dir")
        info = scene.repo / ".git" / "info"
        shutil.rmtree(info)
        info.symlink_to(scene.victim / "dir")
        (scene.victim / "dir" / "attributes").unlink(missing_ok=True)
        alternates(scene)
    assert ".git/hooks" in restored and ".git/objects/info/alternates" in restored
    assert hooks.is_dir() and not hooks.is_symlink()
    assert snapshot(scene.victim) == victim


def test_git_variables_in_fetchs_environment_do_not_leak(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    victim = snapshot(scene.victim)
    hostile_home = scene.tmp / "hostile-home"
    (hostile_home / "git").mkdir(parents=True)
    evil_cfg = f'[core]\n\tfsmonitor = "{scene.evil("global")}; false"\n\tpager = cat\n'
    (hostile_home / ".gitconfig").write_text(evil_cfg)
    (hostile_home / "git" / "config").write_text(evil_cfg)
    (hostile_home / "git" / "attributes").write_text("* filter=evil\n")
    ext = scene.script("external-env")
    (scene.repo / "README.md").write_text("The quick brown fox.\n")
    for name, value in {
        "GIT_DIR": f"{scene.victim}/proj/.git",
        "GIT_WORK_TREE": str(scene.victim),
        "GIT_INDEX_FILE": f"{scene.victim}/index",
        "GIT_OBJECT_DIRECTORY": f"{scene.victim}/objects",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": f"{scene.victim}/proj/.git/objects",
        "GIT_COMMON_DIR": f"{scene.victim}/proj/.git",
        "GIT_CONFIG_PARAMETERS": f"'core.fsmonitor'='{scene.evil('params')}; false'",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "core.fsmonitor",
        "GIT_CONFIG_VALUE_0": f"{scene.evil('count')}; false",
        "GIT_CONFIG_GLOBAL": str(hostile_home / ".gitconfig"),
        "GIT_CONFIG_SYSTEM": str(hostile_home / ".gitconfig"),
        "GIT_CONFIG": str(hostile_home / ".gitconfig"),
        "HOME": str(hostile_home),
        "XDG_CONFIG_HOME": str(hostile_home),
        "GIT_EXTERNAL_DIFF": str(ext),
        "GIT_PAGER": scene.evil("git-pager"),
        "PAGER": scene.evil("pager"),
        "GIT_EDITOR": scene.evil("editor"),
        "GIT_ASKPASS": str(scene.script("askpass-env")),
        "SSH_ASKPASS": str(scene.script("ssh-askpass-env")),
        "GIT_SSH_COMMAND": scene.evil("ssh-env"),
        "GIT_TRACE": f"{scene.victim}/trace.log",
        "GIT_TRACE2_EVENT": f"{scene.victim}/trace2.json",
        "GIT_CEILING_DIRECTORIES": "",
    }.items():
        monkeypatch.setenv(name, value)
    assert exercise(scene, "yes") == []
    assert scene.fired() == []
    assert snapshot(scene.victim) == victim
    monkeypatch.undo()
    log = git(scene.repo, "log", "--format=%s")
    assert log.splitlines()[:2] == ["fetch: undo", "fetch: hostile change"]
