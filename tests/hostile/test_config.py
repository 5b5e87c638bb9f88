"""Repository config that would make host git run a program or work elsewhere.

Written straight into ``.git/config`` (the unsafe local mode): every operation refuses,
naming the key, and nothing runs. Written during a guarded run (how the runner calls
it): the guard puts the config back, and every operation then completes safely."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from orchestrator.boundary.gitops import Repo, guard_repo_config
from tests.hostile.conftest import Scene, exercise, snapshot

HOOKS = (
    "pre-commit",
    "post-commit",
    "reference-transaction",
    "post-checkout",
    "post-rewrite",
    "pre-auto-gc",
    "post-index-change",
    "prepare-commit-msg",
    "commit-msg",
    "post-merge",
    "pre-push",
)


@dataclass(frozen=True)
class Vector:
    name: str
    key: str  # the key the refusal must name (as git lists it)
    plant: Callable[[Scene], None]


def fsmonitor(s: Scene) -> None:
    s.config(f'[core]\n\tfsmonitor = "{s.evil("fsmonitor")}; false"\n')


def hooks_path(s: Scene) -> None:
    hooks = s.tmp / "hooks"
    hooks.mkdir()
    for name in HOOKS:
        for where in (hooks, s.repo / ".git" / "hooks"):
            (where / name).write_text(f"#!/bin/sh\n{s.evil('hook-' + name)}\n")
            (where / name).chmod(0o755)
    s.config(f"[core]\n\thooksPath = {hooks}\n")


def filters(s: Scene) -> None:
    (s.repo / ".gitattributes").write_text("* filter=evil\n")
    s.config(
        f'[filter "evil"]\n\tclean = "{s.evil("clean")}; cat"\n'
        f'\tsmudge = "{s.evil("smudge")}; cat"\n\tprocess = "{s.evil("process")}"\n'
        "\trequired = true\n"
    )


def textconv(s: Scene) -> None:
    (s.repo / ".gitattributes").write_text("* diff=evil\n")
    s.config(
        f'[diff "evil"]\n\ttextconv = "{s.evil("textconv")}; cat"\n'
        f'\tcommand = "{s.evil("diffcmd")}"\n'
    )


def diff_external(s: Scene) -> None:
    s.config(f"[diff]\n\texternal = {s.script('external')}\n")


def pagers(s: Scene) -> None:
    s.config(
        f'[core]\n\tpager = "{s.evil("pager")}; cat"\n'
        f'[pager]\n\tdiff = "{s.evil("pager-diff")}; cat"\n'
        f'\tlog = "{s.evil("pager-log")}; cat"\n\tstatus = "{s.evil("pager-st")}"\n'
    )


def include(s: Scene) -> None:
    hostile = s.tmp / "hostile.cfg"
    hostile.write_text(
        f'[core]\n\tfsmonitor = "{s.evil("included")}; false"\n\tworktree = {s.victim}\n'
    )
    s.config(f"[include]\n\tpath = {hostile}\n")


def include_if(s: Scene) -> None:
    hostile = s.tmp / "hostile-if.cfg"
    hostile.write_text(f'[core]\n\tfsmonitor = "{s.evil("includeif")}; false"\n')
    s.config(f'[includeIf "gitdir:/"]\n\tpath = {hostile}\n')


def worktree(s: Scene) -> None:
    s.config(f"[core]\n\tworktree = {s.victim}\n")


def ssh_command(s: Scene) -> None:
    s.config(f'[core]\n\tsshCommand = "{s.evil("ssh")}"\n')


def credential(s: Scene) -> None:
    s.config(f'[credential]\n\thelper = "!{s.evil("credential")}"\n')


def askpass(s: Scene) -> None:
    s.config(f"[core]\n\taskPass = {s.script('askpass')}\n")


def gpg(s: Scene) -> None:
    s.config(f"[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = {s.script('gpg')}\n")


def show_signature(s: Scene) -> None:
    s.config(f"[log]\n\tshowSignature = true\n[gpg]\n\tprogram = {s.script('gpg-log')}\n")


def editor(s: Scene) -> None:
    s.config(f"[core]\n\teditor = {s.script('editor')}\n")


def merge_driver(s: Scene) -> None:
    (s.repo / ".gitattributes").write_text("* merge=evil\n")
    s.config(f'[merge "evil"]\n\tdriver = "{s.evil("merge")}"\n')


def worktree_config(s: Scene) -> None:
    (s.repo / ".git" / "config.worktree").write_text(
        f'[core]\n\tfsmonitor = "{s.evil("wtconfig")}; false"\n'
    )
    s.config("[extensions]\n\tworktreeConfig = true\n")


def bare(s: Scene) -> None:
    s.config("[core]\n\tbare = true\n")


def excludes_file(s: Scene) -> None:
    s.config(
        f"[core]\n\texcludesFile = {s.victim}/notes.txt\n\tattributesFile = {s.victim}/notes.txt\n"
    )


def alternate_refs(s: Scene) -> None:
    s.config(f'[core]\n\talternateRefsCommand = "{s.evil("altrefs")}"\n')


def submodule_update(s: Scene) -> None:
    s.config(
        f'[submodule "mod"]\n\tupdate = "!{s.evil("subupdate")}"\n'
        f'\turl = "ext::sh -c {s.evil("ext")}"\n'
    )


VECTORS = [
    Vector("fsmonitor", "core.fsmonitor", fsmonitor),
    Vector("hooksPath", "core.hookspath", hooks_path),
    Vector("filter", "filter.evil.clean", filters),
    Vector("textconv", "diff.evil.textconv", textconv),
    Vector("diff.external", "diff.external", diff_external),
    Vector("pager", "core.pager", pagers),
    Vector("include", "include.path", include),
    Vector("includeIf", "includeif.gitdir:/.path", include_if),
    Vector("core.worktree", "core.worktree", worktree),
    Vector("sshCommand", "core.sshcommand", ssh_command),
    Vector("credential.helper", "credential.helper", credential),
    Vector("askPass", "core.askpass", askpass),
    Vector("gpg", "commit.gpgsign", gpg),
    Vector("showSignature", "log.showsignature", show_signature),
    Vector("editor", "core.editor", editor),
    Vector("merge driver", "merge.evil.driver", merge_driver),
    Vector("worktreeConfig", "extensions.worktreeconfig", worktree_config),
    Vector("bare", "core.bare", bare),
    Vector("excludesFile", "core.excludesfile", excludes_file),
    Vector("alternateRefsCommand", "core.alternaterefscommand", alternate_refs),
    Vector("submodule update", "submodule.mod.update", submodule_update),
]


def edit(s: Scene) -> None:
    """The harmless edit the harness was asked for."""
    readme = s.repo / "README.md"
    readme.write_text(readme.read_text().replace("Teh", "The"))


@pytest.mark.parametrize("answer", ["no", "yes"])
@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v.name)
def test_config_in_git_dir_is_refused_by_name(scene: Scene, vector: Vector, answer: str) -> None:
    victim = snapshot(scene.victim)
    edit(scene)
    vector.plant(scene)
    errors = exercise(scene, answer)
    assert scene.fired() == []
    assert snapshot(scene.victim) == victim
    assert errors, "a hostile config must be refused"
    if vector.name != "worktreeConfig":  # refused for config.worktree before its key
        assert vector.key in errors[0].lower(), errors[0]
    assert all("refusing" in e for e in errors), errors


@pytest.mark.parametrize("answer", ["no", "yes"])
@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v.name)
def test_config_planted_during_a_guarded_run_is_put_back(
    scene: Scene, vector: Vector, answer: str
) -> None:
    victim = snapshot(scene.victim)
    config = (scene.repo / ".git" / "config").read_bytes()
    with guard_repo_config(scene.repo) as restored:
        edit(scene)
        vector.plant(scene)
    assert restored
    assert (scene.repo / ".git" / "config").read_bytes() == config
    assert exercise(scene, answer) == []
    assert scene.fired() == []
    assert snapshot(scene.victim) == victim
    assert Repo(scene.repo).status_lines() == []


def test_owner_config_from_a_clone_is_accepted(scene: Scene) -> None:
    scene.config(
        '[remote "origin"]\n\turl = git@example.com:me/demo.git\n'
        "\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
        '[branch "main"]\n\tremote = origin\n\tmerge = refs/heads/main\n'
        "[user]\n\tname = Me\n\temail = me@example.com\n[pull]\n\trebase = true\n"
    )
    edit(scene)
    assert exercise(scene, "yes") == []


def test_guard_puts_config_back_when_the_run_fails(scene: Scene) -> None:
    config = (scene.repo / ".git" / "config").read_bytes()
    with pytest.raises(RuntimeError), guard_repo_config(scene.repo):
        fsmonitor(scene)
        filters(scene)
        raise RuntimeError("the harness crashed")
    assert (scene.repo / ".git" / "config").read_bytes() == config
    assert exercise(scene, "no") == []
    assert scene.fired() == []
