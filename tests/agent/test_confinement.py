"""The repository tools stay inside the repository: no traversal, no absolute paths, no
.git, no encoded tricks, no symlink out (resolved and checked), no option injection into
git; what they refuse goes back to the model as an error and nothing outside is read."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.agent.conftest import bodies, results_in_order
from tests.conftest import Driver
from tests.fakes.model_server import ScriptedModelServer, Text, ToolCall, Turn

SECRET = "TOP-SECRET-OUTSIDE"


async def test_paths_that_leave_the_repository_are_refused(
    agent: Driver, model: ScriptedModelServer, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text(SECRET + "\n")
    repo = workspace / "demo"
    (repo / "link.txt").symlink_to(outside)
    (repo / "linkdir").symlink_to(tmp_path)
    (repo / "inner.txt").symlink_to(repo / "app.py")  # a link that stays inside is fine

    def read(path: str) -> ToolCall:
        return ToolCall("repo_read_file", {"repo": "demo", "path": path})

    calls = [
        read("../outside.txt"),
        read(str(outside)),
        read("link.txt"),
        read("linkdir/outside.txt"),
        read(".git/config"),
        read("%2e%2e/outside.txt"),
        read("~/outside.txt"),
        read("inner.txt"),
        ToolCall("repo_list_files", {"repo": "demo", "path": "../"}),
        ToolCall("repo_search", {"repo": "demo", "query": SECRET}),
        ToolCall("git_log", {"repo": "demo", "path": "/etc"}),
        ToolCall("git_show", {"repo": "demo", "rev": "--output=/tmp/pwned"}),
        ToolCall("git_show", {"repo": "demo", "rev": "HEAD", "path": "../x"}),
        ToolCall("repo_read_file", {"repo": "../demo", "path": "app.py"}),
    ]
    model.script(Turn(*calls), Text("done"))
    await agent.ask("hello there, read around", "done")
    results = results_in_order(bodies(model)[-1])
    assert len(results) == len(calls)
    (
        dots,
        absolute,
        link,
        linkdir,
        dotgit,
        encoded,
        home,
        inner,
        listing,
        search,
        log,
        show,
        show_path,
        repo_name,
    ) = results
    assert dots == "error: '..' is not allowed in a file name"
    assert absolute.startswith("error: absolute paths are not allowed")
    assert link == "error: 'link.txt' leads outside the repository (a symlink)"
    assert linkdir == "error: 'linkdir/outside.txt' leads outside the repository (a symlink)"
    assert dotgit == "error: .git is not shown or touched"
    assert encoded == "error: '..' is not allowed in a file name"
    assert home.startswith("error: absolute paths")
    assert inner == "inner.txt:\n1: print('hi')"
    assert listing.startswith("error: ")
    assert search == f"no match for {SECRET!r}"  # the link out was never read
    assert log.startswith("error: absolute paths")
    assert show.startswith("error: '--output=/tmp/pwned' is not a revision")
    assert show_path == "error: '..' is not allowed in a file name"
    assert repo_name == "error: no repository named '../demo'; call workspace_list"
    assert not await asyncio.to_thread(Path("/tmp/pwned").exists)
    assert all(SECRET not in r for r in results if r is not search)  # (it echoes the query)


async def test_output_is_bounded(
    agent: Driver, model: ScriptedModelServer, workspace: Path
) -> None:
    repo = workspace / "demo"
    (repo / "big.txt").write_text("".join(f"line {n} {'x' * 200}\n" for n in range(5000)))
    for n in range(450):
        (repo / f"f{n:03}.txt").write_text("fox\n")
    model.script(
        Turn(
            ToolCall("repo_read_file", {"repo": "demo", "path": "big.txt"}),
            ToolCall("repo_list_files", {"repo": "demo"}),
            ToolCall("repo_search", {"repo": "demo", "query": "fox"}),
        ),
        Text("done"),
    )
    await agent.ask("hello there, read the big ones", "done")
    big, listing, search = results_in_order(bodies(model)[-1])
    assert len(big) < 50_000 and "\n[lines 1-" in big and big.endswith(" bytes)]")
    assert len(listing.splitlines()) == 401 and listing.endswith("more (name a folder)")
    assert search.endswith("stopped at 60 matches")
