"""The gateway's lifetime: `async with open_gateway() as gateway`, one per campaign run.

The engine opens the listeners (127.0.0.1 on an ephemeral port, and, for sandboxes without a
network, a unix socket in a private temporary folder) and starts `relays` relay processes that
serve them (`relay.py`: uvicorn + aiohttp, off the engine's loop). Each relay asks the engine,
over its own channel, to hold a call's worst case on the session's meter (answered once the hold
is durable) and then to charge what the call used; everything else — HTTP, the policy, the
hostile-input guards, scrubbing — runs in the relay. A relay that dies is started again on the
same listeners; the calls it had in flight are charged their worst case (the provider may have
billed them).
"""

from __future__ import annotations

import contextlib
import hmac
import os
import secrets
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import trio

from benchtui.core import tempdirs
from benchtui.core.contract import Meter, ModelSpec, Usage
from benchtui.core.usage import cost_amount
from benchtui.runners.command.gateway.grant import PROMPT_OVERHEAD_TOKENS, Binding
from benchtui.runners.command.gateway.link import Lines, default_limit, encode, relay_environment
from benchtui.runners.command.gateway.nodes import NodeGateway
from benchtui.runners.kit.handshakes import Handshakes

HEADER_TIMEOUT_S = 10.0
"""A request's headers are whole within this of their first byte (a slow sender is closed)."""
IDLE_TIMEOUT_S = 120.0
"""An idle connection is closed after this: longer than the clients' own pool expiry (reqwest 90 s,
httpx 5 s, undici 4 s), so a client never sends on a connection the gateway is closing."""
ANSWER_S = 10.0
"""A relay answers the engine's requests (bind, unbind, figures) within this, or is restarted."""
RESTART_PAUSE_S = 0.5
STARTUP_S = 30.0
RELAY_MODULE = "benchtui.runners.command.gateway.relay"


class GatewayError(Exception):
    """The gateway could not start (its message is one line)."""


@dataclass(frozen=True, slots=True)
class Figures:
    """The connection bounds of the relays, and what they did (summed over relays)."""

    limit: int
    """Per relay."""
    open: int
    evicted: int


@dataclass(eq=False)
class _Relay:
    """One relay process and the engine's end of its channel."""

    slot: int
    process: trio.Process | None
    """None: a node's relay (started on its node, known by its connection)."""
    stream: trio.SocketStream
    holds: dict[int, tuple[Binding, Decimal, Usage]] = field(default_factory=dict)
    """Its calls held and not yet charged: call id -> (session, hold, worst case)."""
    waiting: dict[int, trio.MemorySendChannel[Any]] = field(default_factory=dict)
    out: list[bytes] = field(default_factory=list)
    wake: trio.Event = field(default_factory=trio.Event)
    alive: bool = True
    next_id: int = 0
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)

    @property
    def node(self) -> bool:
        return self.process is None

    def send(self, message: bytes) -> None:
        self.out.append(message)
        self.wake.set()

    async def write(self) -> None:
        """One send for every message queued since the last: replies ride together."""
        while True:
            await self.wake.wait()
            self.wake = trio.Event()
            data = b"".join(self.out)
            self.out.clear()
            try:
                await self.stream.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return  # the relay is gone: its supervisor sees the process end

    async def ask(self, *message: Any) -> Any:
        """Send an engine request (its id is added second) and await the relay's answer."""
        self.next_id += 1
        ask_id = self.next_id
        send, receive = trio.open_memory_channel[Any](1)
        self.waiting[ask_id] = send
        self.send(encode(message[0], ask_id, *message[1:]))
        try:
            with trio.fail_after(ANSWER_S):
                return await receive.receive()
        finally:
            self.waiting.pop(ask_id, None)


class Gateway:
    def __init__(self, url: str, socket_path: Path) -> None:
        self.url = url
        """http://<host>:<port> (OpenAI clients add /v1, Anthropic ones add /v1/messages)."""
        self.socket_path = socket_path
        self.restarts = 0
        """Relays started again after they died."""
        self.nodes: NodeGateway | None = None
        self.node_handshakes = Handshakes()
        """Connections to the meter port that have not shown the run's secret yet, bounded."""
        """Where relays on Ray nodes reach the engine (`open_gateway(nodes=True)`)."""
        self._bindings: dict[str, Binding] = {}
        self._relays: list[_Relay] = []

    @contextlib.asynccontextmanager
    async def session(
        self,
        meter: Meter,
        model: ModelSpec,
        api_key: str | None,
        *,
        prompt_overhead_tokens: int = PROMPT_OVERHEAD_TOKENS,
    ) -> AsyncIterator[Binding]:
        """A token for one session, valid until the block ends. Then its calls in flight are cut,
        and every charge a relay sent before it cut them is in."""
        binding = Binding(meter, model, api_key, prompt_overhead_tokens)
        self._bindings[binding.token] = binding
        try:
            await self._tell_all("b", binding.token, binding.grant())
            yield binding
        finally:
            binding.open = False
            with trio.CancelScope(shield=True):
                await self._tell_all("u", binding.token)
            binding.settling = False
            del self._bindings[binding.token]
            for relay in self._relays:  # holds of calls cut in flight: left to the ledger (worst case)
                for call in [c for c, held in relay.holds.items() if held[0] is binding]:
                    del relay.holds[call]

    async def figures(self) -> Figures:
        """The connection figures, summed over the relays."""
        found = [await relay.ask("q") for relay in self._relays if relay.alive]
        return Figures(
            limit=max((f["limit"] for f in found), default=0),
            open=sum(f["open"] for f in found),
            evicted=sum(f["evicted"] for f in found),
        )

    async def _tell_all(self, *message: Any) -> None:
        async def tell(relay: _Relay) -> None:
            try:
                await relay.ask(*message)
            except (trio.TooSlowError, trio.BrokenResourceError, trio.ClosedResourceError):
                _kill(relay)  # its supervisor starts it again, with the bindings

        async with trio.open_nursery() as nursery:
            for relay in self._relays:
                if relay.alive and not (relay.node and message[0] == "b"):  # a node asks for its own
                    nursery.start_soon(tell, relay)

    # -- a relay's requests -------------------------------------------------------------------
    async def _read(self, relay: _Relay, nursery: trio.Nursery) -> None:
        lines = Lines()
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            async for data in relay.stream:
                self._received(relay, nursery, lines, bytes(data))

    def _received(self, relay: _Relay, nursery: trio.Nursery, lines: Lines, data: bytes) -> None:
        try:
            for message in lines.feed(data):
                kind = message[0]
                if kind == "h":
                    _, call, token, prompt_tokens, output_tokens = message
                    nursery.start_soon(
                        self._hold, relay, call, str(token), int(prompt_tokens), int(output_tokens)
                    )
                elif kind == "c":
                    self._charge(relay, *message[1:])
                elif kind == "t":
                    _, call, wait = message
                    held = relay.holds.get(call)
                    if held is not None and held[0].settling:  # its provider's backoff, for every session
                        ok = isinstance(wait, int | float) and not isinstance(wait, bool)
                        held[0].meter.throttled(float(wait) if ok else None)
                elif kind == "w":
                    _, ask, token = message
                    binding = self._bindings.get(str(token))
                    relay.send(encode("w", ask, binding.grant() if binding and binding.open else None))
                elif kind == "a":
                    waiting = relay.waiting.get(message[1])
                    if waiting is not None:
                        waiting.send_nowait(message[2])
        except (ValueError, TypeError, IndexError, KeyError, trio.WouldBlock):
            _kill(relay)  # it speaks nonsense: started again, its calls charged their worst case

    async def _hold(
        self, relay: _Relay, call: int, token: str, prompt_tokens: int, output_tokens: int
    ) -> None:
        binding = self._bindings.get(token)
        if binding is None or not binding.open:
            relay.send(encode("h", call, "gateway: unknown or expired session token"))
            return
        worst = Usage(prompt_tokens, output_tokens, worst_case=True)
        hold = binding.meter.price(worst)  # its prompt at the dearest prompt price
        if not await binding.meter.authorise(hold):
            relay.send(encode("h", call, _refusal(binding.meter)))
            return
        binding.authorised += 1
        if not relay.alive:  # died while the hold was written: its worst case, as for its other calls
            binding.meter.charge(worst, settles=hold)
            return
        relay.holds[call] = (binding, hold, worst)
        relay.send(encode("h", call, None))

    def _charge(
        self, relay: _Relay, call: int, buckets: Any, served: bool, provider_cost: Any = None
    ) -> None:
        held = relay.holds.pop(call, None)
        if held is None:
            return
        binding, hold, worst = held
        if binding.settling:
            found = Usage.from_buckets(buckets) if buckets is not None else None
            if isinstance(found, Usage):  # else: its worst case, never less
                found = replace(found, provider_cost_usd=cost_amount(provider_cost))
            used = found if isinstance(found, Usage) else worst
            served = served is not False
            binding.meter.charge(used, settles=hold, served=served)

    # -- the nodes' relays ---------------------------------------------------------------------
    async def _accept_nodes(self, listener: trio.SocketListener, secret: str) -> None:
        async with trio.open_nursery() as nursery:
            while True:
                stream = await listener.accept()
                nursery.start_soon(self._serve_node, stream, secret)

    async def _serve_node(self, stream: trio.SocketStream, secret: str) -> None:
        lines, first = Lines(), b""
        with self.node_handshakes.pending(ANSWER_S):
            while b"\n" not in first and len(first) < 4096:
                data = await stream.receive_some(4096)
                if not data:
                    break
                first += data
        head, _, rest = first.partition(b"\n")
        try:
            kind, shown = orjson.loads(head)
        except (orjson.JSONDecodeError, ValueError, TypeError):
            kind, shown = "", ""
        if (
            kind != "auth"
            or not isinstance(shown, str)
            or not hmac.compare_digest(shown.encode(), secret.encode())
        ):
            with trio.CancelScope(shield=True):
                await stream.aclose()
            return
        relay = _Relay(-1, None, stream)
        self._relays.append(relay)
        try:
            with relay.scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(relay.write)
                    self._received(relay, nursery, lines, rest)
                    relay.send(encode("g"))
                    await self._read(relay, nursery)
                    nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                self._gone(relay)

    def _gone(self, relay: _Relay) -> None:
        """A relay ended: the calls it had held are charged their worst case (it may have been billed)."""
        relay.alive = False
        for binding, hold, worst in relay.holds.values():
            if binding.settling:
                binding.meter.charge(worst, settles=hold)
        relay.holds.clear()
        if relay in self._relays:
            self._relays.remove(relay)

    # -- the relays' lives ----------------------------------------------------------------------
    async def _supervise(
        self,
        slot: int,
        settings: dict[str, Any],
        listeners: list[socket.socket],
        ready: trio.Event,
        log: Path,
    ) -> None:
        while True:
            relay = await self._start(slot, settings, listeners, log)
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(relay.write)
                    nursery.start_soon(self._serve_relay, relay, nursery, ready)
                    assert relay.process is not None  # a local relay: this engine started it
                    await relay.process.wait()
                    nursery.cancel_scope.cancel()
            finally:
                with trio.CancelScope(shield=True):
                    _kill(relay)
                    await relay.stream.aclose()
                    self._gone(relay)
            self.restarts += 1
            await trio.sleep(RESTART_PAUSE_S)

    async def _serve_relay(self, relay: _Relay, nursery: trio.Nursery, ready: trio.Event) -> None:
        nursery.start_soon(self._read, relay, nursery)
        for binding in list(self._bindings.values()):
            if binding.open:
                await relay.ask("b", binding.token, binding.grant())
        await relay.ask("q")  # it reads its channel: it has started
        relay.send(encode("g"))
        ready.set()

    async def _start(
        self, slot: int, settings: dict[str, Any], listeners: list[socket.socket], log: Path
    ) -> _Relay:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        fds = [theirs.fileno(), *(s.fileno() for s in listeners)]
        try:
            with log.open("ab") as errors:
                process = await trio.lowlevel.open_process(
                    [
                        sys.executable,
                        "-m",
                        RELAY_MODULE,
                        str(theirs.fileno()),
                        orjson.dumps(settings).decode(),
                        *(str(s.fileno()) for s in listeners),
                    ],
                    pass_fds=fds,
                    env=relay_environment(),
                    start_new_session=True,  # a Ctrl-C in the terminal is the engine's to handle
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=errors,  # never on the TUI's screen
                )
        finally:
            theirs.close()
        relay = _Relay(slot, process, trio.SocketStream(trio.socket.from_stdlib_socket(ours)))
        self._relays.append(relay)
        return relay


def _kill(relay: _Relay) -> None:
    relay.alive = False
    if relay.process is None:
        relay.scope.cancel()  # a node's: its connection is closed, the relay ends itself
        return
    with contextlib.suppress(ProcessLookupError, OSError):
        relay.process.kill()


def _refusal(meter: Meter) -> str:
    limit = meter.limits.model_calls
    if limit is not None and meter.used("model_calls") >= limit:
        return f"the session's {limit} model calls are spent (counter model_calls)"
    return "the session budget is spent: this call does not fit in what is left of its reservation"


def _listeners(host: str, socket_path: Path) -> list[socket.socket]:
    tcp = socket.create_server((host, 0), backlog=1024)
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(str(socket_path))
    unix.listen(1024)
    for sock in (tcp, unix):
        sock.setblocking(False)
    return [tcp, unix]


@contextlib.asynccontextmanager
async def open_gateway(
    *,
    request_timeout_s: float = 600.0,
    host: str = "127.0.0.1",
    max_connections: int | None = None,
    header_timeout_s: float = HEADER_TIMEOUT_S,
    idle_timeout_s: float = IDLE_TIMEOUT_S,
    relays: int = 1,
    nodes: bool = False,
) -> AsyncIterator[Gateway]:
    """`host`: the address the TCP listener binds (another machine's agents need a reachable one).
    `request_timeout_s`: the total deadline of one call, streams included. The connection bounds
    (see `connections`) hold in each relay before any token is checked; `max_connections` (per
    relay) defaults to a quarter of the descriptor limit. `relays`: processes serving the
    listeners. `nodes`: also accept relays of Ray nodes (`gateway.nodes` says where, with the
    run's secret): each node's agents then call a relay on their own node."""
    folder = tempdirs.make("gw")  # short: a socket path has 107 bytes
    socket_path = folder / "gateway.sock"
    listeners = _listeners(host, socket_path)
    settings = {
        "engine": os.getpid(),
        "request_timeout_s": request_timeout_s,
        "max_connections": max_connections or default_limit(),
        "header_timeout_s": header_timeout_s,
        "idle_timeout_s": idle_timeout_s,
        "folder": str(folder),  # a relay removes it if the engine dies (SIGKILL) without doing so
    }
    name = listeners[0].getsockname()
    gateway = Gateway(f"http://{name[0]}:{name[1]}", socket_path)
    log = folder / "relays.log"
    others: list[socket.socket] = []
    failed = ""
    try:
        async with trio.open_nursery() as nursery:
            if nodes:
                meter_socket = socket.create_server((host, 0), backlog=128)
                others.append(meter_socket)
                secret = secrets.token_urlsafe(32)
                node_settings = {k: v for k, v in settings.items() if k not in ("engine", "folder")}
                gateway.nodes = NodeGateway(host, meter_socket.getsockname()[1], secret, node_settings)
                meter_listener = trio.SocketListener(trio.socket.from_stdlib_socket(meter_socket))
                nursery.start_soon(gateway._accept_nodes, meter_listener, secret)
            for slot in range(max(1, relays)):
                ready = trio.Event()
                nursery.start_soon(gateway._supervise, slot, settings, listeners, ready, log)
                with trio.move_on_after(STARTUP_S):
                    await ready.wait()
                if not ready.is_set():
                    tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
                    failed = f"the gateway's relay did not start: {' '.join(tail) or 'no output'}"
                    break
            try:
                if not failed:
                    yield gateway
            finally:
                nursery.cancel_scope.cancel()
        if failed:  # outside the nursery: one plain error, not a group, for the session's reason
            raise GatewayError(failed)
    finally:
        for sock in [*listeners, *others]:
            sock.close()
        shutil.rmtree(folder, ignore_errors=True)
