"""Every seed tool and repository tool, called by the scripted model through the real
openai SDK; its effect asserted (on disk, in the session, in the chat) and its result
as the model received it on the wire."""

from __future__ import annotations

from pathlib import Path

from tests.agent.conftest import bodies, results_in_order
from tests.conftest import Driver, git
from tests.fakes.model_server import ScriptedModelServer, Text, ToolCall, Turn


async def _call(
    agent: Driver,
    model: ScriptedModelServer,
    *calls: ToolCall,
    say: str = "hello there, please look",
    done: str = "done",
) -> list[str]:
    """One model turn making ``calls``; the results the model got back, in call order."""
    model.script(Turn(*calls), Text(done))
    await agent.ask(say, done)
    return results_in_order(bodies(model)[-1])


async def test_workspace_tools(agent: Driver, model: ScriptedModelServer, workspace: Path) -> None:
    (listed,) = await _call(agent, model, ToolCall("workspace_list", {}))
    assert listed == "demo (main, clean)"
    (selected,) = await _call(agent, model, ToolCall("workspace_select", {"repo": "demo"}))
    assert (
        selected == "active repo is now demo"
        and agent.services.sessions.live()[0].data.repo == "demo"
    )
    (workspace / "demo" / "app.py").write_text("print('changed')\n")
    (status,) = await _call(agent, model, ToolCall("workspace_status", {}))
    head = git(workspace / "demo", "rev-parse", "HEAD")[:12]
    assert status == f"demo: branch main, HEAD {head}\n M app.py"
    (missing,) = await _call(agent, model, ToolCall("workspace_select", {"repo": "nope"}))
    assert missing == "error: no repository named 'nope'"


async def test_workspace_create_asks_the_owner_first(
    agent: Driver, model: ScriptedModelServer, workspace: Path
) -> None:
    model.script(ToolCall("workspace_create", {"name": "newapp"}))
    question = await agent.ask("hello there, make a repo newapp", "May I run")
    assert "workspace_create(name='newapp')" in question and "yes / no" in question
    assert not (workspace / "newapp").exists()  # nothing before the yes
    assert results_in_order(bodies(model)[-1]) == [] and len(bodies(model)) == 1
    assert "WAITING" in await agent.ask("/status", "Fetch ·")
    done = await agent.ask("yes", "workspace_create")
    assert done.startswith("✅") and (workspace / "newapp" / ".git").is_dir()
    # No is no.
    model.script(ToolCall("workspace_create", {"name": "other"}))
    await agent.ask("hello there, make a repo other", "May I run")
    assert "Not done" in await agent.ask("no", "Not done")
    assert not (workspace / "other").exists()
    # Something else than yes or no: nothing is run, and the message is a new request.
    model.script(ToolCall("workspace_create", {"name": "third"}), Text("Sure, hello."))
    await agent.ask("hello there, make a repo third", "May I run")
    await agent.ask("what's in the demo repo instead?", "Not done")
    await agent.expect("Sure, hello.")
    assert not (workspace / "third").exists()
    assert bodies(model)[-1]["messages"][-2]["content"] == "what's in the demo repo instead?"
    # A name that escapes is refused after the yes, and nothing is made.
    model.script(ToolCall("workspace_create", {"name": "../escape"}))
    await agent.ask("hello there, make ../escape", "May I run")
    assert "is not a repository" in await agent.ask("yes", "workspace_create")
    assert not (workspace.parent / "escape").exists()


async def test_workspace_delete_never_leaves_the_workspace(
    agent: Driver, model: ScriptedModelServer, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    (outside / ".git").mkdir(parents=True)
    (outside / "keep.txt").write_text("precious")
    (workspace / "sneaky").symlink_to(outside)
    for name in ("sneaky", "..", "../outside"):
        model.script(ToolCall("workspace_delete", {"repo": name}))
        await agent.ask(f"hello there, delete {name}", "May I run")
        refused = await agent.ask("yes", "workspace_delete")
        assert refused.startswith("⚠️"), refused
    assert (outside / "keep.txt").read_text() == "precious"
    assert (workspace / "demo" / ".git").is_dir()
    model.script(
        ToolCall("workspace_select", {"repo": "demo"}),
        ToolCall("workspace_delete", {"repo": "demo"}),
    )
    await agent.ask("hello there, delete the demo repo", "May I run")
    assert (workspace / "demo").is_dir()
    assert "deleted repository demo" in await agent.ask("yes", "workspace_delete")
    assert not (workspace / "demo").exists()
    assert agent.services.sessions.live()[0].data.repo is None


async def test_task_tools(agent: Driver, model: ScriptedModelServer) -> None:
    (none,) = await _call(agent, model, ToolCall("task_status", {}))
    assert none == "no task in this chat yet"
    model.script(ToolCall("task_create", {"repo": "demo", "instruction": "fix the typo"}))
    await agent.ask("hello there, fix the readme typo in demo", "Apply?")
    await agent.ask("no", "Discarded")
    (status,) = await _call(agent, model, ToolCall("task_status", {}))
    assert status.startswith("task #1 in demo with demo: ") and "fix the typo" in status
    (other,) = await _call(agent, model, ToolCall("task_status", {"task_id": 99}))
    assert other == "error: no task #99 in this chat"
    (cancel,) = await _call(agent, model, ToolCall("task_cancel", {}))
    assert cancel == "no task is running in this chat"
    (respond,) = await _call(agent, model, ToolCall("task_respond", {"answer": "yes"}))
    assert respond.startswith("error: no running task is waiting")


async def test_ask_user_and_report_progress(agent: Driver, model: ScriptedModelServer) -> None:
    model.script(
        Turn(ToolCall("report_progress", {"message": "reading the code"})), Text("All read.")
    )
    await agent.push("hello there, read it all")
    assert await agent.expect("⏳ reading the code")
    assert await agent.expect("All read.")
    assert results_in_order(bodies(model)[-1]) == ["reported"]
    model.script(ToolCall("ask_user", {"question": "Which file?"}), Text("Thanks"))
    await agent.ask("hello there, fix something", "Which file?")
    assert "WAITING" in await agent.ask("/status", "Fetch ·")
    await agent.ask("README.md", "Thanks")
    assert "README.md" in bodies(model)[-1]["messages"][-2]["content"]


async def test_repo_tools(agent: Driver, model: ScriptedModelServer, workspace: Path) -> None:
    (workspace / "demo" / "notes").mkdir()
    (workspace / "demo" / "notes" / "todo.txt").write_text("fix the fox\n")
    listed, read, search, log, show, blob = await _call(
        agent,
        model,
        ToolCall("repo_list_files", {"repo": "demo"}),
        ToolCall("repo_read_file", {"repo": "demo", "path": "README.md"}),
        ToolCall("repo_search", {"repo": "demo", "query": "FOX"}),
        ToolCall("git_log", {"repo": "demo"}),
        ToolCall("git_show", {"repo": "demo", "rev": "HEAD"}),
        ToolCall("git_show", {"repo": "demo", "rev": "HEAD", "path": "app.py"}),
    )
    assert listed.splitlines() == ["README.md", "app.py", "notes/todo.txt"]
    assert read == "README.md:\n1: # demo\n2: \n3: Teh quick brown fox."
    assert search.splitlines() == [
        "README.md:3: Teh quick brown fox.",
        "notes/todo.txt:1: fix the fox",
    ]
    assert log.endswith("T: initial") and len(log.splitlines()) == 1
    assert "initial" in show and "+Teh quick brown fox." in show
    assert blob == "print('hi')\n"
    part, under = await _call(
        agent,
        model,
        ToolCall("repo_read_file", {"repo": "demo", "path": "README.md", "start": 3, "lines": 1}),
        ToolCall("repo_list_files", {"repo": "demo", "path": "notes"}),
    )
    assert part == "README.md:\n3: Teh quick brown fox.\n[lines 3-3 of 3]"
    assert under == "notes/todo.txt"
