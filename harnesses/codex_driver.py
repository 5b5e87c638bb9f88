"""Runs ``codex app-server`` in the kennel for one steerable codex run (stdlib only: it is
copied into the run's state folder and run there by the kennel's python3).

``codex exec`` reads no input once it runs; the app server (JSON-RPC over stdio, measured
with codex 0.169.0) takes ``turn/steer`` mid-turn: the model request it holds is dropped
and the next one carries the text. This driver is the JSON-RPC client, next to codex,
so the host keeps the one shape every steerable CLI has (harnesses/base.py): one JSON
line per message on stdin (``{"text": ...}``), the first the prompt; one JSON line per
event on stdout. It prints the app server's notifications as they come, and lines of its
own (``{"fetch": ...}``): ``thread`` (the thread id, to resume), ``input`` (a message was
taken: the first as ``turn/start``, the others as ``turn/steer`` of the running turn, or
as a turn of their own when none runs), ``error`` (a request of its own was refused).
Codex's stderr (where a refused patch is said) is printed as it comes, line by line.
When stdin ends and no turn runs, the app server's stdin is closed: it ends, and so does
this driver, with its exit code.

argv[1]: a JSON object: ``sandbox`` (codex's sandbox mode), ``resume`` (a thread id or
""), ``images`` (paths for the first turn), ``codex`` (the binary).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from typing import IO, Any

_out_lock = threading.Lock()


def emit(obj: dict[str, Any]) -> None:
    line = json.dumps(obj) + "\n"
    with _out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


_last_words: list[str] = []  # codex's last stderr lines, for an unexpected end


def say(line: str) -> None:
    with _out_lock:
        sys.stdout.write(line if line.endswith("\n") else line + "\n")
        sys.stdout.flush()


class Driver:
    def __init__(self, child: subprocess.Popen[str], options: dict[str, Any]) -> None:
        self.child = child
        self.options = options
        self.lock = threading.Lock()  # the state below and writes to the app server
        self.next_id = 10
        self.thread_id = ""
        self.turn_id = ""  # the running turn's id ("" when none runs)
        self.starting = False  # turn/start sent, its answer not in yet
        self.queue: list[str] = []  # messages not yet sent to the app server
        self.steers: dict[int, str] = {}  # turn/steer request id -> its message
        self.first = True  # the first turn carries the images
        self.eof = False  # Fetch closed our stdin
        self.closed = False  # we closed the app server's stdin
        self.failed = False  # a request of ours was refused (and said)

    # -- writing -------------------------------------------------------------------
    def _send(self, obj: dict[str, Any]) -> None:
        if self.closed or self.child.stdin is None:
            return
        try:
            self.child.stdin.write(json.dumps(obj) + "\n")
            self.child.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            self.closed = True

    def _request(self, method: str, params: dict[str, Any]) -> int:
        self.next_id += 1
        self._send({"id": self.next_id, "method": method, "params": params})
        return self.next_id

    # -- what Fetch sends ----------------------------------------------------------
    def on_input(self, line: str) -> None:
        try:
            text = str(json.loads(line)["text"])
        except (ValueError, KeyError, TypeError):
            return  # not a message: ignored, never a crash
        with self.lock:
            self.queue.append(text)
            self._advance()

    def on_eof(self) -> None:
        with self.lock:
            self.eof = True
            self._advance()

    # -- the state machine (called with the lock held) -----------------------------
    def _advance(self) -> None:
        if not self.thread_id or self.starting:
            return
        if self.turn_id:
            while self.queue:
                text = self.queue.pop(0)
                rid = self._request(
                    "turn/steer",
                    {
                        "threadId": self.thread_id,
                        "expectedTurnId": self.turn_id,
                        "input": [_text(text)],
                    },
                )
                self.steers[rid] = text
            return
        if self.steers:
            return  # a steer's answer is still to come: it may need a turn of its own
        if self.queue:
            text = self.queue.pop(0)
            items = [_text(text)]
            if self.first:
                items += [{"type": "localImage", "path": p} for p in self.options["images"]]
            self.first = False
            self.starting = True
            self._request("turn/start", {"threadId": self.thread_id, "input": items})
            return
        if self.eof and not self.closed:
            self.closed = True
            if self.child.stdin is not None:
                with contextlib.suppress(OSError):
                    self.child.stdin.close()

    # -- what the app server says --------------------------------------------------
    def on_line(self, line: str) -> None:
        try:
            obj = json.loads(line)
        except ValueError:
            say(line)  # not JSON: passed on as it is
            return
        if not isinstance(obj, dict):
            return
        with self.lock:
            if "method" in obj and "id" in obj:
                self._answer(obj)
            elif "method" in obj:
                self._notification(obj)
            elif "id" in obj:
                self._response(obj)
            self._advance()

    def _answer(self, req: dict[str, Any]) -> None:
        """A request of the app server's own. The approval policy is "never" (the kennel
        is the sandbox; no one is there to ask): any approval asked anyway is declined,
        and what Fetch cannot answer is refused."""
        emit(req)
        method = str(req.get("method"))
        result: dict[str, Any] | None = None
        if method in ("item/commandExecution/requestApproval", "item/fileChange/requestApproval"):
            result = {"decision": "decline"}
        elif method in ("applyPatchApproval", "execCommandApproval"):
            result = {"decision": "abort"}
        if result is not None:
            self._send({"id": req["id"], "result": result})
        else:
            error = {"code": -32601, "message": f"fetch does not answer {method}"}
            self._send({"id": req["id"], "error": error})

    def _notification(self, note: dict[str, Any]) -> None:
        emit(note)
        if note.get("method") == "turn/completed":
            turn = (note.get("params") or {}).get("turn") or {}
            if turn.get("id") == self.turn_id or not self.starting:
                self.turn_id = ""

    def _response(self, resp: dict[str, Any]) -> None:
        rid = resp.get("id")
        result = resp.get("result")
        error = resp.get("error")
        if rid in self.steers:
            text = self.steers.pop(rid)
            if error is None:
                emit({"fetch": "input"})
            else:
                # The turn ended first (or takes no steering): the message waits for a
                # turn of its own.
                self.queue.insert(0, text)
            return
        if error is not None or not isinstance(result, dict):
            message = error.get("message") if isinstance(error, dict) else None
            emit({"fetch": "error", "message": str(message or f"no answer to request {rid}")})
            self.failed = True
            self.eof = True  # nothing more can be done: end
            self.queue.clear()
            self.starting = False
            self.turn_id = ""
            return
        if rid == 1:
            self._send({"method": "initialized"})
            params: dict[str, Any] = {
                "approvalPolicy": "never",
                "sandbox": self.options["sandbox"],
                "cwd": os.getcwd(),
            }
            if self.options.get("resume"):
                self.first = False  # images went with the thread's first turn
                self._send(
                    {
                        "id": 2,
                        "method": "thread/resume",
                        "params": {**params, "threadId": self.options["resume"]},
                    }
                )
            else:
                self._send({"id": 2, "method": "thread/start", "params": params})
        elif rid == 2:
            self.thread_id = str((result.get("thread") or {}).get("id") or "")
            emit({"fetch": "thread", "threadId": self.thread_id})
        elif self.starting:
            self.starting = False
            self.turn_id = str((result.get("turn") or {}).get("id") or "")
            emit({"fetch": "input"})


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text, "text_elements": []}


def _stderr(line: str) -> None:
    _last_words[:] = [*_last_words[-2:], line.strip()[:300]]
    say(line)


def _pump(stream: IO[str], handle: Any, done: Any = None) -> None:
    for line in stream:
        if line.strip():
            handle(line)
    if done is not None:
        done()


def main() -> int:
    options = json.loads(sys.argv[1])
    child = subprocess.Popen(
        [options["codex"], "app-server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        bufsize=1,
    )
    assert child.stdout is not None and child.stderr is not None
    driver = Driver(child, options)
    threading.Thread(target=_pump, args=(child.stderr, _stderr), daemon=True).start()
    # Read as UTF-8 whatever the kennel's locale; the thread reads it until it ends.
    stdin = open(sys.stdin.fileno(), encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    threading.Thread(
        target=_pump, args=(stdin, driver.on_input, driver.on_eof), daemon=True
    ).start()
    with driver.lock:
        client = {"name": "fetch", "title": "Fetch", "version": "1"}
        driver._send({"id": 1, "method": "initialize", "params": {"clientInfo": client}})
    _pump(child.stdout, driver.on_line)
    try:
        code = child.wait(timeout=10)
    except subprocess.TimeoutExpired:
        child.kill()
        code = child.wait()
    with driver.lock:
        unsaid = not driver.failed  # a refusal of its own was said already
        if unsaid and (not driver.thread_id or driver.turn_id or driver.starting):
            # It ended before it could work, or mid-turn (an older codex without the
            # app server, a crash): said, with its last words, not left as a bare exit.
            last = _last_words[-1] if _last_words else ""
            message = f"codex app-server ended (exit code {code}) before its turn ended"
            emit({"fetch": "error", "message": f"{message}: {last}" if last else message})
    return code


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # /stop: codex has its SIGINT too (the same group)
        sys.exit(130)
