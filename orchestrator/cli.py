"""The ``fetch`` command: ``fetch`` (= ``fetch run``) and ``fetch doctor``.

``--help`` and ``--version`` answer before anything heavy is imported (the app, the
database driver, the model client): the modules below are imported where they are used.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import logging
import os
import signal
import sys
from contextlib import suppress
from typing import TYPE_CHECKING

from core.errors import ConfigError, FetchError

if TYPE_CHECKING:
    from pathlib import Path

    from orchestrator.app import App
    from orchestrator.config import Settings
    from orchestrator.homelock import HomeLock


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fetch-assistant")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def _say(text: str) -> None:
    """Print to stdout; a reader that went away (``fetch serve | tee`` after Ctrl-C)
    must not turn into an exception, nor into a second one at exit."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _settings() -> Settings:
    from orchestrator.config import load_settings

    try:
        return load_settings()
    except ConfigError as err:
        print(f"fetch: configuration error: {err}", file=sys.stderr)
        raise SystemExit(2) from None


def _check(settings: Settings) -> None:
    """The checks a start makes (orchestrator/startcheck.py), before anything starts: the
    same for ``fetch``, ``fetch serve`` and ``fetch doctor``, with the same one line."""
    from orchestrator.startcheck import check_start

    try:
        check_start(settings)
    except ConfigError as err:
        print(f"fetch: configuration error: {err}", file=sys.stderr)
        raise SystemExit(2) from None


class _QuietFileHandler(logging.FileHandler):
    """A log line that cannot be written (full disk) is lost, never a traceback on the
    owner's terminal; the store's own errors say what failed."""

    def handleError(self, record: logging.LogRecord) -> None:
        return None


def _logging(settings: Settings) -> None:
    handler = _QuietFileHandler(settings.home_dir / "fetch.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(settings.log_level)


async def _run(settings: Settings, *, interactive: bool = True) -> int:
    from channels.terminal import TerminalChannel
    from orchestrator.app import build_app
    from orchestrator.preflight import describe

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    presses = 0
    eof = asyncio.Event()

    def on_signal() -> None:
        nonlocal presses
        presses += 1
        if presses > 1:  # a second Ctrl-C means now
            raise SystemExit(130)
        stop.set()  # first: printing may fail when the pipe's reader died of the same ^C
        _say("\nfetch: stopping (Ctrl-C again to force)")

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    terminal = (
        TerminalChannel(
            settings.terminal.chat, out=sys.stdout, read_stdin=True, on_eof=eof, hold_input=True
        )
        if interactive
        else None
    )
    try:
        # Building writes the web token into the home: a full disk fails here already.
        app = build_app(settings, terminal=terminal)
        await app.__aenter__()
    except Exception as err:  # one line for the owner; the details go to fetch.log
        logging.getLogger(__name__).exception("start-up failed")
        print(f"fetch: cannot start: {describe(err, settings.home_dir)}", file=sys.stderr)
        return 2
    try:
        try:  # entered above, so a start-up failure gets its own message
            assert app.services is not None
            s = app.services
            channels = ", ".join(c.name for c in app.channels) or "none"
            web = app.http is not None and app.http.routes and app.web_off is None
            listen = f" · http {app.http.url}" if web and app.http is not None else ""
            print(
                f"🐕 Fetch is ready. workspace: {s.workspace.root} "
                f"({', '.join(s.workspace.repos()) or 'no repos'})\n"
                f"   harness: {s.runner.default_harness()} · channels: {channels}{listen}"
                + (" · type /help · Ctrl-C quits" if interactive else ""),
                flush=True,
            )
            if app.web_off is not None:
                print(f"   ⚠️ web pages off: {app.web_off}", flush=True)
            elif app.web_auth is not None and app.http is not None and app.http.routes:
                # The real bound address (port 0 picks one): the owner's key to the pages.
                login = app.web_auth.login_url(settings.http.link_base(app.http.port))
                print(f"   🔑 web (dashboard, chat): {login}", flush=True)
            if s.kennel.name == "unsafe-local":
                print(f"   ⚠️ sandbox: {s.kennel.isolation()}", flush=True)
            if s.scheduler is not None and not s.scheduler.running:
                print(f"   ⚠️ {s.scheduler.status_line()}", flush=True)
            if terminal is not None:
                terminal.open_input()
            await _wait_for_the_end(app, eof, stop)
        finally:
            await app.__aexit__(None, None, None)
    except (ConfigError, FetchError) as err:
        print(f"fetch: {err}", file=sys.stderr)
        return 2
    _say("fetch: stopped.")
    return 0


async def _wait_for_the_end(app: App, eof: asyncio.Event, stop: asyncio.Event) -> None:
    """Until ``stop`` (a signal), or end of input (a pipe) once what was asked before it
    is finished. The waits are this function's tasks: ended (cancelled and awaited)
    before it returns, so none outlives the app."""
    from core.tasks import cancel_and_wait

    eof_wait = asyncio.create_task(eof.wait(), name="cli:eof")
    stop_wait = asyncio.create_task(stop.wait(), name="cli:stop")
    drain: asyncio.Task[None] | None = None
    try:
        await asyncio.wait({eof_wait, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
        if eof.is_set() and not stop.is_set():
            drain = asyncio.create_task(app.drain(), name="cli:drain")
            await asyncio.wait({drain, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
            if drain.done() and not drain.cancelled() and drain.exception() is not None:
                logging.getLogger(__name__).error("drain failed", exc_info=drain.exception())
    finally:
        await cancel_and_wait(drain, stop_wait, eof_wait)


def _doctor(settings: Settings) -> int:
    from identity import load_pack
    from kennel.choice import choose
    from orchestrator.app import SHIPPED_DATA, build_harnesses, build_kennel, identity_dir
    from orchestrator.skills.doctor import report as skills_report
    from orchestrator.workspace import Workspace

    print(f"home:      {settings.home_dir}")
    if settings.store.url:
        from orchestrator.store.pg import probe, where

        said = asyncio.run(probe(settings.store.url))
        print(f"database:  PostgreSQL at {where(settings.store.url)} (store.url): {said}")
    else:
        print(f"database:  {settings.db_path}")
    ws = Workspace(settings.workspace_dir)
    print(f"workspace: {ws.root} ({', '.join(ws.repos()) or 'no repos'})")
    print(f"identity:  {identity_dir(settings)}")
    for line in skills_report(settings.home_dir / "skills", SHIPPED_DATA / "skills", ws):
        print(line)
    try:
        pack = load_pack(SHIPPED_DATA / "agents", settings.home_dir / "agents")
        print(f"pack:      {', '.join(pack.names())} (default: {pack.routing.default})")
        for problem in pack.problems:
            print(f"⚠️ pack: {problem}")
    except FetchError as err:
        print(f"pack:      ERROR {err}")
    chain = " -> ".join(f"{e.name} ({e.base_url})" for e in settings.model.providers)
    shown = settings.model.base_url or chain or "none (tasks go straight to the harness)"
    print(f"model:     {shown}")
    voice = settings.transcription
    heard = " -> ".join(f"{e.name} ({e.base_url})" for e in voice.entries())
    print(
        f"voice:     {heard}, {voice.model}, up to {voice.max_seconds} s"
        if heard
        else "voice:     none (voice notes are answered with how to set transcription.base_url)"
    )
    try:
        choice = choose(settings.kennel)
        print(f"backend:   {choice.reason}")
        kennel = build_kennel(settings, choice)
        print(f"kennel:    {kennel.isolation()}")
        from kennel.limits import doctor_lines

        for line in doctor_lines(settings.kennel, choice.backend):
            print(line)  # which uid the CLI runs as and why; which limits apply
        from orchestrator.boundary.layer import describe_kind

        # Asked without mounting anything (the Docker kennel's answer would make one).
        could = getattr(kennel, "could_mount", None)
        mounts = could() if callable(could) else kennel.host_mounts
        from kennel.remote_engine import is_remote

        travels = choice.backend == "docker" and is_remote(settings.kennel.docker.host)
        print(f"layers:    {describe_kind(settings.home_dir / 'runs', mounts, travels)}")
        print(f"setup:     {_setup_line(settings)}")
        for line in _mcp_lines(settings):
            print(line)
        if choice.backend == "bwrap":
            from kennel.bwrap import toolchains

            found, missing = toolchains(os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"))
            gone = f"; missing: {', '.join(missing)}" if missing else ""
            print(f"tools:     the host's, read-only: {', '.join(found) or 'none'}{gone}")
    except FetchError as err:
        print(f"kennel:    ERROR {err}")
    for harness in build_harnesses().all():
        installed = harness.executable() is not None
        if harness.provider is None:
            detail = "no model needed"
        else:
            from kennel.credentials import SIGN_IN_NOTES, credential_for

            provider = settings.providers.get(harness.provider)
            cred = credential_for(
                settings.home_dir, harness.provider, provider, harness.name, settings.providers
            )
            none = f"no {harness.provider} key (or a sign-in: fetch login {harness.name})"
            detail = (f"{cred.shown} configured" if cred else none) + (
                f"; {SIGN_IN_NOTES[harness.name]}" if harness.name in SIGN_IN_NOTES else ""
            )
        print(
            f"harness:   {harness.name}: {'installed' if installed else 'NOT installed'}, {detail}"
        )
    return 0


def _login(settings: Settings) -> int:
    """A fresh one-time login link, minted from the home's web token: the running Fetch
    accepts it without being asked (``channels/http/sessions.py``)."""
    from channels.http.auth import WebAuth

    try:
        auth = WebAuth.from_home(settings.home_dir)
    except OSError as err:
        print(f"fetch: cannot read the web token in {settings.home_dir}: {err}", file=sys.stderr)
        return 2
    print(auth.login_url(settings.http.link_base()))
    return 0


def _sign_in(settings: Settings, harness: str) -> int:
    """``fetch login claude-code``: keep a Claude subscription's token on the host
    (FETCH_HOME/credentials, 0600); the CLI in a kennel never gets it."""
    from kennel.credentials import SIGN_IN_NOTES, save_token

    if harness in SIGN_IN_NOTES:
        print(f"fetch: {harness}: {SIGN_IN_NOTES[harness]}", file=sys.stderr)
        return 2
    if harness == "codex":
        return _sign_in_codex(settings)
    if harness == "gemini-cli":
        return _sign_in_gemini(settings)
    if harness == "copilot":
        return _sign_in_copilot(settings)
    if harness != "claude-code":
        print(
            f"fetch: no sign-in for {harness!r} (claude-code, codex, gemini-cli, copilot)",
            file=sys.stderr,
        )
        return 2
    print(
        "Run `claude setup-token` on a machine with a browser, sign in with your Claude "
        "subscription, and paste the token it prints (it stays on this host; the coding "
        "CLI in the kennel only ever gets a stand-in):",
        flush=True,
    )
    token = getpass.getpass("token: ") if sys.stdin.isatty() else sys.stdin.readline()
    try:
        path = save_token(settings.home_dir, "anthropic", token)
    except (ValueError, OSError) as err:
        print(f"fetch: {err}", file=sys.stderr)
        return 2
    print(f"✅ Kept in {path} (0600). claude-code now runs on your subscription", end="")
    key = settings.providers.get("anthropic")
    print(" (an ANTHROPIC_API_KEY is set too, and wins)." if key and key.api_key else ".")
    return 0


def _sign_in_codex(settings: Settings) -> int:
    """``fetch login codex``: keep codex's ChatGPT sign-in on the host (FETCH_HOME/
    credentials/openai.json, 0600): its auth.json (found in $CODEX_HOME or ~/.codex, or
    piped in), or a pasted refresh token, exchanged at once for the rest."""
    from pathlib import Path

    from kennel.credentials import path_for, save_chatgpt
    from kennel.relay_signin import DEFAULT_TOKEN_URL, ChatGptSignIn, SignInError, SignInExpired

    home = Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")
    found = home / "auth.json"
    if sys.stdin.isatty() and found.is_file():
        print(f"Importing codex's ChatGPT sign-in from {found}.", flush=True)
        text = found.read_text(encoding="utf-8", errors="replace")
    elif sys.stdin.isatty():
        print(
            "Run `codex login` on a machine with a browser and copy its ~/.codex/auth.json "
            "here (or run this again with it piped in: fetch login codex < auth.json), or "
            "paste its refresh token (it stays on this host; the CLI in the kennel only "
            "ever gets a stand-in):",
            flush=True,
        )
        text = getpass.getpass("refresh token: ")
    else:
        text = sys.stdin.read(1024 * 1024)
    text = text.strip()
    provider = settings.providers.get("openai")
    try:
        if text.startswith("{"):
            path = save_chatgpt(settings.home_dir, text)
        else:
            if not text or any(c.isspace() for c in text) or len(text) > 16384:
                raise ValueError("that is neither codex's auth.json nor a refresh token")
            token_url = (provider.token_url if provider else None) or DEFAULT_TOKEN_URL
            path = path_for(settings.home_dir, "openai")
            asyncio.run(ChatGptSignIn(path, token_url).exchange(text))
    except SignInExpired as err:
        print(f"fetch: that refresh token was refused ({err})", file=sys.stderr)
        return 2
    except (ValueError, SignInError, OSError) as err:
        print(f"fetch: {err}", file=sys.stderr)
        return 2
    print(f"✅ Kept in {path} (0600). codex now runs on your ChatGPT sign-in", end="")
    print(" (an OPENAI_API_KEY is set too, and wins)." if provider and provider.api_key else ".")
    # OpenAI's refresh tokens are used once: after Fetch's first refresh, a codex that
    # still holds this one (on this machine or another) must sign in again.
    print(
        "Fetch refreshes it from now on, and a refresh token works once: a codex elsewhere "
        "that still holds this sign-in will have to sign in again after that."
    )
    return 0


def _sign_in_copilot(settings: Settings) -> int:
    """``fetch login copilot``: keep a GitHub token for the Copilot CLI on the host
    (FETCH_HOME/credentials/github.json, 0600)."""
    from kennel.credentials import save_github

    print(
        "Paste a GitHub token with Copilot access (a fine-grained token with the Copilot "
        "Requests permission, or what `gh auth token` prints; it stays on this host; the "
        "CLI in the kennel only ever gets a stand-in):",
        flush=True,
    )
    token = getpass.getpass("token: ") if sys.stdin.isatty() else sys.stdin.readline()
    try:
        path = save_github(settings.home_dir, token)
    except (ValueError, OSError) as err:
        print(f"fetch: {err}", file=sys.stderr)
        return 2
    provider = settings.providers.get("openai")
    print(f"✅ Kept in {path} (0600). copilot now runs on your GitHub sign-in", end="")
    print(" (an OPENAI_API_KEY is set too, and wins)." if provider and provider.api_key else ".")
    return 0


def _sign_in_gemini(settings: Settings) -> int:
    """``fetch login gemini-cli``: keep Gemini CLI's Google sign-in on the host (FETCH_HOME/
    credentials/gemini.json, 0600): its oauth_creds.json, found in $GEMINI_CLI_HOME/.gemini
    or ~/.gemini, or piped in."""
    from pathlib import Path

    from kennel.credentials import path_for
    from kennel.relay_signin_google import save_google

    home = Path(os.environ.get("GEMINI_CLI_HOME") or Path.home()) / ".gemini"
    found = home / "oauth_creds.json"
    if sys.stdin.isatty() and found.is_file():
        print(f"Importing Gemini CLI's Google sign-in from {found}.", flush=True)
        text = found.read_text(encoding="utf-8", errors="replace")
    elif sys.stdin.isatty():
        print(
            "Sign Gemini CLI in with Google on a machine with a browser, then run this again "
            "with its ~/.gemini/oauth_creds.json piped in: fetch login gemini-cli < "
            "oauth_creds.json (it stays on this host; the CLI in the kennel only ever gets a "
            "stand-in).",
            file=sys.stderr,
        )
        return 2
    else:
        text = sys.stdin.read(1024 * 1024)
    path = path_for(settings.home_dir, "gemini")
    try:
        save_google(path, text.strip())
    except (ValueError, OSError) as err:
        print(f"fetch: {err}", file=sys.stderr)
        return 2
    provider = settings.providers.get("gemini")
    print(f"✅ Kept in {path} (0600). gemini-cli now runs on your Google sign-in", end="")
    print(" (a GEMINI_API_KEY is set too, and wins)." if provider and provider.api_key else ".")
    return 0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="fetch", description="Fetch, from your phone.")
    parser.add_argument("--version", action="version", version=f"fetch {_version()}")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("run", help="run Fetch with the terminal channel (default)")
    sub.add_parser("serve", help="run Fetch without a terminal (Docker, services)")
    sub.add_parser("doctor", help="check configuration, sandbox and harnesses")
    login = sub.add_parser(
        "login",
        help="print a new login link for the web pages (works once); "
        "`fetch login claude-code` keeps a Claude subscription's token, "
        "`fetch login codex|gemini-cli|copilot` a ChatGPT, Google or GitHub sign-in",
    )
    login.add_argument(
        "harness",
        nargs="?",
        help="claude-code (a Claude subscription), codex (a ChatGPT sign-in), "
        "gemini-cli (a Google sign-in) or copilot (a GitHub token)",
    )
    whatsapp = sub.add_parser("whatsapp", help="WhatsApp: link your phone")
    wa_sub = whatsapp.add_subparsers(dest="whatsapp_command", required=True)
    pair = wa_sub.add_parser("pair", help="link by QR code, or by pairing code with --phone")
    pair.add_argument("--phone", help="your number with country code, digits only")
    config = sub.add_parser("config", help="settings: where a value comes from")
    config_sub = config.add_subparsers(dest="config_command", required=True)
    explain = config_sub.add_parser(
        "explain", help="a layered setting's value and the source of each layer"
    )
    explain.add_argument("key", help="e.g. permissions.mode, permissions.deny")
    explain.add_argument("--repo", help="a repository of the workspace")
    explain.add_argument("--chat", help="a chat, as channel:chat")
    store = sub.add_parser("store", help="the store: copy it between SQLite and PostgreSQL")
    store_sub = store.add_subparsers(dest="store_command", required=True)
    copy = store_sub.add_parser(
        "copy", help="copy every table into an empty store (SQLite file <-> PostgreSQL URL)"
    )
    copy.add_argument("--from", dest="source", required=True, help="a fetch.db or a URL")
    copy.add_argument("--to", dest="target", required=True, help="a URL or a fetch.db")
    args = parser.parse_args(argv)
    if args.command == "store":
        raise SystemExit(_store_copy(args.source, args.target))
    settings = _settings()
    if args.command in (None, "run", "serve", "doctor"):
        _check(settings)
    if args.command == "config":
        raise SystemExit(_config_explain(settings, args.key, args.repo, args.chat))
    if args.command == "doctor":
        raise SystemExit(_doctor(settings))
    if args.command == "login" and args.harness:
        raise SystemExit(_sign_in(settings, args.harness))
    if args.command == "login":
        raise SystemExit(_login(settings))
    if args.command == "whatsapp":
        from channels.whatsapp.pairing import run_pair

        raise SystemExit(run_pair(settings.home_dir, args.phone))
    lock = _claim_home(settings)
    _logging(settings)
    code: int | str | None = 0
    try:
        code = asyncio.run(_run(settings, interactive=args.command != "serve"))
    except KeyboardInterrupt:
        pass
    except SystemExit as forced:  # the second Ctrl-C
        code = forced.code
    lock.release()
    _exit(code if isinstance(code, int) else 1)


def _memory_side(where: str) -> str | Path:
    """Where memory lives for a store at ``where``: beside the store's tables on
    PostgreSQL, else ``memory/memory.db`` next to the ``fetch.db`` (as in a home)."""
    from pathlib import Path

    if where.startswith(("postgresql://", "postgres://")):
        return where
    return Path(where).parent / "memory" / "memory.db"


def _store_copy(source: str, target: str) -> int:
    """``fetch store copy``: the tables, counted and sampled, then memory's (its own
    file on SQLite); one line on failure."""
    from orchestrator.memory.copy import MemoryCopyError, copy_memory_sync
    from orchestrator.store.copy import copy_store, describe

    try:
        copied = asyncio.run(copy_store(source, target))
    except FetchError as err:
        print(f"fetch: store copy: {err}", file=sys.stderr)
        return 2
    print(describe(copied, source, target))
    mem_from, mem_to = _memory_side(source), _memory_side(target)
    if not isinstance(mem_from, str) and not mem_from.is_file():
        print(f"memory: none at {mem_from}, nothing to copy")
        return 0
    try:
        moved = copy_memory_sync(mem_from, mem_to)
    except (MemoryCopyError, FetchError, OSError, Exception) as err:
        # MemoryCopyError and the drivers' own (asyncpg, sqlite3) alike: one line.
        logging.getLogger(__name__).debug("memory copy failed", exc_info=True)
        print(f"fetch: store copy: the tables were copied, memory was not: {err}", file=sys.stderr)
        return 2
    print(
        f"memory: {moved.items} items, {moved.vectors} vectors, {moved.watermarks} "
        "archive marks (counted, and a sample compared column by column)"
    )
    return 0


def _exit(code: int) -> None:
    """End the process without the interpreter's finalization. Everything Fetch owns is
    closed by now; what may be left are daemon threads it abandoned on purpose (the stdin
    reader, memory's background import). Finalization kills those mid-flight, and one
    inside a native extension's import aborts the process ("exception not rethrown")."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def _config_explain(settings: Settings, key: str, repo: str | None, chat: str | None) -> int:
    from orchestrator.config import default_config_path
    from orchestrator.permissions.explain import explain

    print(
        explain(
            settings,
            key,
            config_path=default_config_path(os.environ),
            env=os.environ,
            repo=repo,
            chat=chat,
        )
    )
    return 0


def _claim_home(settings: Settings) -> HomeLock:
    """A writable home, no other Fetch on it, a database that is safe to open; or one
    line saying which is not so, and exit code 2."""
    from orchestrator.homelock import HomeLock
    from orchestrator.preflight import check_database, check_home, describe

    lock = HomeLock(settings.home_dir)
    try:
        check_home(settings.home_dir)
        lock.acquire()
        check_database(settings.db_path)
    except OSError as err:
        print(f"fetch: cannot start: {describe(err, settings.home_dir)}", file=sys.stderr)
        raise SystemExit(2) from None
    except FetchError as err:
        print(f"fetch: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    return lock


def _setup_line(settings: Settings) -> str:
    """``fetch doctor``'s word on the setup phase: on or off, and what it may reach."""
    setup = settings.kennel.setup
    if not setup.enabled:
        return "off (kennel.setup.enabled: false): a repository's .fetch/setup.sh never runs"
    from kennel.egress import default_registries, parse_allow

    chosen = setup.registries if setup.registries is not None else default_registries()
    where = "kennel.setup.registries" if setup.registries is not None else "this host's pip and npm"
    hosts = ", ".join(parse_allow(chosen).shown()) or "none"
    return f"a repository's .fetch/setup.sh may reach {hosts} (from {where}), nothing else"


def _mcp_lines(settings: Settings) -> list[str]:
    """``fetch doctor``'s lines on the owner's MCP servers (none is started here)."""
    from orchestrator.mcphost.settings import expand

    lines = []
    for name, server in sorted(settings.mcp.servers.items()):
        kind = f"url {server.url}" if server.url else f"stdio {server.command[0]}"
        reach = ", ".join(server.hosts) if server.hosts else "no network"
        if server.url:
            reach = "from the host"
        missing = []
        for value in [*server.env.values(), *server.headers.values()]:
            try:
                expand(value)
            except KeyError as err:
                missing.append(str(err.args[0]))
        problem = f"; ERROR {'; '.join(missing)}" if missing else ""
        lines.append(
            f"mcp:       {name}: {kind}, {reach}, a tool with no rule: {server.default}{problem}"
        )
    return lines
