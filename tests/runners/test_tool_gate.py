"""The tool gate and its shim, with the engine's real meter: exact under parallel calls, and a
client that sends garbage gets a refusal, never a tool and never a crash of the gate."""

from __future__ import annotations

import json
import os
import socket
from decimal import Decimal

import pytest
import trio
from support.gateway import open_meter
from support.mini import STAND_IN_PRED

from benchtui.core.contract import LogicalLimits
from benchtui.runners.kit import toolgate as gate

LIMITS = LogicalLimits(tools=(("pred", 5), ("pred solve", 2)))


async def serve(tmp_path, nursery, limits=LIMITS):
    meter, ledger, _ = open_meter(Decimal("1"), limits=limits)
    server = gate.ToolGate(meter, limits, {"pred": str(STAND_IN_PRED)})
    await nursery.start(server.serve, tmp_path / "gate")
    interpreter, _ = gate.python()
    gate.install(
        tmp_path / "shims",
        ["pred"],
        interpreter=interpreter,
        shim=str(gate.SHIM),
        gate=str(tmp_path / "gate"),
    )
    env = {**os.environ, "PATH": f"{tmp_path / 'shims'}:/usr/bin:/bin"}
    return meter, server, env


async def shell(script: str, env: dict[str, str]):
    return await trio.run_process(["bash", "-c", script], env=env, capture_stdout=True, capture_stderr=True)


@pytest.mark.trio
async def test_twenty_shims_at_once_run_exactly_the_limit(tmp_path):
    async with trio.open_nursery() as nursery:
        meter, server, env = await serve(tmp_path, nursery)
        done = await shell("for i in $(seq 20); do pred --version & done; wait", env)
        nursery.cancel_scope.cancel()
    assert done.stdout.decode().count("pred 0.5.0-stand-in") == 5
    assert done.stderr.decode().count("budget of 5 `pred` calls is spent (counter tools.pred)") == 15
    assert (server.granted, server.refused, meter.used("tools.pred")) == (5, 15, 5)
    assert meter.exhausted == ["tools.pred"]


@pytest.mark.trio
async def test_a_refused_prefix_takes_nothing_from_the_wider_one(tmp_path):
    async with trio.open_nursery() as nursery:
        meter, _, env = await serve(tmp_path, nursery)
        done = await shell(
            "for i in 1 2 3; do pred -q solve none.json; echo rc=$?; done; pred --version", env
        )
        nursery.cancel_scope.cancel()
    assert done.stdout.decode().count("rc=126") == 1  # the third solve (options before it count too)
    assert (meter.used("tools.pred solve"), meter.used("tools.pred")) == (2, 3)


@pytest.mark.trio
@pytest.mark.parametrize(
    "request_bytes",
    [
        b"not json\n",
        b'{"argv": "pred"}\n',
        b'{"argv": []}\n',
        b'{"argv": [1, 2]}\n',
        b'{"argv": ["sh"]}\n',
        b"[]\n",
    ],
)
async def test_garbage_gets_a_refusal_and_no_tool(tmp_path, request_bytes):
    async with trio.open_nursery() as nursery:
        meter, server, env = await serve(tmp_path, nursery)
        answer, fds = await trio.to_thread.run_sync(ask, tmp_path / "gate", request_bytes)
        # The gate still serves the next, well-formed request.
        good, good_fds = await trio.to_thread.run_sync(
            ask, tmp_path / "gate", b'{"argv": ["pred", "list"]}\n'
        )
        nursery.cancel_scope.cancel()
    assert answer["ok"] is False and answer["message"].startswith("benchtui:") and fds == []
    assert good["ok"] is True and len(good_fds) == 1
    assert meter.used("tools.pred") == 1


def ask(path, data: bytes) -> tuple[dict, list[int]]:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(path))
        sock.sendall(data)
        message, fds, _, _ = socket.recv_fds(sock, 1 << 16, 1)
    for fd in fds:
        os.close(fd)
    return json.loads(message), fds
