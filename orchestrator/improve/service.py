"""Self-improvement: Fetch proposes a change to itself as a pull request, and only a
person merges it.

One ``/improve`` run, in the background like a task (progress to the phone; /stop,
/pause and /resume reach it through the task runner, which holds it as the chat's run):

1. GitHub is asked which branch is the base (a bad token or a spent rate limit ends the
   run here, before anything is made);
2. the remote is cloned into ``FETCH_HOME/improve/<id>`` on a new branch
   ``fetch/improve-<id>-<slug>`` (orchestrator/improve/checkout.py);
3. the harness works there in the kennel exactly as a task does (``TaskRunner.execute``:
   the relay holds the model key on the host), then the test command runs in the kennel;
4. the host commits with the hardened host git and pushes that one branch, checks on
   GitHub that it arrived, and opens the pull request (a draft when the tests failed).

Anything that fails after the push takes the branch back (or says that it could not), so
nothing is left half-done. The running installation is never written: the checkout is a
clone, the push goes to the remote, and the remote may not be the running checkout.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.errors import FetchError, GitError
from core.state import State
from harnesses.base import Harness, HarnessRegistry
from kennel.base import Kennel, KennelProcess
from orchestrator.config import Settings
from orchestrator.improve import body
from orchestrator.improve.checkout import Checkout, branch_name, resolve_remote, running_checkout
from orchestrator.improve.github import GitHub, GitHubError, PullExists, PullRequest
from orchestrator.improve.records import Improvement, SqliteImprovements
from orchestrator.messenger import Messenger
from orchestrator.session import Session
from orchestrator.store import Store
from orchestrator.supervisor import TaskSupervisor
from orchestrator.task import testrun
from orchestrator.task.progress import Progress
from orchestrator.task.runner import RunHandle, TaskRunner

log = logging.getLogger(__name__)

SELF = "fetch:self"  # the tasks row's repo column for a self-improvement run


@dataclass(slots=True)
class _Run:
    run_id: int
    request: str
    handle: RunHandle
    checkout: Checkout | None = None
    base: str = ""


class Improver:
    def __init__(
        self,
        *,
        settings: Settings,
        store: Store,
        messenger: Messenger,
        runner: TaskRunner,
        harnesses: HarnessRegistry,
        kennel: Kennel,
        supervisor: TaskSupervisor,
        github: Callable[[], GitHub] | None = None,
    ) -> None:
        self._settings = settings
        self._store = store
        self._messenger = messenger
        self._runner = runner
        self._harnesses = harnesses
        self._kennel = kennel
        self._supervisor = supervisor
        self.records = SqliteImprovements(store.db)
        self._github = github or self._client

    def _client(self) -> GitHub:
        cfg = self._settings.improve
        return GitHub(cfg.api_url, cfg.repo or "", cfg.token)

    async def start(self) -> None:
        """After a restart: runs cut short are marked so, what a killed run left on
        GitHub is settled, and their checkouts are removed."""
        for row in await self.records.interrupt_running():
            path = self._settings.home_dir / "improve" / str(row.id)
            await self._settle(row, path)
            await asyncio.to_thread(_remove, path)

    async def _settle(self, row: Improvement, path: Path) -> None:
        """A SIGKILL can land between the push and the pull request, or between opening
        the pull request and recording it. A pull request for the run's branch is recorded
        (proposed, as the run would have); a pushed branch without one is deleted again,
        so the remote holds nothing half-done. GitHub unreachable: said in /prs."""
        if not row.branch or self.problem() is not None:
            return
        github = self._github()
        try:
            pr = await github.find_pull(row.branch)
            if pr is not None:
                await self.records.update(
                    row.id,
                    status="proposed",
                    pr_number=pr.number,
                    pr_url=pr.url,
                    pr_state=pr.state,
                    detail="opened before Fetch restarted",
                )
                return
            on_github = await github.branch_sha(row.branch)
            if on_github is None:
                return  # nothing was pushed
            # The lease: only while the branch is where the run put it (head_sha is
            # recorded right after the push; a kill before that leaves GitHub's word).
            sha = row.head_sha or on_github
            cfg = self._settings.improve
            remote = await asyncio.to_thread(
                resolve_remote, cfg.remote, cfg.repo or "", running_checkout()
            )
            checkout = Checkout(path, remote, row.base, row.branch, cfg.token)
            checkout.pushed = sha
            await asyncio.to_thread(_git_dir_for_push, path)
            await asyncio.to_thread(checkout.delete_remote_branch)
            detail = f"Fetch restarted; the branch {row.branch} it had pushed is deleted again"
        except (GitHubError, GitError, OSError) as err:
            detail = f"Fetch restarted; ⚠️ the branch {row.branch} may stay ({err})"
        finally:
            await github.close()
        await self.records.update(row.id, detail=detail[:2000])

    # -- starting a run -------------------------------------------------------------------
    def problem(self) -> str | None:
        """Why /improve cannot run at all (configuration), in the phone's words."""
        cfg = self._settings.improve
        if not cfg.enabled:
            return (
                "Self-improvement is off. Set improve.enabled: true and improve.repo "
                "(owner/name on GitHub) in config.yaml, and FETCH_GITHUB_TOKEN."
            )
        if not cfg.token:
            return (
                "❌ No GitHub token: set FETCH_GITHUB_TOKEN (a token that may push "
                f"branches and open pull requests on {cfg.repo}) and restart Fetch. "
                "Nothing was changed."
            )
        return None

    async def improve(self, session: Session, request: str, requester: str) -> str | None:
        """Start a run; None when started (the phone hears the rest), else the refusal."""
        refused = self.problem()
        if refused:
            return refused
        if session.state is not State.ALERT:
            return (
                f"⏳ This chat is {session.state.value.lower()}: finish (or /stop) what is "
                "going on first."
            )
        key = session.key
        if self._runner.running(key) is not None:
            return _BUSY
        harness = self._harnesses.get(session.data.harness or self._runner.default_harness())
        avail = self._runner.availability(harness)
        if not avail.usable:
            return (
                f"❌ {harness.name} can't run: {avail.detail}.\n/harness shows what is available."
            )
        repo = self._settings.improve.repo or ""
        run_id = await self.records.create(key, requester, request, repo)
        task_id = await self._store.work.create_task(key, SELF, request, harness.name, requester)
        handle = RunHandle(task_id, harness.name, SELF, request, requester)
        if not self._runner.adopt(key, handle):
            await self.records.update(run_id, status="failed", detail="the chat was busy")
            await self._store.work.finish_task(task_id, "failed", "the chat was busy")
            return _BUSY
        handle.progress = Progress(
            self._messenger,
            key,
            harness.name,
            title=f"Improve #{run_id} · {repo} · {harness.name}",
            # No yes/no here: the tests run in the kennel, a person merges on GitHub.
            after=("tests, commit and push", "pull request (a person merges it)"),
        )
        first = await self._messenger.send(
            key,
            f"🛠 Improving Fetch (#{run_id}): {_short(request)}\nI work on a copy and open a "
            "pull request; I never merge it.\n\n" + handle.progress.render("coding"),
        )
        handle.progress.attach(first.message_id)
        if handle.stop_requested:  # a /stop while the line above was on its way
            self._runner.release(key, handle)
            await self.records.update(run_id, status="stopped", detail="stopped by /stop")
            await self._store.work.finish_task(task_id, "stopped", "stopped")
            return None
        run = _Run(run_id, request, handle)
        handle.task = self._supervisor.spawn(
            self._run(session, run, harness), name=f"run:{key.slug}:improve-{run_id}"
        )
        return None

    # -- the run ------------------------------------------------------------------------
    async def _run(self, session: Session, run: _Run, harness: Harness) -> None:
        key, handle = session.key, run.handle
        github = self._github()
        said = ""
        try:
            try:
                said = await self._propose(session, run, harness, github)
            except (FetchError, TimeoutError, OSError) as err:
                why = (
                    f"{harness.name} took longer than "
                    f"{self._settings.harness.timeout_seconds:.0f} s and was stopped"
                    if isinstance(err, TimeoutError)
                    else str(err)
                )
                left = await self._take_back(run, github)
                await self.records.update(run.run_id, status="failed", detail=f"{why}{left}"[:2000])
                await self._store.work.finish_task(handle.task_id, "failed", why[:2000])
                if handle.progress is not None:
                    await handle.progress.finish("failed")
                said = f"❌ /improve #{run.run_id} failed: {why}{left or _NOTHING_LEFT}"
        except asyncio.CancelledError:
            left = await asyncio.shield(self._take_back(run, github))
            status = "stopped" if handle.stop_requested else "interrupted"
            why = "stopped by /stop" if handle.stop_requested else "Fetch stopped mid-run"
            await asyncio.shield(
                self.records.update(run.run_id, status=status, detail=f"{why}{left}")
            )
            await asyncio.shield(self._store.work.finish_task(handle.task_id, status, "stopped"))
            if not handle.stop_requested:
                raise  # shutdown: the restart marks what is left
        finally:
            # Cleaned up before the last word, so the chat is free once it reads it.
            self._runner.release(key, handle)
            await github.close()
            if run.checkout is not None:
                await asyncio.to_thread(run.checkout.remove)
            await self._messenger.typing(key, False)
        if said:
            await self._messenger.send(key, said)

    async def _propose(self, session: Session, run: _Run, harness: Harness, github: GitHub) -> str:
        """Do the run; the owner's last word on it."""
        cfg, key, handle = self._settings.improve, session.key, run.handle
        run.base = cfg.base_branch or await github.default_branch()
        remote = await asyncio.to_thread(
            resolve_remote, cfg.remote, cfg.repo or "", running_checkout()
        )
        branch = branch_name(run.run_id, run.request)
        await self.records.update(run.run_id, base=run.base, branch=branch)
        path = self._settings.home_dir / "improve" / str(run.run_id)
        run.checkout = Checkout(path, remote, run.base, branch, cfg.token)
        repo = await asyncio.to_thread(run.checkout.clone)
        await self._messenger.typing(key, True)
        # The harness and the tests work on a layer over the clone; what comes back is
        # the change, read as data (orchestrator/boundary/). The clone itself is only
        # ever written by host git, on commit.
        try:
            change = await self._runner.execute(session, handle, harness, repo)
            tests = None if change.empty else await self._test(handle)
        finally:
            await self._runner.drop_layer(handle)
        if change.empty:
            await self.records.update(run.run_id, status="empty", detail="no file changed")
            await self._store.work.finish_task(handle.task_id, "empty")
            if handle.progress is not None:
                await handle.progress.finish("failed")
            return (
                f"✅ /improve #{run.run_id}: {harness.name} changed no file, so there is "
                "nothing to propose. No branch was pushed."
            )
        title = body.title(run.request)
        message = (
            f"{title}\n\n{run.request}\n\nProposed-by: Fetch (/improve #{run.run_id})\n"
            f"Requested-by: {handle.requester}"
        )
        sha = await asyncio.to_thread(run.checkout.commit, change, message)
        await asyncio.to_thread(run.checkout.push, sha)
        await self.records.update(run.run_id, head_sha=sha)
        landed = await github.branch_sha(branch)
        if landed != sha:
            raise GitHubError(
                f"the branch was pushed to {remote} but GitHub's {cfg.repo} does not have it "
                f"(it says {landed or 'no such branch'}): improve.remote and improve.repo "
                "must be the same repository"
            )
        text = body.body(run.request, change, tests, branch, run.base)
        try:
            pr = await github.open_pull(
                title=title, head=branch, base=run.base, body=text, draft=not body.passed(tests)
            )
        except PullExists as err:
            found = await github.find_pull(branch)
            if found is None:
                raise
            pr = found
            log.info("improve %s: %s; using #%s", run.run_id, err, pr.number)
        return await self._opened(run, pr, change_line=body.summary(change), tests=tests)

    async def _opened(
        self,
        run: _Run,
        pr: PullRequest,
        *,
        change_line: str,
        tests: testrun.SuiteResult | None,
    ) -> str:
        line = tests.line() if tests is not None else "🧪 tests: not run"
        await self.records.update(
            run.run_id,
            status="proposed",
            pr_number=pr.number,
            pr_url=pr.url,
            pr_state=pr.state,
            tests=line.splitlines()[0],
        )
        await self._store.work.finish_task(run.handle.task_id, "proposed", pr.url)
        if run.handle.progress is not None:
            await run.handle.progress.finish("done")
        draft = " (a draft: the tests failed)" if pr.draft else ""
        return (
            f"📬 Pull request #{pr.number} opened{draft}: {pr.url}\n"
            f"{change_line} on {run.checkout.branch if run.checkout else ''} → {run.base}\n"
            f"{line}\nI never merge it: review it on GitHub. /prs shows how it goes."
        )

    async def _test(self, handle: RunHandle) -> testrun.SuiteResult:
        cfg = self._settings.improve
        plan = testrun.SuitePlan("custom", cfg.test_command, "custom: " + cfg.test_command[:40])

        layer = handle.layer
        assert layer is not None  # TaskRunner.execute made it; _propose drops it
        await asyncio.to_thread(layer.fresh_state, testrun.STATE_NAME)

        async def started(proc: KennelProcess, deadline: asyncio.Timeout) -> None:
            # /pause and /stop reach the tests as they reach the harness.
            handle.proc, handle.deadline, handle.remaining = proc, deadline, None
            if handle.paused:
                await proc.pause()

        return await testrun.run(
            self._kennel,
            layer.tree,
            plan,
            on_start=started,
            limit_seconds=cfg.test_timeout_seconds,
            grace=self._settings.harness.stop_grace_seconds,
        )

    async def _take_back(self, run: _Run, github: GitHub) -> str:
        """Delete the branch this run pushed (nothing half-done); the words for the
        owner ('' when nothing had been pushed)."""
        checkout = run.checkout
        if checkout is None or checkout.pushed is None:
            return ""
        branch = checkout.branch
        try:
            await asyncio.to_thread(checkout.delete_remote_branch)
        except GitError as err:
            return f"\n⚠️ The branch {branch} stays on the remote ({err}); delete it by hand."
        return f"\nThe branch {branch} I had pushed is deleted again; nothing is left."

    # -- /prs -----------------------------------------------------------------------------
    async def listing(self) -> str:
        rows = await self.records.recent()
        if not rows:
            return "No /improve runs yet. /improve <what> proposes a change to me as a PR."
        note = ""
        stale = [r for r in rows if r.pr_number is not None and r.pr_state in ("open", "")]
        if stale and self.problem() is None:
            github = self._github()
            try:
                for row in stale:
                    assert row.pr_number is not None
                    pr = await github.pull(row.pr_number)
                    if pr.state != row.pr_state:
                        await self.records.update(row.id, pr_state=pr.state)
                rows = await self.records.recent()
            except GitHubError as err:
                note = f"\n⚠️ Could not ask GitHub ({err}); states as last seen."
            finally:
                await github.close()
        return _render(rows, self._settings.improve.repo or "") + note


_BUSY = "⏳ A run is going on in this chat; /stop it or wait, then /improve again."
_NOTHING_LEFT = "\nNothing was pushed; the running Fetch is unchanged."
_ICON = {"open": "🟢 open", "merged": "🟣 merged", "closed": "⚪ closed"}


def _render(rows: list[Improvement], repo: str) -> str:
    lines = [f"Fetch's pull requests on {repo} (I never merge; you do):"]
    for r in rows:
        if r.pr_number is not None:
            state = _ICON.get(r.pr_state, r.pr_state or "?")
            lines.append(f"• PR #{r.pr_number} {state}: {_short(r.request, 60)}\n  {r.pr_url}")
        else:
            why = f": {_short(r.detail, 80)}" if r.detail else ""
            lines.append(f"• /improve #{r.id} {r.status}{why} ({_short(r.request, 40)})")
    return "\n".join(lines)


def _remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["SELF", "Improver"]


def _git_dir_for_push(path: Path) -> None:
    """Deleting a remote branch is a push, which needs a repository to push from: the
    killed run's scratch clone when it is there, else an empty one made in its place."""
    if not (path / ".git").is_dir():
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(path)], check=True, capture_output=True)
