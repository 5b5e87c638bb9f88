"""A voice note's transcription imports the openai SDK (~0.5 s of CPU) in a thread,
never on the event loop where every chat would wait for it. A fresh interpreter (the
only place the SDK is not imported yet) transcribes through the real Transcriber against
the real scripted transcription server on 127.0.0.1 and says which thread imported it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys, threading

    FIRST = {}

    class Spy:
        def find_spec(self, name, path=None, target=None):
            FIRST.setdefault(name, threading.current_thread().name)
            return None

    sys.meta_path.insert(0, Spy())

    from orchestrator.hearing.settings import TranscriptionSettings
    from orchestrator.hearing.transcriber import Transcriber
    from tests.fakes.transcription_server import TranscriptionServer

    async def main():
        assert "openai" not in sys.modules
        async with TranscriptionServer() as server:
            server.say("hello from the phone")
            transcriber = Transcriber(TranscriptionSettings(base_url=server.url))
            try:
                heard = await transcriber.transcribe(b"OggS...", "note.ogg", "audio/ogg", 2.0)
            finally:
                await transcriber.close()
        loop_thread = threading.current_thread().name
        print(json.dumps({"text": heard.text, "sdk": FIRST.get("openai"), "loop": loop_thread}))

    asyncio.run(main())
    """
)


def test_the_first_voice_note_imports_the_sdk_off_the_loop(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FETCH_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["text"] == "hello from the phone"
    assert result["sdk"] is not None and result["sdk"] != result["loop"]
