"""The cockpit's pages over real HTTP (issue 27): a diff per file, coloured by line,
single-spaced, folded when long, with a file's control and bidi characters spelled out
and its markup escaped; costs money first with tokens in thousands and a chart over the
daily budget's line; sessions search with the matching words; the login page's token
field and the logout button."""

from __future__ import annotations

import re
from collections.abc import Callable

import aiohttp

from core.events import SessionKey
from orchestrator.config import Settings
from orchestrator.dashboard.diffhtml import FOLD_LINES, split_files
from orchestrator.store.usage import UsageRow
from tests.conftest import git
from tests.dashboard.conftest import Web, start_web, stop_web

EVIL = "<script>alert('pwned')</script>"
HOSTILE = f"safe {EVIL} \x1b[31mred\x1b[0m \u202eevil\u202c\n"


async def _committed_task(web: Web, files: dict[str, str]) -> int:
    repo = web.services.workspace.path("demo")
    parent = git(repo, "rev-parse", "HEAD")
    for name, text in files.items():
        (repo / name).write_text(text)
        git(repo, "add", name)
    git(repo, "commit", "-qm", f"hostile {EVIL}")
    sha = git(repo, "rev-parse", "HEAD")
    key = SessionKey("terminal", "owner")
    work = web.services.store.work
    task = await work.create_task(key, "demo", f"make it {EVIL}", "demo")
    await work.finish_task(task, "committed", f"done {EVIL}")
    await work.record_commit(key, "demo", sha, parent, task, "hostile")
    return task


async def test_a_diff_is_per_file_coloured_single_spaced_and_inert(web: Web) -> None:
    long = "".join(f"line {i}\n" for i in range(FOLD_LINES + 10))
    task = await _committed_task(
        web, {"evil.txt": HOSTILE, "long.txt": long, "README.md": "# demo\n\nThe fox.\n"}
    )
    status, body = await web.get(f"/tasks/{task}")
    assert status == 200
    assert "<script>alert" not in body and "&lt;script&gt;alert(" in body
    assert "\x1b" not in body and "\u202e" not in body
    assert "\\x1b[31mred\\x1b[0m" in body and "\\u202eevil\\u202c" in body
    files = re.findall(r'<details class="file" data-fold="([^"]+)"( open)?>', body)
    assert [(name, bool(is_open)) for name, is_open in files] == [
        ("README.md", True),
        ("evil.txt", True),
        ("long.txt", False),  # long: folded until opened
    ]
    assert '<span class="add">+safe &lt;script&gt;' in body
    assert '<span class="del">-Teh quick brown fox.</span>' in body
    assert re.search(r'<span class="hunk">@@ [^<]+@@[^<]*</span>', body)
    # Single-spaced: each line is one block, with no newline between them to add a
    # second, empty line.
    for pre in re.findall(r'<pre class="diff">(.*?)</pre>', body, re.DOTALL):
        assert "\n" not in pre.replace("\\n", "")


def test_the_diff_split_keeps_a_commits_message_and_counts_lines() -> None:
    patch = (
        "abc\n\nfix --- things\n+++ no header\n"
        "diff --git a/x.py b/x.py\nindex 1..2 100644\n--- a/x.py\n+++ b/x.py\n"
        "@@ -1,2 +1,2 @@\n-old\n+new\n--- a line that was '-- a'\n ctx\n"
    )
    preamble, files = split_files(patch)
    assert [line.kind for line in preamble] == ["ctx"] * 4
    (only,) = files
    assert only.path == "x.py" and (only.added, only.removed) == (1, 2)
    assert [line.kind for line in only.lines] == [
        "head",
        "head",
        "head",
        "head",
        "hunk",
        "del",
        "add",
        "del",
        "ctx",
    ]


async def test_costs_read_well_on_a_phone(web_settings: Callable[..., Settings]) -> None:
    web = await start_web(web_settings(FETCH__BUDGETS__DAILY_USD="2"))
    try:
        for model, tokens_in, tokens_out, cost in (
            (f"model-{EVIL}", 12_345, 4_100, 1.5),
            ("other-model", 1_250_000, 900, 1.25),
        ):
            web.services.store.usage.record(
                UsageRow(
                    "relay",
                    model=model,
                    tokens_in=tokens_in,
                    tokens_out=tokens_out,
                    cost=cost,
                    session="terminal:owner",
                )
            )
        await web.services.store.usage.flush()
        status, body = await web.get("/costs")
        assert status == 200
        assert "12.3k→4.1k" in body and "1.2M→900" in body  # per model
        assert "1.3M→5k" in body  # today's
        assert "12345" not in body and "1250000" not in body
        assert "$2.75" in body  # today's money, first
        assert "model-&lt;script&gt;" in body and "<script>alert" not in body
        chart = re.search(r'<figure class="chart" id="cost-chart">.*?</figure>', body, re.DOTALL)
        assert chart is not None
        svg = chart.group(0)
        assert len(re.findall(r'<rect class="day', svg)) == 30
        assert 'class="day over"' in svg  # today went over the daily budget
        assert '<line class="budget-line"' in svg and "daily budget $2.00" in svg
        # No table is made to scroll sideways (the phone test measures it too).
        assert 'class="scroll"' not in body
    finally:
        await stop_web(web)


async def test_sessions_search_shows_the_matching_words(web: Web) -> None:
    key = SessionKey("terminal", "owner")
    await web.services.sessions.get(key)
    text = "x" * 200 + f" the RELEASE train {EVIL} leaves on fridays " + "y" * 200
    await web.services.store.messages.add(key, "in", text)
    await web.services.store.messages.add(SessionKey("terminal", "other"), "in", "nothing")
    status, body = await web.get("/sessions?q=release%20TRAIN")
    assert status == 200
    snippet = re.search(r'<span class="snippet">(.*?)</span>', body)
    assert snippet is not None, body
    assert snippet.group(1).startswith("…")
    assert "<mark>RELEASE train</mark>" in snippet.group(1)
    assert "&lt;script&gt;" in snippet.group(1) and snippet.group(1).endswith("…")
    assert "<script>alert" not in body
    status, body = await web.get("/sessions")
    assert 'class="snippet"' not in body  # no search: no snippet


async def test_the_login_page_takes_the_token_and_logout_ends_the_session(web: Web) -> None:
    status, body = await web.get("/login")
    assert status == 200 and 'name="token"' in body and 'type="password"' in body
    async with web.anon.get(web.base + "/tasks?q=a", allow_redirects=False) as r:
        body = await r.text()
        assert r.status == 401 and 'name="token"' in body
        assert 'name="next" value="/tasks?q=a"' in body
    token = (web.services.settings.home_dir / "web-token").read_text().strip()
    jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(cookie_jar=jar) as browser:
        form = {"token": "wrong" * 10, "next": "/tasks"}
        async with browser.post(web.base + "/login", data=form, allow_redirects=False) as r:
            assert r.status == 401 and 'name="token"' in await r.text()
        # A form posted from another site's page is refused, even with the token.
        evil = {"Origin": "http://evil.example"}
        form = {"token": token, "next": "/tasks"}
        async with browser.post(
            web.base + "/login", data=form, headers=evil, allow_redirects=False
        ) as r:
            assert r.status == 403
        cross = {"Sec-Fetch-Site": "cross-site", "Origin": "null"}
        async with browser.post(
            web.base + "/login", data=form, headers=cross, allow_redirects=False
        ) as r:
            assert r.status == 403
        async with browser.get(web.base + "/tasks", allow_redirects=False) as r:
            assert r.status == 401
        form = {"token": token, "next": "//evil.example/x"}
        async with browser.post(
            web.base + "/login", data=form, headers={"Origin": web.base}, allow_redirects=False
        ) as r:
            assert r.status == 303 and r.headers["Location"] == "/"  # never off-site
        async with browser.get(web.base + "/tasks", allow_redirects=False) as r:
            body = await r.text()
            assert r.status == 200 and 'action="/logout"' in body
        # Log out: the form's CSRF token is needed, then the session is over.
        async with browser.post(web.base + "/logout", data={}, allow_redirects=False) as r:
            assert r.status == 403
        csrf = web.csrf()
        async with browser.post(
            web.base + "/logout", data={"csrf": csrf}, allow_redirects=False
        ) as r:
            assert r.status == 303 and r.headers["Location"] == "/logged-out"
        async with browser.get(web.base + "/tasks", allow_redirects=False) as r:
            assert r.status == 401
    # A pasted login link works in the field too (once).
    link = web.auth.login_url(web.base)
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as browser:
        form = {"token": link, "next": "/costs"}
        async with browser.post(web.base + "/login", data=form, allow_redirects=False) as r:
            assert r.status == 303 and r.headers["Location"] == "/costs"
        async with browser.get(web.base + "/costs", allow_redirects=False) as r:
            assert r.status == 200
