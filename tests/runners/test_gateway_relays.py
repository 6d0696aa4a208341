"""The gateway's relay processes (issue 25): HTTP off the engine's loop, every meter still the
engine's. A relay killed mid-call is started again and its call charged its worst case; relays
die with the engine, even by SIGKILL; a Ctrl-C in the terminal does not reach them; no key is in
a relay's command line or environment; charges stay exact with two relays and many sessions."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from decimal import Decimal
from functools import partial
from pathlib import Path

import httpx
import pytest
import trio
from support import ROOT
from support.gateway import REAL_KEY, cost, kill_mid_call, model_at, open_meter
from support.gateway_clients import call
from support.scripted_upstream import Answer, ScriptedUpstream

from benchtui.runners.kit.gateway import open_gateway

BODY = {"model": "m", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 100}


def relay_pids(gateway) -> list[int]:
    return [relay.process.pid for relay in gateway._relays if relay.alive]


@pytest.mark.trio
async def test_a_relay_killed_mid_call_is_started_again_and_the_call_charged_its_worst_case():
    with ScriptedUpstream(lambda c: Answer(text="slow", delay_s=3.0)) as up:
        meter, ledger, _ = open_meter(Decimal("1"), model_at(up))
        async with open_gateway() as gateway, gateway.session(meter, meter._model, REAL_KEY) as grant:
            [pid] = relay_pids(gateway)
            got = await kill_mid_call(gateway.url, grant.token, up, pid, BODY)
            assert got != 200, got  # the agent saw the call fail
            with trio.fail_after(20):
                while gateway.restarts < 1 or not relay_pids(gateway):
                    await trio.sleep(0.05)
            assert relay_pids(gateway) != [pid]
            flight = ledger.running["m-0"]
            sent = len(json.dumps({**BODY, "model": "claude-test"}).encode())
            # Its worst case: the forwarded body's bytes + the allowance as prompt, the cap as output.
            assert flight.held == 0
            assert cost(sent + 2048 - 64, 100) <= flight.spent <= cost(sent + 2048 + 64, 100)
            spent_after_kill = flight.spent
            # The new relay knows the live session: its next call goes through, charged exactly.
            up.script = lambda c: Answer(text="back", input_tokens=10, output_tokens=5)
            with trio.fail_after(20):
                text = await trio.to_thread.run_sync(
                    partial(call, "openai-chat", gateway.url, grant.token, stream=False)
                )
            assert text == "back"
        assert flight.spent == spent_after_kill + cost(10, 5)


ENGINE = textwrap.dedent(
    """
    import sys, trio
    sys.path[:0] = [{root!r}, {tests!r}]
    from benchtui.runners.kit.gateway import open_gateway

    async def main():
        async with open_gateway(relays=2) as gateway:
            print(gateway.socket_path.parent, *(r.process.pid for r in gateway._relays), flush=True)
            await trio.sleep_forever()

    trio.run(main)
    """
)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_relays_end_with_the_engine_even_when_it_is_killed_and_remove_the_folder_it_left():
    engine = subprocess.Popen(
        [sys.executable, "-c", ENGINE.format(root=str(ROOT), tests=str(ROOT / "tests"))],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        folder, *pids = engine.stdout.readline().split()  # type: ignore[union-attr]
        pids = [int(p) for p in pids]
        assert len(pids) == 2 and all(alive(p) for p in pids)
        assert (Path(folder) / "gateway.sock").exists()
        engine.send_signal(signal.SIGKILL)
        engine.wait(10)
        deadline = time.monotonic() + 5
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(p) for p in pids), "a relay outlived its engine"
        assert not Path(folder).exists(), "the gateway's folder outlived its engine"
    finally:
        engine.kill()


@pytest.mark.trio
async def test_a_relay_whose_engine_lives_leaves_the_engines_folder_alone(tmp_path):
    # A relay's channel closing while the engine lives (the engine ending it its own way) must
    # not take the socket other relays and sandboxes use.
    from benchtui.runners.kit.gateway import relay

    folder = tmp_path / "gw"
    folder.mkdir()
    started = time.monotonic()
    relay._leave({"folder": str(folder), "engine": os.getppid()})  # "the engine" is our parent: alive
    assert folder.exists() and time.monotonic() - started >= relay.ORPHAN_WAIT_S
    relay._leave({"folder": str(folder), "engine": -1})  # not our parent: gone
    assert not folder.exists()


@pytest.mark.trio
async def test_a_ctrl_c_in_the_terminal_reaches_the_engine_not_its_relays():
    # The terminal sends SIGINT to its foreground process group: the relays are not in it, so a
    # Ctrl-C the engine handles (pause, stop) does not cut every agent's calls in flight.
    async with open_gateway() as gateway:
        for pid in relay_pids(gateway):
            assert os.getpgid(pid) != os.getpgid(0)
            assert os.getsid(pid) != os.getsid(0)


@pytest.mark.trio
async def test_no_key_is_in_a_relays_command_line_or_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", REAL_KEY)  # the engine's own environment holds it
    with ScriptedUpstream() as up:
        meter, _, _ = open_meter(Decimal("1"), model_at(up))
        async with open_gateway() as gateway, gateway.session(meter, meter._model, REAL_KEY) as grant:
            text = await trio.to_thread.run_sync(
                partial(call, "anthropic", gateway.url, grant.token, stream=False)
            )
            assert text == "Done." and up.calls[0].headers.get("x-api-key") == REAL_KEY
            for pid in relay_pids(gateway):
                assert REAL_KEY.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
                assert REAL_KEY.encode() not in Path(f"/proc/{pid}/environ").read_bytes()


@pytest.mark.trio
async def test_charges_are_exact_with_two_relays_and_many_sessions_at_once():
    usage = {"input_tokens": 321, "output_tokens": 17}
    with ScriptedUpstream(lambda c: Answer(text="x", **usage)) as up:
        model = model_at(up)
        meters = [open_meter(Decimal("1"), model, f"s-{n}") for n in range(8)]
        async with open_gateway(relays=2) as gateway:
            assert len(relay_pids(gateway)) == 2
            async with trio.open_nursery() as nursery:
                for n, (meter, _, _) in enumerate(meters):

                    async def session(meter=meter, n=n) -> None:
                        async with gateway.session(meter, model, REAL_KEY) as grant:
                            limits = httpx.Limits(max_keepalive_connections=0)  # a new connection a call
                            async with httpx.AsyncClient(timeout=30, limits=limits) as client:
                                for _ in range(25):
                                    r = await client.post(
                                        f"{gateway.url}/v1/chat/completions",
                                        json=BODY,
                                        headers={"authorization": f"Bearer {grant.token}"},
                                    )
                                    assert r.status_code == 200, r.text

                    nursery.start_soon(session)
    assert len(up.calls) == 200
    for meter, ledger, _ in meters:
        flight = next(iter(ledger.running.values()))
        assert flight.held == 0 and flight.spent == 25 * cost(321, 17)
        assert meter.calls == 25


@pytest.mark.trio
@pytest.mark.parametrize(
    "buckets",
    [
        {"input": -1000, "output": 5},
        {"input": 10, "output": None},
        {"input": "10", "output": 5},
        {"input": 1.5, "output": 2},
        {"input": True, "output": 1},
        {"input": 10, "cache_read": -3, "output": 1},
        [10, 5],
        "10",
    ],
)
async def test_a_charge_a_relay_got_wrong_is_charged_the_worst_case_never_less(buckets):
    # A relay is ours, but it reads what a provider sends: whatever reaches the engine as a
    # charge that is not non-negative integers by bucket settles the hold at its worst case.
    from benchtui.core.contract import Usage

    meter, ledger, _ = open_meter(Decimal("1"))
    async with open_gateway() as gateway, gateway.session(meter, meter._model, REAL_KEY) as binding:
        [relay] = gateway._relays
        worst = Usage(5000, 100, worst_case=True)
        hold = meter.price(worst)
        assert await meter.authorise(hold)
        relay.holds[7] = (binding, hold, worst)
        gateway._charge(relay, 7, buckets, True, "0.5")
    flight = ledger.running["m-0"]
    assert flight.held == 0 and flight.spent == cost(5000, 100)


@pytest.mark.trio
async def test_a_relay_that_speaks_nonsense_is_started_again():
    async with open_gateway() as gateway:
        [relay] = gateway._relays
        from benchtui.runners.kit.gateway.link import Lines

        async with trio.open_nursery() as nursery:
            gateway._received(relay, nursery, Lines(), b'["h", 1, "tok"]\n')  # a hold without its counts
        with trio.fail_after(20):
            while gateway.restarts < 1 or not relay_pids(gateway):
                await trio.sleep(0.05)
        assert not alive(relay.process.pid) or relay.process.returncode is not None


@pytest.mark.trio
async def test_a_relay_that_cannot_start_is_one_plain_error_naming_why(monkeypatch):
    # A session whose runner cannot start says why in one line (its reason), not "Exceptions
    # from Trio nursery (1 sub-exception)".
    from benchtui.runners.kit.gateway import GatewayError, server

    monkeypatch.setattr(server, "RELAY_MODULE", "benchtui.no_such_relay")
    monkeypatch.setattr(server, "STARTUP_S", 2.0)
    with pytest.raises(GatewayError, match="did not start: .*No module named benchtui.no_such_relay"):
        async with open_gateway():
            pass
