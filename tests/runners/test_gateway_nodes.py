"""The gateway's relays on Ray nodes (issue 25), without a cluster: what a node's task does
(`NodeGateway.start()` in a thread of this machine) against a real engine side. One relay per
node and run, found again by later sessions; it asks the engine only for holds, charges and the
grants of the sessions that call it; the engine's meter port wants the run's secret; the relay
ends with the engine; a relay killed mid-call is charged the call's worst case, and the next
session starts another."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import threading
import time
from decimal import Decimal
from functools import partial
from pathlib import Path

import httpx
import pytest
import trio
from support.gateway import REAL_KEY, cost, kill_mid_call, model_at, open_meter
from support.gateway_clients import call
from support.scripted_upstream import Answer, ScriptedUpstream

from benchtui.runners.kit.gateway import nodes, open_gateway
from benchtui.runners.kit.gateway.link import encode

BODY = {"model": "m", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 100}


def relay_pid(folder: Path) -> int:
    return int((folder / "port").read_text().split()[0])


def gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


@pytest.mark.trio
async def test_a_nodes_relay_serves_its_sessions_and_ends_with_the_engine():
    with ScriptedUpstream(lambda c: Answer(text="from the node", input_tokens=70, output_tokens=9)) as up:
        meter, ledger, _ = open_meter(Decimal("1"), model_at(up))
        other, other_ledger, _ = open_meter(Decimal("1"), model_at(up), session="m-1")
        async with open_gateway(nodes=True) as gateway:
            node = gateway.nodes
            assert node is not None
            address = await trio.to_thread.run_sync(node.start)
            assert await trio.to_thread.run_sync(node.start) == address  # found again: one a node
            pid = relay_pid(node.folder)
            url = f"http://{address}"
            async with (
                gateway.session(meter, meter._model, REAL_KEY) as grant,
                gateway.session(other, other._model, REAL_KEY),
            ):
                for _ in range(3):
                    text = await trio.to_thread.run_sync(
                        partial(call, "openai-chat", url, grant.token, stream=True)
                    )
                    assert text == "from the node"
                async with httpx.AsyncClient() as client:  # a token no session has: 401
                    r = await client.post(
                        f"{url}/v1/chat/completions", json=BODY, headers={"authorization": "Bearer forged"}
                    )
                    assert r.status_code == 401
            async with httpx.AsyncClient() as client:  # the session ended: its token is dead there too
                r = await client.post(
                    f"{url}/v1/chat/completions",
                    json=BODY,
                    headers={"authorization": f"Bearer {grant.token}"},
                )
                assert r.status_code == 401
        assert await trio.to_thread.run_sync(gone, pid, 10), "the node's relay outlived its engine"
        assert not node.folder.exists(), "the node's relay left its folder behind"
    flight = ledger.running["m-0"]
    assert flight.held == 0 and flight.spent == 3 * cost(70, 9)
    assert other_ledger.running["m-1"].spent == 0  # its key never had a call: nothing asked for it
    assert len(up.calls) == 3


@pytest.mark.trio
async def test_the_engines_meter_port_wants_the_runs_secret():
    meter, ledger, _ = open_meter(Decimal("1"))
    async with open_gateway(nodes=True) as gateway, gateway.session(meter, meter._model, REAL_KEY) as grant:
        node = gateway.nodes
        assert node is not None

        def probe(first: bytes) -> bytes:
            with socket.create_connection((node.host, node.port), timeout=5) as s:
                s.sendall(first + encode("w", 1, grant.token) + encode("h", 2, grant.token, 10, 10))
                return s.recv(65536)

        for first in (encode("auth", "not-the-secret"), b"GET / HTTP/1.1\r\n\r\n", encode("auth", 5)):
            assert await trio.to_thread.run_sync(probe, first) == b""  # closed, unanswered: no key, no hold
        assert len([r for r in gateway._relays if r.node]) == 0
    assert ledger.running["m-0"].spent == 0 and ledger.running["m-0"].held == 0


@pytest.mark.trio
async def test_a_nodes_relay_killed_mid_call_charges_the_worst_case_and_the_next_session_starts_another():
    with ScriptedUpstream(lambda c: Answer(text="slow", delay_s=3.0)) as up:
        meter, ledger, _ = open_meter(Decimal("1"), model_at(up))
        async with (
            open_gateway(nodes=True) as gateway,
            gateway.session(meter, meter._model, REAL_KEY) as grant,
        ):
            node = gateway.nodes
            assert node is not None
            address = await trio.to_thread.run_sync(node.start)
            pid = relay_pid(node.folder)
            got = await kill_mid_call(f"http://{address}", grant.token, up, pid, BODY)
            assert got != 200, got
            with trio.fail_after(10):
                while any(r.node for r in gateway._relays):
                    await trio.sleep(0.02)
            flight = ledger.running["m-0"]
            sent = len(json.dumps({**BODY, "model": "claude-test"}).encode())
            assert flight.held == 0
            assert cost(sent + 2048 - 64, 100) <= flight.spent <= cost(sent + 2048 + 64, 100)
            again = await trio.to_thread.run_sync(node.start)  # the next session on that node
            assert again != address and relay_pid(node.folder) != pid


def test_an_ending_relay_leaves_the_folder_to_a_relay_that_took_it_over(tmp_path):
    folder = tmp_path / "relay"
    folder.mkdir()
    (folder / "lock").touch()
    (folder / "port").write_text(f"{os.getpid() + 1} 5000\n")  # another relay listens there now
    nodes.leave(folder)
    assert (folder / "port").exists()
    (folder / "port").write_text(f"{os.getpid()} 5000\n")  # still ours
    nodes.leave(folder)
    assert not folder.exists()


def test_a_starter_that_waited_for_an_ending_relay_makes_the_folder_again(tmp_path):
    # The ending relay removes the folder while a starter waits for its lock: the starter must
    # not start a relay in a folder that no longer exists.
    folder = tmp_path / "relay"
    folder.mkdir()
    (folder / "port").write_text(f"{os.getpid()} 5000\n")
    lock = (folder / "lock").open("a")
    fcntl.flock(lock, fcntl.LOCK_EX)  # as `leave` holds it
    entered = threading.Event()

    def start() -> None:
        with nodes._locked(folder):
            (folder / "settings.json").write_text("{}")  # what `start` writes first
            entered.set()

    starter = threading.Thread(target=start)
    starter.start()
    time.sleep(0.2)
    assert not entered.is_set()
    shutil.rmtree(folder)  # what `leave` does, under the lock
    lock.close()
    starter.join(5)
    assert entered.is_set() and (folder / "settings.json").exists()
