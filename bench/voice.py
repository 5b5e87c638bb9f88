"""Benchmark: a voice note's arrival to "🎙 heard", against a text message's ack (issue 23, 8).

A real app behind the real WhatsApp adapter (WhatsApp itself is the test suite's fake
client: real neonize protobufs handed over from a foreign thread, as neonize does) and a
transcription server of our own on 127.0.0.1 that answers at once (real multipart HTTP,
the openai SDK's ``audio.transcriptions.create``). The clock runs from handing the event
over until the adapter sends the reply:

* ``voice: 🎙 heard``: a 3-second voice note saying "status" -> the "🎙 heard: status" line
  (download, the ears' checks, the SDK's request, the cost row queued);
* ``voice: answered``: the same voice note -> the /status answer it then gets;
* ``text: answered``: "status" typed -> its /status answer (the baseline: a text's ack).

Interleaved (voice, then text, then the next round), each after the previous has settled,
so a noisy neighbour slows both alike. ``python -m bench.voice [N]``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from bench._common import fresh_dirs, ratio, summary, table
from channels.whatsapp import _neonize as nz
from orchestrator.app import build_app
from orchestrator.config import load_settings
from tests.channels.whatsapp.builders import OWNER, jid, message_event, text_from
from tests.channels.whatsapp.fake_client import FakeWhatsAppClient
from tests.channels.whatsapp.whole_app import OWNER_DIRECT, whatsapp_channel
from tests.fakes.transcription_server import TranscriptionServer

WARMUP = 5
OWNER_CHAT = f"{OWNER}@s.whatsapp.net"
OGG = b"OggS\x00\x02" + b"\x03" * 6000  # ~6 KB: a few seconds of Opus


def _voice() -> Any:
    from neonize.proto.waE2E.WAWebProtobufsE2E_pb2 import AudioMessage

    return nz.Message(
        audioMessage=AudioMessage(
            mimetype="audio/ogg; codecs=opus",
            seconds=3,
            PTT=True,
            fileLength=len(OGG),
            directPath="/v/t62.7117-24/bench",
            mediaKey=b"k" * 32,
        )
    )


async def _sent(client: FakeWhatsAppClient, after: int, needle: str) -> float:
    """When the first send past call ``after`` containing ``needle`` went out."""
    deadline = time.perf_counter() + 30.0
    while time.perf_counter() < deadline:
        for call in client.calls[after:]:
            if call.name == "send" and call.chat == OWNER_CHAT and needle in call.text:
                return call.at
        await asyncio.sleep(0.0005)
    seen = [c.text[:40] for c in client.calls[after:]]
    raise TimeoutError(f"bench: no reply containing {needle!r}; {seen}")


async def _measure(n: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {
        "voice: 🎙 heard": [],
        "voice: answered": [],
        "text: answered": [],
    }
    async with TranscriptionServer(default="status") as server:
        with fresh_dirs("voice") as (home, workspace):
            env = {
                "FETCH_HOME": str(home),
                "FETCH_WORKSPACE": str(workspace),
                "FETCH_HARNESS": "demo",
                "FETCH_KENNEL": "bwrap",
                "FETCH_TRANSCRIPTION_BASE_URL": server.url,
                **OWNER_DIRECT,
                # WhatsApp's own pacing (12 a minute) would measure the pacer, not Fetch.
                "FETCH__WHATSAPP__SENDS_PER_MINUTE": "100000",
            }
            settings = load_settings(None, env)
            client = FakeWhatsAppClient(media=OGG)
            app = build_app(settings, channels=[whatsapp_channel(settings, client)])
            async with app:
                for i in range(WARMUP + n):
                    after = len(client.calls)
                    t0 = time.monotonic()  # Call.at is monotonic
                    client.emit(
                        message_event(
                            _voice(), id=f"3EBV{i:05d}", chat=jid(OWNER), sender=jid(OWNER)
                        )
                    )
                    heard = await _sent(client, after, "🎙 heard")
                    answered = await _sent(client, after, "Fetch ·")
                    await app.drain()
                    after = len(client.calls)
                    t1 = time.monotonic()
                    client.emit(text_from(OWNER, "status", id=f"3EBT{i:05d}"))
                    typed = await _sent(client, after, "Fetch ·")
                    await app.drain()
                    if i >= WARMUP:
                        samples["voice: 🎙 heard"].append((heard - t0) * 1000)
                        samples["voice: answered"].append((answered - t0) * 1000)
                        samples["text: answered"].append((typed - t1) * 1000)
            if len(server.requests) != WARMUP + n:
                raise RuntimeError("bench: the transcription server was not asked every time")
    return samples


def run(n: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    samples = asyncio.run(_measure(n))
    stats = {name: summary(values) for name, values in samples.items()}
    ratios = {
        "🎙 heard vs a text's answer": {
            q: ratio(stats["voice: 🎙 heard"][q], stats["text: answered"][q]) for q in ("p50", "p99")
        },
        "voice answered vs text answered": {
            q: ratio(stats["voice: answered"][q], stats["text: answered"][q])
            for q in ("p50", "p99")
        },
    }
    return {
        "unit": "milliseconds",
        "rounds": n,
        "warmup": WARMUP,
        "stats": stats,
        "ratios": ratios,
        "seconds": round(time.perf_counter() - t0, 1),
    }


def render(result: dict[str, Any]) -> str:
    rows = [
        [name, int(s["n"]), s["p50"], s["p90"], s["p99"], s["max"]]
        for name, s in result["stats"].items()
    ]
    return "\n".join(
        [
            table(
                f"voice note -> 🎙 heard vs text -> answer (WhatsApp adapter, instant "
                f"transcription server; {result['rounds']} rounds, ms)",
                ["", "n", "p50", "p90", "p99", "max"],
                rows,
            ),
            table(
                "ratios, same run",
                ["", "p50", "p99"],
                [[name, r["p50"], r["p99"]] for name, r in result["ratios"].items()],
            ),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    n = int(argv[0]) if argv else 100
    print(render(run(n)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
