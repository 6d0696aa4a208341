"""The tool gate of an agent on a Ray node: the node's gate (`toolgate.node`, in a thread as in a
Ray task) asks this engine's over TCP, with the engine's real meter deciding. Exact counts under
parallel calls, free calls cached here, submits verified here and ending the session there, and
nothing runs on the node that the engine did not grant — not when the engine is gone, not when
a grant is repeated, not for a call the node never asked about."""

from __future__ import annotations

import json
import os
from contextlib import asynccontextmanager
from decimal import Decimal

import pytest
import trio
import trio.testing
from support.gateway import open_meter
from support.judging import scripted_verification
from support.mini import STAND_IN_PRED

from benchtui.core.contract import LogicalLimits
from benchtui.core.target import Toolbox, Verdict
from benchtui.runners.kit import toolgate as gate
from benchtui.runners.kit.ray.callback import CallbackListener
from benchtui.runners.kit.toolgate import counting
from benchtui.runners.kit.toolgate.node import NodeGate, NodeGateSpec
from benchtui.runners.kit.toolgate.remote import NodeTools
from benchtui.runners.kit.toolgate.submit import Submissions

LIMITS = LogicalLimits(tools=(("pred", 5), ("pred solve", 2)))


def engine_gate(limits=LIMITS, **more):
    meter, _, _ = open_meter(Decimal("1"), limits=limits)
    names = gate.tool_names(limits)
    server = gate.ToolGate(meter, limits, {n: n for n in names}, remote=NodeTools(), **more)
    return meter, server


@asynccontextmanager
async def on_a_node(tmp_path, opened: counting.Gate, *, tools=None, real_pred=STAND_IN_PRED):
    """`opened` served here; a NodeGate for it in a thread; the shims' environment."""
    listener = CallbackListener()
    async with trio.open_nursery() as nursery:
        await nursery.start(listener.serve, "127.0.0.1")
        token, arrivals = listener.expect()
        spec = NodeGateSpec(
            listener.address, token, tuple(tools or opened.tools), False, Toolbox({"pred": str(real_pred)})
        )
        folder = tmp_path / "node"
        (folder / "workdir").mkdir(parents=True)
        node = NodeGate(spec, folder, folder / "workdir")
        sandbox = await trio.to_thread.run_sync(node.open)

        engine = trio.CancelScope()

        async def serve() -> None:
            arrival = await arrivals.receive()
            try:
                with engine:
                    await counting.serve_node(opened, arrival.stream)
            finally:
                arrival.finished.set()

        nursery.start_soon(serve)
        env = {**os.environ, "PATH": f"{sandbox['shims']}:/usr/bin:/bin"}
        node.engine = engine  # a test's way to take the engine's end away
        try:
            yield node, env
        finally:
            await trio.to_thread.run_sync(node.close)
            nursery.cancel_scope.cancel()


def opened_gate(server, submissions=None, tools=("pred",)):
    return counting.Gate(None, server, submissions, tuple(tools), server.remote)


def counting_tool(tmp_path):
    """A tool that adds a line to its marker file each time it runs."""
    marker, tool = tmp_path / "runs", tmp_path / "tool"
    tool.write_text(f"#!/bin/sh\necho x >> {marker}\n")
    tool.chmod(0o755)
    return tool, marker


async def shell(script: str, env: dict[str, str], cwd=None):
    return await trio.run_process(
        ["bash", "-c", script], env=env, capture_stdout=True, capture_stderr=True, cwd=cwd
    )


@pytest.mark.trio
async def test_twenty_calls_on_a_node_at_once_run_exactly_the_limit(tmp_path):
    meter, server = engine_gate()
    async with on_a_node(tmp_path, opened_gate(server)) as (_, env):
        with trio.fail_after(30):
            done = await shell("for i in $(seq 20); do pred --version & done; wait", env)
    assert done.stdout.decode().count("pred 0.5.0-stand-in") == 5
    assert done.stderr.decode().count("budget of 5 `pred` calls is spent (counter tools.pred)") == 15
    assert (server.granted, server.refused, server.ran, meter.used("tools.pred")) == (5, 15, 5, 5)


@pytest.mark.trio
async def test_a_node_call_runs_where_the_agent_stands_with_its_stdio(tmp_path):
    meter, server = engine_gate()
    async with on_a_node(tmp_path, opened_gate(server)) as (node, env):
        workdir = node.workdir
        with trio.fail_after(30):
            await shell("pred create MIS --graph 0-1,1-2 -o source.json", env, cwd=workdir)
            done = await shell("pred solve source.json > out.txt; echo rc=$?", env, cwd=workdir)
    assert (workdir / "source.json").exists(), "the tool ran beside the agent's files, on the node"
    assert "rc=0" in done.stdout.decode() and (workdir / "out.txt").stat().st_size > 0
    assert (meter.used("tools.pred"), meter.used("tools.pred solve")) == (2, 1)


@pytest.mark.trio
async def test_free_calls_on_a_node_take_no_unit_and_run_once(tmp_path):
    limits = LogicalLimits(tools=(("pred", 1),), free=("pred --version", "pred list"))
    meter, server = engine_gate(limits, free=limits.free)
    async with on_a_node(tmp_path, opened_gate(server)) as (_, env):
        with trio.fail_after(30):
            done = await shell(
                "for i in 1 2 3 4 5; do pred --version; done; pred list --rules >/dev/null; "
                "pred list x.json; echo rc=$?; pred --version x.json; echo rc=$?",
                env,
            )
    out = done.stdout.decode()
    assert out.count("pred 0.5.0-stand-in") == 5  # replayed from the engine's cache, byte for byte
    assert meter.used("tools.pred") == 1 and out.count("rc=126") == 1
    assert server.ran == 3


@pytest.mark.trio
async def test_a_submit_on_a_node_is_verified_here_and_an_accepted_one_ends_the_session_there(tmp_path):
    limits = LogicalLimits(submits=2)
    meter, server = engine_gate(limits)
    checked: list[dict] = []

    async def verify(cert):
        checked.append(cert)
        return Verdict.of("violation" if cert.get("rule") == "Good" else "no_violation", "verified here")

    how = scripted_verification(verify)
    submissions = Submissions(meter, limits, how, record=lambda kind, **f: None, budget_line=lambda: "")
    server.submit = submissions
    ended = trio.Event()
    async with on_a_node(tmp_path, opened_gate(server, submissions, ["submit"])) as (node, env):
        token = trio.lowlevel.current_trio_token()
        node.on_end = lambda: token.run_sync_soon(ended.set)
        (node.workdir / "bad.json").write_text(json.dumps({"rule": "Bad"}))
        (node.workdir / "good.json").write_text(json.dumps({"rule": "Good"}))
        with trio.fail_after(30):
            first = await shell("submit bad.json; echo rc=$?", env, cwd=node.workdir)
            second = await shell("submit good.json; echo rc=$?", env, cwd=node.workdir)
            await ended.wait()
    assert first.stdout.decode().startswith("REJECTED\nverified here\nattempts left: 1")
    assert second.stdout.decode().startswith("ACCEPTED\nverified here\nattempts left: 0\nthe session ends")
    assert [c["rule"] for c in checked] == ["Bad", "Good"] and node.ended
    assert [v.status for _, v in submissions.checked] == ["rejected", "accepted"]
    assert meter.used("submits") == 2


@pytest.mark.trio
async def test_with_the_engine_gone_a_node_refuses_every_call_and_runs_nothing(tmp_path):
    tool, marker = counting_tool(tmp_path)
    limits = LogicalLimits(tools=(("pred", 5),))
    meter, server = engine_gate(limits)
    async with on_a_node(tmp_path, opened_gate(server), real_pred=tool) as (node, env):
        with trio.fail_after(30):
            node.engine.cancel()  # the engine's end goes away: its connection closes
            while not node.gone:
                await trio.sleep(0.02)
            done = await shell("pred --version; echo rc=$?", env)
    assert "rc=126" in done.stdout.decode()
    assert "the engine's tool gate is out of reach; not run" in done.stderr.decode()
    assert not marker.exists() and meter.used("tools.pred") == 0


@pytest.mark.trio
async def test_a_node_runs_a_grant_once_and_nothing_it_did_not_ask_about(tmp_path):
    tool, marker = counting_tool(tmp_path)
    listener = await trio.open_tcp_listeners(0, host="127.0.0.1")
    address = listener[0].socket.getsockname()
    spec = NodeGateSpec(address, "t0", ("pred",), False, Toolbox({"pred": str(tool)}))
    folder = tmp_path / "node"
    (folder / "workdir").mkdir(parents=True)
    node = NodeGate(spec, folder, folder / "workdir")
    async with trio.open_nursery() as nursery:
        opened = trio.Event()

        async def open_node() -> None:
            nonlocal sandbox
            sandbox = await trio.to_thread.run_sync(node.open)
            opened.set()

        sandbox: dict = {}
        nursery.start_soon(open_node)
        stream = await listener[0].accept()
        await opened.wait()
        first = await stream.receive_some(100)
        assert first == b"t0\n"
        # Before any call: a grant for a call the node never made runs nothing.
        await stream.send_all(b'{"id": 1, "do": "run"}\n{"id": 7, "do": "capture"}\n')
        env = {**os.environ, "PATH": f"{sandbox['shims']}:/usr/bin:/bin"}
        result: dict = {}

        async def agent() -> None:
            result["done"] = await shell("pred x; echo rc=$?", env)

        nursery.start_soon(agent)
        request = b""
        while not request.endswith(b"\n"):
            request += await stream.receive_some(1 << 16)
        call = json.loads(request)
        assert call["argv"] == ["pred", "x"]
        ref = call["call"]
        # The same grant three times: it runs once.
        await stream.send_all(
            b"".join(json.dumps({"id": ref, "do": "run"}).encode() + b"\n" for _ in range(3))
        )
        reply = b""
        while not reply.endswith(b"\n"):
            reply += await stream.receive_some(1 << 16)
        assert json.loads(reply) == {"id": ref, "exit": 0}
        await stream.send_all(
            json.dumps({"id": ref, "answer": {"exit": 0, "stdout": "", "stderr": ""}}).encode() + b"\n"
        )
        with trio.fail_after(20):
            while "done" not in result:
                await trio.sleep(0.02)
        await trio.to_thread.run_sync(node.close)
        await stream.aclose()
        nursery.cancel_scope.cancel()
    assert "rc=0" in result["done"].stdout.decode()
    assert marker.read_text() == "x\n"


@pytest.mark.trio
@pytest.mark.parametrize(
    "line",
    [
        b"not json\n",
        b"[1, 2]\n",
        b'{"call": "1", "argv": ["pred"]}\n',
        b'{"call": 1, "argv": []}\n',
        b'{"call": 1, "argv": ["pred"], "cwd": 3}\n',
        b'{"call": 1, "argv": ["pred"], "file": 3}\n',
        b'{"call": 1, "argv": ["pred", "s"]}\n{"call": 1, "argv": ["pred", "t"]}\n',  # a number twice
    ],
)
async def test_a_node_speaking_nonsense_is_cut_off_without_a_unit_or_a_crash(tmp_path, line):
    meter, server = engine_gate()
    a, b = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.remote.serve, server, a)
        await b.send_all(line)
        with trio.fail_after(10):
            # The engine closes its end: what the node reads ends (after any "run" it was owed).
            while data := await b.receive_some(1 << 16):
                assert b'"do"' not in data or line.count(b"call") == 2, data
        nursery.cancel_scope.cancel()
    assert meter.used("tools.pred") <= 1  # the one good call of a number used twice, at most


@pytest.mark.trio
async def test_a_node_runs_nothing_until_the_engine_has_its_unit_on_disk(tmp_path):
    """F7 on a node: the grant goes out only once the meter's `use` has returned (its unit
    durable). Here `use` is held open: the tool must not run until it is let go."""
    tool, marker = counting_tool(tmp_path)
    limits = LogicalLimits(tools=(("pred", 5),))
    meter, server = engine_gate(limits)
    release, entered = trio.Event(), trio.Event()
    durable = meter.use

    async def slow_use(*counters):
        entered.set()
        await release.wait()
        return await durable(*counters)

    meter.use = slow_use
    async with on_a_node(tmp_path, opened_gate(server), real_pred=tool) as (_, env):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(shell, "pred --version", env)
            with trio.fail_after(20):
                await entered.wait()
            await trio.sleep(0.5)  # time enough for a grant sent too early to run the tool
            assert not marker.exists()
            release.set()
        assert marker.read_text() == "x\n" and meter.used("tools.pred") == 1
