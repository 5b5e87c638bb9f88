"""Claude Code in the real kennel image, through the relay, into the approval step."""

from __future__ import annotations

import json
from typing import Any

from kennel.docker_backend import DockerKennel
from tests.conftest import Driver, git, hang_a_task, tree_snapshot
from tests.docker.conftest import CANARY
from tests.fakes.model_server import EditFile, ScriptedModelServer, Text


def _kennel_container(driver: Driver) -> Any:
    kennel = driver.services.kennel
    assert isinstance(kennel, DockerKennel)
    (warm,) = kennel._warm.values()
    return warm.container


def _ps(container: Any) -> list[str]:
    out = container.exec_run(["ps", "-eo", "pid=,args="]).output.decode()
    return [line.strip() for line in out.splitlines() if line.strip() and "ps -eo" not in line]


async def test_edit_in_kennel_reaches_approval_and_commits(
    docker_fetch: Driver, model: ScriptedModelServer
) -> None:
    repo = docker_fetch.services.workspace.path("demo")
    original = git(repo, "rev-parse", "HEAD")
    model.script(EditFile("README.md", "Teh quick", "The quick"), Text("Fixed it."))
    diff = await docker_fetch.ask("fix the typo in README.md of demo", "Apply?", 120)
    assert "+The quick" in diff and "README.md +1 −1" in diff
    await docker_fetch.ask("yes", "Committed")
    assert git(repo, "rev-parse", "HEAD^") == original
    assert git(repo, "status", "--porcelain") == ""
    calls = model.model_requests
    assert calls and all(r.headers.get("x-api-key") == CANARY for r in calls)
    log = docker_fetch.services.settings.home_dir / "relay.jsonl"
    entries = [json.loads(x) for x in log.read_text().splitlines()]
    assert any(e["path"] == "/v1/messages" and e["status"] == 200 for e in entries)
    status = await docker_fetch.ask("/status", "Fetch ·")
    assert "sandbox: docker: no network" in status


async def test_stop_ends_everything_in_the_container(
    docker_fetch: Driver, model: ScriptedModelServer
) -> None:
    repo, before = await hang_a_task(docker_fetch, model, timeout=90)
    container = _kennel_container(docker_fetch)
    assert any("claude" in p for p in _ps(container))
    reply = await docker_fetch.ask("/stop", "Stopped", 10)
    assert "still alive" not in reply
    seconds = float(reply.split("ended in ")[1].split(" s")[0])
    assert seconds < 2.0
    left = _ps(container)
    assert not any("claude" in p for p in left), left
    assert all("forwarder.js" in p or "docker-init" in p or "init" in p for p in left), left
    assert tree_snapshot(repo) == before


async def test_retry_after_no_and_undo_works_without_a_restart(
    docker_fetch: Driver, model: ScriptedModelServer
) -> None:
    """Each run gets its own copy owned by the kennel's uid: "no" and /undo leave nothing
    the next run cannot write (it used to fail until a restart)."""
    repo = docker_fetch.services.workspace.path("demo")
    base = git(repo, "rev-parse", "HEAD")
    before = tree_snapshot(repo)
    for _ in range(2):
        model.script(EditFile("README.md", "Teh quick", "The quick"), Text("Fixed it."))
        diff = await docker_fetch.ask("fix the typo in README.md of demo", "Apply?", 120)
        assert "+The quick" in diff
        assert tree_snapshot(repo) == before  # the owner's tree: untouched until yes
        await docker_fetch.ask("no", "Discarded")
        assert tree_snapshot(repo) == before
    model.script(EditFile("README.md", "Teh quick", "The quick"), Text("Fixed it."))
    await docker_fetch.ask("fix the typo in README.md of demo", "Apply?", 120)
    await docker_fetch.ask("yes", "Committed")
    await docker_fetch.ask("/undo", "Reverted")
    assert tree_snapshot(repo) == before
    model.script(EditFile("README.md", "Teh quick", "The quick"), Text("Fixed it."))
    await docker_fetch.ask("fix the typo in README.md of demo", "Apply?", 120)
    await docker_fetch.ask("yes", "Committed")
    assert git(repo, "rev-parse", "HEAD~3") == base  # commit, its revert, commit
    assert "The quick" in (repo / "README.md").read_text()
    assert git(repo, "status", "--porcelain") == ""


async def test_a_kennel_that_vanishes_mid_task_is_told_and_replaced(
    docker_fetch: Driver, model: ScriptedModelServer
) -> None:
    repo, before = await hang_a_task(docker_fetch, model, timeout=90)
    _kennel_container(docker_fetch).remove(force=True)
    failed = await docker_fetch.expect("failed", 60)
    assert "Task #1 failed" in failed, failed
    assert "ALERT" in await docker_fetch.ask("/status", "Fetch ·")
    assert tree_snapshot(repo) == before
    model.script(EditFile("README.md", "Teh quick", "The quick"), Text("Fixed it."))
    diff = await docker_fetch.ask("fix the typo in README.md of demo", "Apply?", 120)
    assert "+The quick" in diff
    await docker_fetch.ask("no", "Discarded")
