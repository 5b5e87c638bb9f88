"""Every dashboard page over real HTTP: 200 with the login cookie, refused without it
(never data), escaped everywhere, CSRF on every change, search and paging."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import aiohttp

from channels.terminal import TerminalChannel
from core.events import SessionKey
from orchestrator.app import build_app
from orchestrator.config import Settings
from orchestrator.dashboard import ACTIONS, PAGES
from orchestrator.dashboard.render import CSP
from orchestrator.store.db import key_str
from orchestrator.store.usage import UsageRow
from tests.dashboard.conftest import Web, start_web, stop_web

EVIL = "<script>alert('pwned')</script>"
SECRET_TEXT = "the secret message text 7731"


async def test_every_page_answers_with_the_cookie_and_a_strict_csp(web: Web) -> None:
    for path, title in PAGES:
        async with web.client.get(web.base + path, allow_redirects=False) as r:
            body = await r.text()
            assert r.status == 200, (path, body[:500])
            assert r.headers["Content-Security-Policy"] == CSP
            assert "'unsafe-inline'" not in CSP
            assert f"<title>Fetch · {title}</title>" in body
            # No inline script: every <script> has a src on Fetch itself.
            for tag in re.findall(r"<script[^>]*>", body):
                assert 'src="/static/dash/' in tag, tag
            assert "http://" not in body.replace(web.base, "") and "https://" not in body


async def test_every_page_and_action_is_refused_without_the_cookie(web: Web) -> None:
    key = SessionKey("terminal", "owner")
    await web.services.store.messages.add(key, "in", SECRET_TEXT)
    paths = [p for p, _t in PAGES] + [f"/sessions/{key_str(key)}", "/tasks/1"]
    for path in paths:
        async with web.anon.get(web.base + path, allow_redirects=False) as r:
            body = await r.text()
            assert r.status == 401, path
            # The login form only brings the browser back to the address it asked for.
            assert f'name="next" value="{path}"' in body, path
            body = body.replace(f'name="next" value="{path}"', "")
            assert SECRET_TEXT not in body and "terminal:owner" not in body
            assert "login link" in body
    for _method, route in ACTIONS:
        path = route.replace("{id}", "1").replace("{verb}", "pause")
        async with web.anon.post(web.base + path, data={"csrf": web.csrf()}) as r:
            assert r.status == 401, path


async def test_static_assets_are_served_by_fetch(web: Web) -> None:
    for name, kind in (("dash.css", "text/css"), ("dash.js", "text/javascript")):
        async with web.anon.get(f"{web.base}/static/dash/{name}") as r:
            assert r.status == 200 and r.content_type == kind
            assert len(await r.read()) > 100
    for bad in ("../render.py", "nope.css", ".hidden", "%2e%2e%2fassets.py"):
        async with web.anon.get(f"{web.base}/static/dash/{bad}") as r:
            assert r.status == 404, bad


async def test_what_came_from_outside_is_escaped_on_every_page(web: Web) -> None:
    s = web.services
    key = SessionKey("terminal", "owner")
    await s.store.sessions.save(key, "resting", {})
    await s.store.messages.add(key, "in", f"hello {EVIL}")
    task = await s.store.work.create_task(key, "demo", f"fix {EVIL}", "demo")
    await s.store.work.finish_task(task, "failed", f"died {EVIL}")
    await s.store.work.set_task_checks(task, [f"pytest {EVIL}"])
    s.store.usage.record(
        UsageRow("relay", model=f"m{EVIL}", task=task, status=500, error=EVIL, session=key_str(key))
    )
    await s.store.usage.flush()
    s.journal.append(key, "tool", f"tool{EVIL}", ms=12.5, ok=False)
    s.journal.append(key, "harness", f"event {EVIL}", task=task, kind="text")
    s.journal.append(key, "harness", f"edit README.md {EVIL}", task=task, kind="tool_use")
    pages = [
        "/sessions",
        "/sessions?q=hello",
        f"/sessions/{key_str(key)}",
        "/tasks",
        f"/tasks/{task}",
        "/errors",
        "/costs",
        f"/sessions?q={EVIL}",
    ]
    for path in pages:
        status, body = await web.get(path)
        assert status == 200, path
        assert "<script>alert" not in body, path
    status, body = await web.get(f"/tasks/{task}")
    assert "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;" in body
    assert "tool&lt;script&gt;" not in body  # tool rows belong to the session page
    status, body = await web.get(f"/sessions/{key_str(key)}")
    assert "tool&lt;script&gt;" in body and "12 ms" in body
    # The replay shows the harness's steps; its streamed prose is on the task's page.
    assert "edit README.md &lt;script&gt;" in body and "event &lt;script&gt;" not in body
    status, body = await web.get(f"/tasks/{task}")
    assert "event &lt;script&gt;" in body and "edit README.md &lt;script&gt;" in body
    # The owner's MCP servers' calls of the task (mcp.jsonl), escaped like the rest; a
    # bad line and another task's call are not shown.
    record = s.settings.home_dir / "mcp.jsonl"
    lines = [
        {
            "at": 1.0,
            "task": task,
            "server": "files",
            "tool": f"read{EVIL}",
            "outcome": "ok",
            "ms": 3,
        },
        {"at": 2.0, "task": task + 1, "server": "other", "tool": "x", "outcome": "ok", "ms": 1},
        {"at": 3.0, "task": task, "server": "files", "tool": "w", "outcome": "refused", "ms": 9},
    ]
    record.write_text(
        "\n".join(json.dumps(x) for x in lines[:2]) + "\nnot json\n" + json.dumps(lines[2]) + "\n"
    )
    status, body = await web.get(f"/tasks/{task}")
    assert "Your MCP servers" in body and "read&lt;script&gt;" in body and "refused" in body
    assert "other" not in body.split("Your MCP servers")[1]


async def test_sessions_search_and_paging(web: Web) -> None:
    s = web.services
    for i in range(60):
        key = SessionKey("webhook", f"chat{i:02d}")
        await s.store.sessions.save(key, "resting", {})
        await s.store.messages.add(key, "in", "needle here" if i == 7 else f"plain {i}")
    status, body = await web.get("/sessions?q=needle")
    assert status == 200
    assert "webhook:chat07" in body and "webhook:chat08" not in body
    status, body = await web.get("/sessions?q=100%25")  # a literal %, not a wildcard
    assert status == 200 and "webhook:chat" not in body
    status, body = await web.get("/sessions")
    assert body.count('href="/sessions/webhook') == 50 and "older →" in body
    status, body = await web.get("/sessions?offset=50")
    assert body.count('href="/sessions/webhook') >= 10 and "← newer" in body
    status, body = await web.get("/sessions?offset=junk")
    assert status == 200


async def test_unknown_session_and_task_are_404_pages(web: Web) -> None:
    for path in ("/sessions/nope:nothing", "/sessions/x", "/tasks/99999", "/tasks/abc"):
        status, body = await web.get(path)
        assert status == 404, path
        assert "Nothing here" in body


async def test_a_post_without_the_csrf_token_changes_nothing(web: Web) -> None:
    s = web.services
    assert s.scheduler is not None
    job = await s.scheduler.jobs.add(
        kind="reminder",
        text="stretch",
        key=SessionKey("terminal", "owner"),
        cron="0 9 * * *",
        tz="UTC",
        spec="every day at 9",
        missed="skip",
        next_at=4102444800.0,
    )
    for data in ({}, {"csrf": "0" * 64}):
        status, _loc, body = await web.post(f"/jobs/{job.id}/pause", data)
        assert status == 403, body
    again = await s.scheduler.jobs.get(job.id)
    assert again is not None and again.status == "active"
    status, location, _ = await web.post(f"/jobs/{job.id}/pause", {"csrf": web.csrf()})
    assert status == 303 and "paused" in location
    again = await s.scheduler.jobs.get(job.id)
    assert again is not None and again.status == "paused"


async def test_costs_show_money_per_day_model_task_and_the_budget_bar(
    web_settings: Callable[..., Settings],
) -> None:
    web = await start_web(web_settings(FETCH__BUDGETS__DAILY_USD="2", FETCH__BUDGETS__TASK_USD="1"))
    try:
        s = web.services
        key = SessionKey("terminal", "owner")
        task = await s.store.work.create_task(key, "demo", "costly", "demo")
        for model, cost in (("model-a", 0.75), ("model-b", 0.25), ("model-a", 0.5)):
            s.store.usage.record(UsageRow("relay", model=model, cost=cost, task=task))
        await s.store.usage.flush()
        status, body = await web.get("/costs")
        assert status == 200
        assert "$1.50" in body  # today's total
        assert "model-a" in body and "$1.25" in body and "model-b" in body
        assert "today (daily budget): $1.50 of $2.00 (75%)" in body
        assert f'href="/tasks/{task}"' in body and "of $1.00" in body
        s.store.usage.record(UsageRow("orchestrator", model="model-c", cost=0.5))  # queued
        status, body = await web.get("/costs")  # the kept sums take the new call in
        assert "today (daily budget): $2.00 of $2.00 (100%)" in body and "model-c" in body
    finally:
        await stop_web(web)


async def test_the_composition_root_serves_the_dashboard(
    web_settings: Callable[..., Settings],
) -> None:
    """``build_app`` as ``fetch`` and ``fetch serve`` call it: the dashboard is mounted
    on the one listener, and the printed login link opens it."""
    app = build_app(web_settings(), terminal=TerminalChannel("owner"))
    async with app:
        assert app.http is not None and app.web_auth is not None
        assert ("GET", "/sessions") in app.http.routes
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar) as client:
            async with client.get(app.http.url + "/costs") as r:
                assert r.status == 401
            async with client.get(app.web_auth.login_url(app.http.url)) as r:
                assert r.status == 200 and "<title>Fetch · Sessions</title>" in await r.text()


async def test_a_page_that_fails_says_so_and_the_listener_keeps_serving(web: Web) -> None:
    # A damaged table under the tasks page: an error page, then everything else still works.
    await web.services.store.db.write("ALTER TABLE tasks RENAME TO tasks_gone")
    status, body = await web.get("/tasks")
    assert status == 500 and "This page failed" in body and "no such table" in body
    status, _ = await web.get("/sessions")
    assert status == 200


async def test_every_action_needs_the_csrf_token_even_with_the_cookie(web: Web) -> None:
    """A logged-in browser's POST without the page's token (a forged form) is refused
    before any handler runs; the same POST with it is not."""
    for _method, route in [*ACTIONS, ("POST", "/logout")]:
        path = route.replace("{id}", "1").replace("{verb}", "pause")
        for data in ({}, {"csrf": "0" * 64}):
            async with web.client.post(web.base + path, data=data, allow_redirects=False) as r:
                assert r.status == 403, (path, data)
        if path != "/logout":  # last: it ends the session
            status, _location, _body = await web.post(path, {"csrf": web.csrf()})
            assert status != 403, path
