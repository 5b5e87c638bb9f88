"""Trust III, point 7: a hostile CLI runs as a real task ("fix the typo in README.md of
<repo>") in the real kennel, bwrap and Docker, on its own layer; what it leaves comes back
as data. After the card, after "no" and (where it matters) after "yes", the scratch victim
folder, FETCH_HOME outside runs/ and kennel/, the owner's repository and its ``.git`` are
as they must be, no canary is in the repository and the real key is nowhere in it
(``Case.check``, tests/hostile/layer_fixtures.py, says exactly what is compared).

The CLI is tests/fakes/hostile_cli.py: a bash script in one real adapter's clothes (its
``prepare`` writes the adapter's files, its environment names the adapter's homes). One
Fetch per backend serves the whole module; each test has its own repository."""

from __future__ import annotations

import re
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from tests.conftest import git
from tests.docker.conftest import docker_client as docker_client  # the fixtures
from tests.docker.conftest import kennel_image as kennel_image
from tests.fakes.hostile_cli import ADAPTERS, HostileCli
from tests.hostile.layer_fixtures import (
    BACKENDS,
    README,
    Case,
    World,
    new_case,
    open_world,
    setuid_bits,
)
from tests.hostile.layer_fixtures import world as world

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.real]
FIXED = README.replace("Teh quick", "The quick")


async def start(
    world: World, tmp_path: Path, name: str, vector: str, adapter: str = "claude-code"
) -> tuple[Case, HostileCli]:
    await world.settle()
    case = new_case(world, tmp_path, name)
    harness = await world.use(adapter, vector, case)
    return case, harness


async def say_no(world: World, case: Case) -> None:
    reply = await world.answer("no", "Discarded")
    assert "Discarded" in reply, reply
    case.check()
    assert await world.state() == "ALERT"


async def say_yes(world: World, case: Case) -> str:
    reply = await world.answer("yes", "Committed")
    assert "Committed" in reply, reply
    case.check(tree=False, committed=True)
    assert (case.repo / "README.md").read_text() == FIXED
    assert git(case.repo, "status", "--porcelain") == ""
    return git(case.repo, "show", "--name-only", "--format=", "HEAD")


def card_of(reply: str) -> str:
    assert "Apply?" in reply, reply
    return flat(reply)


def flat(text: str) -> str:
    """A reply with its line wrapping undone (a phone-width line may break a phrase)."""
    return " ".join(text.split())


def links_made(reply: str) -> int:
    found = re.search(r"links=(\d+)", reply)
    assert found is not None, reply
    return int(found.group(1))


# 1 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
async def test_state_folder_links_are_never_followed(
    world: World, tmp_path: Path, adapter: str
) -> None:
    """Turn 1 replaces the adapter's home, HOME, TMPDIR and the shared cache's entries
    with links to the victim (absolute and relative) and asks a question; the answer's
    turn (a resume: the host writes the adapter's files again) and a second task replace
    every file the host writes (CLAUDE.md, AGENTS.md, .gemini/GEMINI.md,
    copilot-instructions.md, settings.json, config.toml...) with links to a victim file
    or to a file of FETCH_HOME, and delete through them."""
    case, harness = await start(world, tmp_path, f"state-{adapter}", "state-ask", adapter)
    asked = await world.task(case)
    assert "Which word replaces Teh?" in asked, asked
    case.check()
    harness.vector = "state-answer"
    card = card_of(await world.answer("The", "Apply?"))
    assert "transcript kept" in card, card  # the resume had the first turn's state
    assert links_made(card) >= 6, card
    case.check()
    await say_no(world, case)
    harness.vector = "state-again"
    card = card_of(await world.task(case))
    assert links_made(card) >= 6, card
    case.check()
    assert set((await say_yes(world, case)).split()) == {"README.md", "kennel-env.txt"}


# 2 ---------------------------------------------------------------------------------------
async def test_self_ignoring_folder_is_shown_and_dropped_on_no(
    world: World, tmp_path: Path
) -> None:
    case, _ = await start(world, tmp_path, "ignoring", "ignored-folder")
    card = card_of(await world.task(case))
    # Its own .gitignore counts for nothing: both files are part of the change, named.
    assert "evil/.gitignore" in card and "evil/payload" in card, card
    case.check()
    await say_no(world, case)
    assert not (case.repo / "evil").exists()


# 3 ---------------------------------------------------------------------------------------
async def test_pycache_bytecode_never_reaches_the_owner(world: World, tmp_path: Path) -> None:
    case, _ = await start(world, tmp_path, "pycache", "pycache")
    card = card_of(await world.task(case))
    assert "__pycache__/app.cpython-311.pyc (ignored by .gitignore)" in card, card
    assert "Left out" in card
    case.check()
    await say_no(world, case)
    assert list(case.repo.rglob("*.pyc")) == []
    card_of(await world.task(case))
    assert set((await say_yes(world, case)).split()) == {"README.md", "kennel-env.txt"}
    assert list(case.repo.rglob("*.pyc")) == []
    assert not (case.repo / "__pycache__").exists()


# 4 ---------------------------------------------------------------------------------------
async def test_node_modules_bin_never_lands(world: World, tmp_path: Path) -> None:
    case, _ = await start(world, tmp_path, "nodebin", "node-bin")
    card = card_of(await world.task(case))
    assert "node_modules/.bin/tsc (ignored by .gitignore)" in card, card
    case.check()
    assert set((await say_yes(world, case)).split()) == {"README.md", "kennel-env.txt"}
    assert not (case.repo / "node_modules" / ".bin").exists()
    assert not (case.repo / "node_modules" / "evil").exists()
    owner = case.repo / "node_modules" / "owner" / "index.js"
    assert owner.read_text() == "module.exports = 1\n"  # the owner's ignored file, kept


# 5 ---------------------------------------------------------------------------------------
async def test_setuid_bits_never_reach_the_owner(world: World, tmp_path: Path) -> None:
    case, _ = await start(world, tmp_path, "setuid", "setuid")
    card = card_of(await world.task(case))
    assert "app.py=6755" in card and "tool.sh=6755" in card, card  # set in the kennel
    case.check()
    assert set((await say_yes(world, case)).split()) == {
        "README.md",
        "app.py",
        "tool.sh",
        "kennel-env.txt",
    }
    assert setuid_bits(case.repo) == []
    for name in ("app.py", "tool.sh"):
        mode = stat.S_IMODE((case.repo / name).stat().st_mode)
        assert mode in (0o755, 0o644), f"{name}: {oct(mode)}"


# 6 ---------------------------------------------------------------------------------------
async def test_fifo_and_socket_are_left_out_and_never_block(world: World, tmp_path: Path) -> None:
    case, _ = await start(world, tmp_path, "special", "special")
    card = card_of(await world.task(case, timeout=90))  # the host never blocks on a FIFO
    for line in ("pipe.fifo (a FIFO)", "sock.s (a socket)", "app.py (a FIFO)"):
        assert line in card, card
    case.check()
    await say_no(world, case)
    card_of(await world.task(case, timeout=90))
    assert set((await say_yes(world, case)).split()) == {"README.md", "kennel-env.txt"}
    assert (case.repo / "app.py").read_text() == "print('hi')\n"


# 7 ---------------------------------------------------------------------------------------
async def test_a_folder_1100_deep_is_refused_and_the_next_task_works(
    world: World, tmp_path: Path
) -> None:
    case, harness = await start(world, tmp_path, "deep", "deep")
    failed = flat(await world.task(case))
    assert "failed:" in failed and "more than 128 folders deep" in failed, failed
    assert f"{case.name} is unchanged" in failed
    case.check()
    assert await world.state() == "ALERT"
    harness.vector = "benign"
    card_of(await world.task(case))
    await say_no(world, case)
    card_of(await world.task(case))
    await say_yes(world, case)


# 8 ---------------------------------------------------------------------------------------
async def test_a_sparse_gigabyte_is_refused_quickly(world: World, tmp_path: Path) -> None:
    case, harness = await start(world, tmp_path, "sparse", "sparse")
    # Well under git's 600 s timeout: the size is read from the inode, nothing is read.
    failed = flat(await world.task(case, timeout=90))
    assert "failed:" in failed and "over the limit" in failed and "big.bin" in failed, failed
    case.check()
    assert await world.state() == "ALERT"
    harness.vector = "benign"
    card_of(await world.task(case))
    await say_no(world, case)


# 9 ---------------------------------------------------------------------------------------
async def test_git_folder_writes_never_reach_the_owners(world: World, tmp_path: Path) -> None:
    case, _ = await start(world, tmp_path, "gitdir", "gitdir")
    card = card_of(await world.task(case))
    if world.backend == "bwrap":
        # The owner's .git is shown read-only: every write failed inside.
        assert "git-hooks=0" in card and "git-config" not in card and "git-moved" not in card
    else:
        # The Docker kennel has no .git: the one the CLI made is its own, left out.
        assert ".git (a git repository's folder)" in card, card
    assert "sub/.git (a git repository's folder)" in card, card
    assert "Sub/.GIT (a git repository's folder)" in card, card
    case.check()
    await say_no(world, case)
    card_of(await world.task(case))
    assert set((await say_yes(world, case)).split()) == {"README.md", "kennel-env.txt"}
    for nested in ("sub/.git", "Sub/.GIT", ".git-moved"):
        assert not (case.repo / nested).exists(), nested
    done = git(case.repo, "config", "--local", "--list")
    assert "fsmonitor" not in done and "hookspath" not in done.lower() and "pager" not in done


# beyond the nine ---------------------------------------------------------------------------
async def test_an_xattr_the_kennel_sets_deletes_nothing(world: World, tmp_path: Path) -> None:
    """The CLI sets ``user.overlay.opaque`` on ``src`` (a user.* xattr is its own to set on
    a folder it owns; the host mounts the overlay as root, which reads ``trusted.*``): the
    folder and its files stay, inside and in the change. On Docker (a copy; the image has
    no tool to set an xattr) the same must hold."""
    case, _ = await start(world, tmp_path, "xattr", "xattr")
    card = card_of(await world.task(case))
    if world.backend == "bwrap":
        assert "opaque-set" in card, card  # the attempt was made
    assert "src/util.py" not in card, card  # the CLI deleted nothing there
    case.check()
    assert set((await say_yes(world, case)).split()) == {"README.md", "kennel-env.txt"}
    assert (case.repo / "src" / "util.py").read_text() == "X = 1\n"


@pytest.mark.parametrize("vector", ["ignored-many", "ignored-big"])
async def test_what_the_owner_ignores_does_not_sink_the_task(
    world: World, tmp_path: Path, vector: str
) -> None:
    """Ignored output a CLI may well leave (an install's 25,000 files in node_modules/, a
    300 MB ``*.log``) is left out, like any ignored path; the task's change still reaches
    the owner, and none of it lands."""
    case, _ = await start(world, tmp_path, vector, vector)
    card = card_of(await world.task(case))
    assert "ignored by .gitignore" in card, card
    case.check()
    assert set((await say_yes(world, case)).split()) == {"README.md", "kennel-env.txt"}
    assert not (case.repo / "build.log").exists()
    assert not (case.repo / "node_modules" / "pkg").exists()


@pytest_asyncio.fixture(loop_scope="module", params=BACKENDS)
async def own_world(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[World]:
    """A Fetch of the test's own (a failure here must not hold the module's chat)."""
    async with open_world(request.param, request, tmp_path / "fetch") as made:
        yield made


async def test_a_file_atop_the_state_folder_and_a_resume(own_world: World, tmp_path: Path) -> None:
    """The first turn leaves a file at the top of the run's state folder and asks; the
    answer's turn starts from the state kept as data: the task goes on to its card."""
    world = own_world
    case, harness = await start(world, tmp_path, "top", "top-ask")
    asked = await world.task(case)
    assert "Which word replaces Teh?" in asked, asked
    case.check()
    harness.vector = "benign"
    card_of(await world.answer("The", "Apply?"))
    case.check()
    await say_no(world, case)
