"""What a sandbox can write into the working tree alone (its only writable mount):
nested repositories, gitlinks and submodules, symlinks out, booby-trapped file names."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from core.errors import GitError
from orchestrator.boundary.gitops import Repo
from orchestrator.boundary.gittree import nested_repos
from tests.conftest import git
from tests.hostile.conftest import Scene, exercise, snapshot


def nested_repo(s: Scene, where: str) -> Path:
    """A repository in the tree whose own config and hooks run programs."""
    sub = s.repo / where
    sub.mkdir(parents=True, exist_ok=True)
    (sub / "x.txt").write_text("x\n")
    git(sub, "init", "-q")
    git(sub, "add", "x.txt")
    git(sub, "commit", "-q", "-m", "nested")
    with (sub / ".git" / "config").open("a") as fh:
        fh.write(
            f'[core]\n\tfsmonitor = "{s.evil("nested-fsmonitor")}; false"\n'
            f'[filter "evil"]\n\tclean = "{s.evil("nested-clean")}"\n'
        )
    for hook in ("post-checkout", "pre-commit", "post-index-change"):
        path = sub / ".git" / "hooks" / hook
        path.write_text(f"#!/bin/sh\n{s.evil('nested-' + hook)}\n")
        path.chmod(0o755)
    (sub / ".gitattributes").write_text("* filter=evil\n")
    return sub


def assert_back_to_head(s: Scene) -> None:
    assert nested_repos(s.repo) == []
    assert Repo(s.repo).status_lines() == []


@pytest.mark.parametrize("answer", ["no", "yes"])
@pytest.mark.parametrize("where", ["sub", "src/deep/lib", "vendor/pkg"])
def test_nested_repository_is_refused_and_removed(scene: Scene, where: str, answer: str) -> None:
    victim = snapshot(scene.victim)
    (scene.repo / "README.md").write_text("changed\n")
    if where.startswith("vendor"):  # hidden from git by an ignore rule it also wrote
        (scene.repo / ".gitignore").write_text("vendor/\n")
    nested_repo(scene, where)
    errors = exercise(scene, answer)
    assert scene.fired() == []
    assert snapshot(scene.victim) == victim
    assert any(f"nested git repository ({where}/.git" in e for e in errors), errors
    assert_back_to_head(scene)


def test_nested_gitfile_pointing_outside_is_refused_and_removed(scene: Scene) -> None:
    victim = snapshot(scene.victim)
    (scene.repo / "lib").mkdir()
    (scene.repo / "lib" / ".git").write_text(f"gitdir: {scene.victim}/proj/.git\n")
    (scene.repo / "src" / ".GIT").write_text(f"gitdir: {scene.victim}/proj/.git\n")
    errors = exercise(scene, "no")
    assert any("nested git repository (lib/.git, src/.GIT)" in e for e in errors), errors
    assert snapshot(scene.victim) == victim
    assert_back_to_head(scene)


def test_nested_git_symlink_is_unlinked_not_followed(scene: Scene) -> None:
    victim = snapshot(scene.victim)
    (scene.repo / "src" / ".git").symlink_to(scene.victim / "proj" / ".git")
    errors = exercise(scene, "no")
    assert any("nested git repository" in e for e in errors)
    assert snapshot(scene.victim) == victim
    assert_back_to_head(scene)


@pytest.mark.parametrize("answer", ["no", "yes"])
def test_submodule_and_gitlink_never_followed(scene: Scene, answer: str) -> None:
    victim = snapshot(scene.victim)
    (scene.repo / ".gitmodules").write_text(
        f'[submodule "mod"]\n\tpath = mod\n\turl = ext::sh -c "{scene.evil("ext")}"\n'
        f'\tupdate = "!{scene.evil("update")}"\n'
        f'[submodule "two"]\n\tpath = two\n\turl = file://{scene.victim}/proj\n'
    )
    mod = nested_repo(scene, "mod")
    sha = git(mod, "rev-parse", "HEAD")
    # the unsafe local mode can stage a gitlink in the owner's index too
    git(scene.repo, "update-index", "--add", "--cacheinfo", f"160000,{sha},mod")
    errors = exercise(scene, answer)
    assert scene.fired() == []
    assert snapshot(scene.victim) == victim
    assert any("nested git repository (mod/.git" in e for e in errors), errors
    assert_back_to_head(scene)


def test_gitlink_in_the_built_tree_is_refused(scene: Scene) -> None:
    """The last line of defence: whatever tree git builds, a gitlink in it is refused
    (the nested-repository check normally fires first, so drive the refusal directly)."""
    repo = Repo(scene.repo)
    head = repo.head()
    link = git(nested_repo(scene, "mod"), "rev-parse", "HEAD")
    listing = git(scene.repo, "ls-tree", head) + f"\n160000 commit {link}\tmod\n"
    tree = subprocess.run(
        ["git", "mktree", "--missing"],
        cwd=scene.repo,
        input=listing,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    with pytest.raises(GitError, match="gitlink at mod"):
        repo._refuse_links(repo._raw(head, tree))


@pytest.mark.parametrize("answer", ["no", "yes"])
def test_symlinks_out_of_the_tree_are_refused_and_never_followed(scene: Scene, answer: str) -> None:
    (scene.victim / "dir" / "app.py").write_text("the victim's own app.py\n")
    victim = snapshot(scene.victim)
    (scene.repo / "escape").symlink_to(scene.victim)
    (scene.repo / "relative").symlink_to(Path("..") / ".." / "victim" / "notes.txt")
    (scene.repo / "README.md").unlink()
    (scene.repo / "README.md").symlink_to(scene.victim / "notes.txt")
    os.rename(scene.repo / "src", scene.tmp / "src-moved")
    (scene.repo / "src").symlink_to(scene.victim / "dir")
    errors = exercise(scene, answer)
    assert snapshot(scene.victim) == victim
    assert any("points outside the repository" in e for e in errors), errors
    assert not (scene.repo / "README.md").is_symlink()
    assert (scene.repo / "src" / "app.py").read_text() == "x = 1\n"
    assert_back_to_head(scene)


def test_symlink_inside_the_tree_is_an_ordinary_change(scene: Scene) -> None:
    (scene.repo / "docs").symlink_to("src/app.py")
    assert exercise(scene, "yes") == []
    assert Repo(scene.repo).status_lines() == []


@pytest.mark.parametrize("answer", ["no", "yes"])
def test_file_names_like_options_are_only_names(scene: Scene, answer: str) -> None:
    victim = snapshot(scene.victim)
    names = [
        f"--output={scene.victim}/pwned",
        "-rf",
        "--exec=touch canary",
        "-p",
        f"--work-tree={scene.victim}",
        ":(top)magic",
        "*",
    ]
    for name in names:
        target = scene.repo / "opts" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("just a file\n")
    (scene.repo / "-c").write_text("top-level dash\n")
    assert exercise(scene, answer) == []
    assert snapshot(scene.victim) == victim
    assert not (scene.victim / "pwned").exists()
    assert_back_to_head(scene)


@pytest.mark.parametrize("answer", ["no", "yes"])
def test_file_names_with_newlines_and_controls(scene: Scene, answer: str) -> None:
    names = [
        "a\nb.txt",
        "esc\x1b[31mred.txt",
        "bidi\u202egnp.txt",
        "tab\tname",
        "bell\x07\r.txt",
        "c1\u009b2J.txt",
    ]
    for name in names:
        (scene.repo / name).write_text(f"content of {name}\n")
    assert exercise(scene, answer) == []
    assert_back_to_head(scene)
    for text in scene.shown:
        assert not {"\x1b", "\x07", "\r", "\u202e", "\u009b"} & set(text), text


def test_attributes_without_drivers_run_nothing(scene: Scene) -> None:
    (scene.repo / ".gitattributes").write_text("* filter=evil diff=evil merge=evil\n")
    (scene.repo / "README.md").write_text("The quick brown fox.\n")
    hooks = scene.repo / ".git" / "hooks"
    for name in (
        "pre-commit",
        "post-commit",
        "reference-transaction",
        "post-checkout",
        "post-index-change",
    ):
        (hooks / name).write_text(f"#!/bin/sh\n{scene.evil('hook-' + name)}\n")
        (hooks / name).chmod(0o755)
    assert exercise(scene, "yes") == []
    assert scene.fired() == []


def test_special_files_neither_hang_nor_escape(scene: Scene) -> None:
    os.mkfifo(scene.repo / "pipe")
    (scene.repo / "README.md").write_text("changed\n")
    assert exercise(scene, "no") == []
    assert Repo(scene.repo).status_lines() == []
