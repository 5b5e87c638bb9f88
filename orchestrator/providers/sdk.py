"""The openai SDK, imported once per process in a thread of its own, never on the loop.

Importing it takes 0.3-0.8 s of CPU (pydantic models by the hundred). Done lazily on
the first model call, it ran on the event loop: that first message, and every other
chat's message meanwhile, waited for it. Here the import runs in a daemon thread:
``preload()`` starts it right after start-up (the app calls it when a model is
configured), and ``ready()`` lets a call that comes earlier wait for it without
blocking the loop.

A daemon thread rather than ``asyncio.to_thread``: ``asyncio.run`` joins the default
executor at exit, so a stop right after start would wait for the import to finish;
this thread is abandoned instead (the CLI ends with ``os._exit``).
"""

from __future__ import annotations

import asyncio
import importlib
import threading
from collections.abc import Callable
from contextlib import suppress

# The modules a chat completion needs: the package and the response model it parses to.
MODULES = ("openai", "openai.types.chat")
# What its HTTP stack imports on its first request (anyio's asyncio backend, ~20 ms):
# imported here too, best effort (a later SDK may not use them).
FIRST_REQUEST = ("anyio._backends._asyncio", "anyio._core._sockets", "anyio._core._streams")

_lock = threading.Lock()
_done = threading.Event()
_started = False
_error: Exception | None = None
_waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
_after: list[Callable[[], None]] = []


def loaded() -> bool:
    """True once the import finished (well or not)."""
    return _done.is_set()


def importer() -> threading.Thread | None:
    """The importing thread, for tests: None before ``preload`` or ``ready`` started it."""
    return _thread


_thread: threading.Thread | None = None


def preload(then: Callable[[], None] | None = None) -> None:
    """Start the import in the background (at most once per process); ``then`` runs in
    that thread once it succeeded (an endpoint's client is built there too), or in a
    thread of its own if it already had: never on the caller's loop."""
    global _started, _thread
    with _lock:
        if not _done.is_set():
            if then is not None:
                _after.append(then)
            if not _started:
                _started = True
                _thread = threading.Thread(target=_work, name="import:openai", daemon=True)
                _thread.start()
            return
    if then is not None and _error is None:
        threading.Thread(target=_quietly, args=(then,), name="openai:clients", daemon=True).start()


def _quietly(then: Callable[[], None]) -> None:
    with suppress(Exception):  # a client that cannot be built is built (and fails,
        then()  # said) again by the call that needs it


async def ready() -> None:
    """Return once the SDK is imported (starting the import if nobody had); the import's
    own error, if it failed. The loop keeps running meanwhile."""
    if _done.is_set():
        _raise()
        return
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[None] = loop.create_future()
    with _lock:
        if not _done.is_set():
            _waiters.append((loop, waiter))  # settled by the thread
        else:
            waiter.set_result(None)
    if not _started:
        preload()
    await asyncio.shield(waiter)  # one cancelled caller must not cancel the others' wait
    _raise()


def _raise() -> None:
    if _error is not None:
        raise _error


def _work() -> None:
    global _error
    try:
        for name in MODULES:
            importlib.import_module(name)
    except Exception as err:  # handed to every caller of ready()
        _error = err
    else:
        _prime()
    with _lock:
        _done.set()
        waiters, _waiters[:] = list(_waiters), []
        after, _after[:] = list(_after), []
    if _error is None:
        for then in after:
            _quietly(then)
    for loop, waiter in waiters:
        with suppress(RuntimeError):  # that loop closed: nobody waits there anymore
            loop.call_soon_threadsafe(_settle, waiter)


def _prime() -> None:
    """Parse one completion with a tool call: pydantic builds the response models'
    schemas on first use (~25 ms), here rather than in the first message."""
    from openai.types.chat import ChatCompletion

    for name in FIRST_REQUEST:
        with suppress(ImportError):
            importlib.import_module(name)

    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    message = {"role": "assistant", "content": "", "tool_calls": [call]}
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    sample = {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "usage": usage}
    sample["choices"] = [{"index": 0, "finish_reason": "stop", "message": message}]
    with suppress(Exception):  # only a head start: the first real answer would do it
        # The SDK parses a response with its own construct_type (no validation), which
        # builds each nested model's schema on first use: the same call, here.
        from openai import _models

        _models.construct_type(type_=ChatCompletion, value=sample)


def _settle(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


__all__ = ["MODULES", "importer", "loaded", "preload", "ready"]
