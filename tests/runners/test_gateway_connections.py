"""The gateway's connections are bounded before any token is checked (issue 20): a count the
descriptor limit can afford (the longest idle closed for a newcomer), a deadline for a request's
headers, an idle timeout; the engine never runs out of descriptors because of them."""

from __future__ import annotations

import resource
import socket
import subprocess
import sys
import tempfile
import textwrap
from decimal import Decimal
from functools import partial

import pytest
import trio
from support.gateway import REAL_KEY, model_at, open_meter
from support.gateway_clients import call
from support.scripted_upstream import Answer, ScriptedUpstream

from benchtui.runners.kit.gateway import open_gateway

ATTACKER = textwrap.dedent(
    """
    import resource, socket, sys
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    first = sys.argv[4].encode().decode("unicode_escape").encode() if len(sys.argv) > 4 else b""
    held = []
    for _ in range(count):  # connect, send `first` (or nothing), hold: no token is ever shown
        s = socket.socket()
        s.connect((host, port))
        s.sendall(first)
        held.append(s)
    print("ready", flush=True)
    sys.stdin.read()
    """
)


def attack(url: str, count: int, first: str = "") -> subprocess.Popen[str]:
    host, port = host_port(url)
    return subprocess.Popen(
        [sys.executable, "-c", ATTACKER, host, str(port), str(count), first],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def host_port(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


@pytest.fixture
def descriptors_1024():
    """The common default soft limit of open files, for this process (restored after)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < 2048:
        pytest.skip(f"needs a hard RLIMIT_NOFILE of 2048 for the attacker, have {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.trio
async def test_1100_idle_connections_leave_the_engine_its_descriptors_and_calls(descriptors_1024):
    # Before: each connection took a descriptor until its 600 s keep-alive ran out; 1,100 of them
    # took the engine past 1,024 (EMFILE: no ledger write, no sandbox, no upstream connection).
    with ScriptedUpstream(lambda c: Answer(text="still here")) as up:
        meter, ledger, _ = open_meter(Decimal("1"), model_at(up))
        async with open_gateway() as gateway:
            assert (await gateway.figures()).limit == 256  # a quarter of 1,024
            attacker = attack(gateway.url, 1100)
            try:
                with trio.fail_after(60):
                    line = await trio.to_thread.run_sync(attacker.stdout.readline)  # type: ignore[union-attr]
                    assert line.strip() == "ready"
                    while (await gateway.figures()).evicted < 600:  # most of the attack has come in
                        await trio.sleep(0.05)
                    assert (await gateway.figures()).open <= 256
                    # The engine can still open what it needs: files (ledger, logs) ...
                    files = [tempfile.TemporaryFile() for _ in range(300)]  # noqa: SIM115 (all open at once)
                    for f in files:
                        f.close()
                    # ... and a session's agent still gets its answers, with its token.
                    async with gateway.session(meter, meter._model, REAL_KEY) as grant:
                        for _ in range(3):
                            text = await trio.to_thread.run_sync(
                                partial(call, "openai-chat", gateway.url, grant.token, stream=False)
                            )
                            assert text == "still here"
            finally:
                attacker.stdin.close()  # type: ignore[union-attr]
                attacker.wait(10)
    assert len(up.calls) == 3


@pytest.mark.trio
@pytest.mark.parametrize(
    "first",
    [r"POST /v1/chat/completions HTTP/1.1\r\n", r"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-A: "],
    ids=["a request line", "part of the headers"],
)
async def test_1100_connections_stuck_in_their_head_never_cost_a_live_session_a_call(descriptors_1024, first):
    # Before: a connection that had sent part of its head counted as busy and was never closed
    # for a newcomer; 1,100 of them held every slot for the 10 s head deadline, so a live
    # session's connection was closed at once, its SDK's two retries too: its call failed.
    with ScriptedUpstream(lambda c: Answer(text="still here")) as up:
        meter, _, _ = open_meter(Decimal("1"), model_at(up))
        async with open_gateway() as gateway:
            limit = (await gateway.figures()).limit
            attacker = attack(gateway.url, 1100, first)
            try:
                with trio.fail_after(120):
                    line = await trio.to_thread.run_sync(attacker.stdout.readline)  # type: ignore[union-attr]
                    assert line.strip() == "ready"
                    while (await gateway.figures()).evicted < 1100 - limit:  # all of it came in
                        await trio.sleep(0.05)
                    async with gateway.session(meter, meter._model, REAL_KEY) as grant:
                        answers = [
                            await trio.to_thread.run_sync(
                                partial(call, "openai-chat", gateway.url, grant.token, stream=False)
                            )
                            for _ in range(2)
                        ]
                    figures = await gateway.figures()
            finally:
                attacker.stdin.close()  # type: ignore[union-attr]
                attacker.wait(10)
    assert answers == ["still here", "still here"]
    assert figures.open <= limit and figures.evicted >= 1100 - limit + 1  # the oldest made room
    assert len(up.calls) == 2


@pytest.mark.trio
async def test_the_connection_waiting_longest_is_the_one_closed_for_a_newcomer():
    async with open_gateway(max_connections=3) as gateway:
        address = host_port(gateway.url)
        dripping = socket.create_connection(address)  # the oldest: sent a request line, no headers
        dripping.sendall(b"POST /v1/chat/completions HTTP/1.1\r\n")
        await trio.sleep(0.2)
        silent = socket.create_connection(address)
        await trio.sleep(0.2)
        newer = [socket.create_connection(address) for _ in range(3)]
        with trio.fail_after(10):
            while (await gateway.figures()).evicted < 2:
                await trio.sleep(0.05)
        assert await closed_within(dripping, 2) is not None and await closed_within(silent, 2) is not None
        assert await closed_within(newer[0], 0.5) is None  # the younger stay
        for s in [dripping, silent, *newer]:
            s.close()


async def closed_within(sock: socket.socket, seconds: float, drip: bytes = b"") -> float | None:
    """Seconds until the gateway closed `sock` (dripping `drip` a byte at a time), or None."""
    started = trio.current_time()
    tsock = trio.socket.from_stdlib_socket(sock)
    with trio.move_on_after(seconds):
        for n in range(10_000):
            if drip:
                try:
                    await tsock.send(drip[n % len(drip) : n % len(drip) + 1])
                except OSError:
                    return trio.current_time() - started
            with trio.move_on_after(0.2):
                try:
                    data = await tsock.recv(65536)
                except OSError:
                    return trio.current_time() - started
                if data == b"" or data.startswith(b"HTTP/1.1 408"):
                    return trio.current_time() - started
    return None


@pytest.mark.trio
async def test_headers_that_come_too_slowly_are_cut():
    # Before: a request's head could take the whole keep-alive time (600 s) to arrive.
    async with open_gateway(header_timeout_s=1.0) as gateway:
        sock = socket.create_connection(host_port(gateway.url))
        head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 10_000
        took = await closed_within(sock, 8, drip=head)
        sock.close()
    assert took is not None and took < 4, took


@pytest.mark.trio
async def test_an_idle_connection_is_closed():
    async with open_gateway(idle_timeout_s=1.0) as gateway:
        sock = socket.create_connection(host_port(gateway.url))
        took = await closed_within(sock, 8)
        sock.close()
    assert took is not None and took < 4, took


@pytest.mark.trio
async def test_a_call_in_flight_is_never_the_one_closed_for_a_newcomer():
    with ScriptedUpstream(lambda c: Answer(text="slow but whole", delay_s=1.5)) as up:
        meter, _, _ = open_meter(Decimal("1"), model_at(up))
        async with (
            open_gateway(max_connections=4) as gateway,
            gateway.session(meter, meter._model, REAL_KEY) as grant,
        ):
            async with trio.open_nursery() as nursery:
                answers: list[str] = []

                async def slow_call() -> None:
                    answers.append(
                        await trio.to_thread.run_sync(
                            partial(call, "anthropic", gateway.url, grant.token, stream=True)
                        )
                    )

                nursery.start_soon(slow_call)
                await trio.sleep(0.5)
                idle = [socket.create_connection(host_port(gateway.url)) for _ in range(12)]
                await trio.sleep(0.3)
            assert answers == ["slow but whole"]
            assert (await gateway.figures()).evicted >= 8
            for s in idle:
                s.close()
