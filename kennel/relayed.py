"""A kennel process together with its model relay: every backend starts the relay
before the CLI (the CLI's first request must find it) and stops it when the CLI has
ended or been terminated, so a relay never outlives the run it serves; the run's socket
folder goes with it (kennel/paths.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

from core.errors import KennelError
from kennel.base import BackendProcess, ExecSpec
from kennel.egress import EgressProxy, Refusal, parse_allow
from kennel.paths import admitted, open_room, release
from kennel.relay import ModelRelay


class RelayedProcess:
    """The ``KennelProcess`` every backend hands back."""

    def __init__(
        self, proc: BackendProcess, relay: ModelRelay | None, egress: EgressProxy | None = None
    ) -> None:
        self._proc = proc
        self._relay = relay
        self.egress = egress  # a setup run's proxy: what it let through and refused

    def lines(self) -> AsyncIterator[str]:
        return self._proc.lines()

    async def wait(self) -> int:
        try:
            return await self._proc.wait()
        finally:  # a kennel that vanished (its engine, its container) frees the relay too
            await self._stop_relay()

    async def terminate(self, grace: float) -> float:
        # Only the process is timed: that is what /stop reports.
        try:
            return await self._proc.terminate(grace)
        finally:
            await self._stop_relay()

    def stderr_tail(self) -> str:
        return self._proc.stderr_tail()

    def alive_pids(self) -> list[int]:
        return self._proc.alive_pids()

    async def pause(self) -> int:
        return await self._proc.pause()

    async def resume(self) -> None:
        await self._proc.resume()

    async def write_input(self, data: bytes) -> bool:
        return await self._proc.write_input(data)

    def close_input(self) -> None:
        self._proc.close_input()

    def relay_tokens(self) -> tuple[int, int]:
        if self._relay is None:
            return (0, 0)
        return (self._relay.stats.tokens_in, self._relay.stats.tokens_out)

    async def _stop_relay(self) -> None:
        if self._relay is not None:
            await self._relay.stop()  # idempotent: wait() then terminate() is the norm
            release(self._relay.socket_path)
        if self.egress is not None:
            await self.egress.stop()
            release(self.egress.socket_path)


async def start_relayed(
    spec: ExecSpec, start: Callable[[], Awaitable[BackendProcess]]
) -> RelayedProcess:
    """Start ``spec.relay`` (if any) on the layout's socket, then the process."""
    relay: ModelRelay | None = None
    egress: EgressProxy | None = None
    socket = spec.layout.relay_socket
    if spec.egress is not None:
        if spec.relay is not None:
            raise KennelError("a setup run has no model relay")
        try:
            egress = EgressProxy(
                socket,
                parse_allow(spec.egress.allow),
                peer_uids=admitted(socket),
                log_path=spec.egress.log_path,
            )
        except Refusal as err:
            release(socket)
            raise KennelError(f"kennel.setup.registries: {err}") from err
        try:
            open_room(socket)
            await egress.start()
        except BaseException:
            release(socket)
            raise
    elif spec.relay is None:
        release(socket)  # a run without a model: its socket folder is not needed
    else:
        r = spec.relay
        try:
            relay = ModelRelay(
                socket_path=socket,
                upstream=r.upstream,
                provider=r.provider,
                api_key=r.api_key,
                secret=r.secret,
                harness=r.harness,
                task_id=r.task_id,
                log_path=r.log_path,
                token_budget=r.token_budget,
                mcp=r.mcp,
                on_call=r.on_call,
                gate=r.gate,
                peer_uids=r.peer_uids | admitted(socket),
                allow_server_tools=r.allow_server_tools,
                auth=r.auth,
                signin=r.signin,
            )
        except ValueError as err:  # an upstream that is not a plain http(s) base URL
            release(socket)
            raise KennelError(str(err)) from err
        try:
            open_room(socket)
            await relay.start()
        except BaseException:
            release(socket)
            raise
    try:
        proc = await start()
    except BaseException:
        if relay is not None:
            await relay.stop()
        if egress is not None:
            await egress.stop()
        release(socket)
        raise
    return RelayedProcess(proc, relay, egress)


__all__ = ["RelayedProcess", "start_relayed"]
