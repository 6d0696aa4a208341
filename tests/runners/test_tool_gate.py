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
from benchtui.core.target import Toolbox
from benchtui.runners.kit import toolgate as gate
from benchtui.runners.kit.toolgate import server as server_module

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
        b'{"argv": ["pred", "list"], "cwd": 3}\n',
        b'{"argv": ["pred", "list"]}\n',  # no stdio passed: nothing to run it with
        b"[]\n",
    ],
)
async def test_garbage_gets_a_refusal_and_no_tool(tmp_path, request_bytes):
    async with trio.open_nursery() as nursery:
        meter, server, env = await serve(tmp_path, nursery)
        answer, fds = await trio.to_thread.run_sync(ask, tmp_path / "gate", request_bytes)
        # The gate still serves the next, well-formed request.
        good, good_fds = await trio.to_thread.run_sync(
            ask, tmp_path / "gate", b'{"argv": ["pred", "--version"], "cwd": "/"}\n', True
        )
        nursery.cancel_scope.cancel()
    assert answer["exit"] == 126 and answer["stderr"].startswith("benchtui:") and fds == []
    assert good["exit"] == 0 and good_fds == []  # run by the gate: nothing handed out
    assert meter.used("tools.pred") == 1 and server.ran == 1


def ask(path, data: bytes, stdio: bool = False) -> tuple[dict, list[int]]:
    """A client as hostile as it likes: raw bytes, optionally its stdio; what comes back."""
    with socket.socket(socket.AF_UNIX) as sock, open(os.devnull, "w") as sink:
        sock.connect(str(path))
        if stdio:
            socket.send_fds(sock, [data], [sink.fileno()] * 3)
        else:
            sock.sendall(data)
        message, fds, _, _ = socket.recv_fds(sock, 1 << 16, 4)
        while not message.endswith(b"\n"):
            more = sock.recv(1 << 16)
            if not more:
                break
            message += more
    for fd in fds:
        os.close(fd)
    return json.loads(message), fds


@pytest.mark.trio
async def test_a_killed_shim_takes_its_tool_with_it(tmp_path):
    """The gate runs the tool: when the agent's command is killed (its timeout), the tool stops
    too, never left running outside the sandbox."""
    slow = tmp_path / "slow"
    slow.write_text(f"#!/bin/sh\necho $$ > {tmp_path / 'pid'}\nexec sleep 30\n")
    slow.chmod(0o755)
    limits = LogicalLimits(tools=(("slow", 3),))
    meter, _, _ = open_meter(Decimal("1"), limits=limits)
    async with trio.open_nursery() as nursery:
        server = gate.ToolGate(meter, limits, {"slow": str(slow)})
        await nursery.start(server.serve, tmp_path / "gate")
        interpreter, _ = gate.python()
        gate.install(
            tmp_path / "shims",
            ["slow"],
            interpreter=interpreter,
            shim=str(gate.SHIM),
            gate=str(tmp_path / "gate"),
        )
        env = {**os.environ, "PATH": f"{tmp_path / 'shims'}:/usr/bin:/bin"}
        with trio.fail_after(20):
            await shell("timeout -s KILL 1 slow; true", env)
            pid = int((tmp_path / "pid").read_text())
            while os.path.exists(f"/proc/{pid}") and "zombie" not in _state(pid):
                await trio.sleep(0.05)
        nursery.cancel_scope.cancel()
    assert meter.used("tools.slow") == 1


def _state(pid: int) -> str:
    try:
        return open(f"/proc/{pid}/status").read().lower()
    except OSError:
        return "zombie"


@pytest.mark.trio
async def test_free_calls_take_no_unit_and_run_once(tmp_path):
    limits = LogicalLimits(tools=(("pred", 1),), free=("pred --version", "pred list"))
    meter, ledger, _ = open_meter(Decimal("1"), limits=limits)
    async with trio.open_nursery() as nursery:
        server = gate.ToolGate(meter, limits, {"pred": str(STAND_IN_PRED)}, free=limits.free)
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
        done = await shell(
            "for i in 1 2 3 4 5; do pred --version; done; pred list --rules >/dev/null; pred list x.json; "
            "echo rc=$?; pred --version x.json; echo rc=$?",
            env,
        )
        nursery.cancel_scope.cancel()
    out = done.stdout.decode()
    assert out.count("pred 0.5.0-stand-in") == 5
    # `pred list x.json` is no free call (an argument follows): it takes the one unit; the
    # next non-free call is refused.
    assert meter.used("tools.pred") == 1 and out.count("rc=126") == 1
    assert server.ran == 3  # --version once, list --rules once, list x.json once


def test_a_tool_runs_in_the_agent_directory_only_inside_the_session_copy(tmp_path):
    from benchtui.runners.kit.bubblewrap import WORKDIR, tool_launch

    copy = tmp_path / "workdir"
    (copy / "sub").mkdir(parents=True)
    (copy / "out").symlink_to(tmp_path)  # a link out of the copy: it resolves in the tool's sandbox only
    launch = tool_launch(copy)
    for cwd, expected in [
        ("/workspace/sub", "/workspace/sub"),
        ("/workspace/out", "/workspace/out"),  # never resolved on the host
        ("/workspace/../etc", WORKDIR),
        ("/etc", WORKDIR),
        (str(copy / "sub"), WORKDIR),  # the host's name of it means nothing in a sandbox
        ("/workspace-evil", WORKDIR),
        ("", WORKDIR),
    ]:
        argv, _ = launch("pred", "/real/pred", ["solve", "x.json"], cwd)
        assert argv[argv.index("--chdir") + 1] == expected, cwd
        assert argv[argv.index("--bind") + 1 : argv.index("--bind") + 3] == [str(copy), WORKDIR]
        assert argv[-3:] == ["/opt/benchtui/bin/pred", "solve", "x.json"]
        assert "--unshare-net" in argv and "--clearenv" in argv


def test_unhidden_names_each_counted_tool_the_sandbox_shows(tmp_path):
    inside = Toolbox({"pred": "/usr/local/bin/pred"})
    assert gate.unhidden(["pred"], inside, lambda p: p.startswith("/usr")) == [
        "`pred` is counted but the sandbox shows its executable /usr/local/bin/pred"
    ]
    outside = Toolbox({"pred": str(tmp_path / "pred")})
    assert gate.unhidden(["pred"], outside, lambda p: p.startswith("/usr")) == []
    assert gate.unhidden(["ls"], None, lambda p: False)[0].startswith(
        "`ls` is counted but the sandbox shows it at"
    )


@pytest.mark.trio
async def test_free_calls_with_ever_new_options_are_counted_past_a_bound(tmp_path, monkeypatch):
    """An agent varying a free call's options (`pred list -a1`, `-a2`, …) to run pred without
    limit: past MAX_FREE_CALLS distinct ones, each takes a unit like any call."""
    monkeypatch.setattr(server_module, "MAX_FREE_CALLS", 3)
    limits = LogicalLimits(tools=(("pred", 2),), free=("pred --version",))
    meter, _, _ = open_meter(Decimal("1"), limits=limits)
    async with trio.open_nursery() as nursery:
        server = gate.ToolGate(meter, limits, {"pred": str(STAND_IN_PRED)}, free=limits.free)
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
        done = await shell(
            "for i in 1 2 3 4 5 6 7; do pred --version -v$i >/dev/null 2>&1; echo rc=$?; done", env
        )
        nursery.cancel_scope.cancel()
    assert server.ran == 5 and meter.used("tools.pred") == 2  # 3 free, 2 counted, 2 refused
    assert done.stdout.decode().count("rc=126") == 2


@pytest.mark.trio
async def test_the_gate_answers_the_agent_inert(tmp_path):
    # A verdict's reason quotes the certificate (pred's error line about its instance does): before,
    # the agent's C1 and bidi controls came back in the gate's answer as it wrote them.
    from support.judging import scripted_verification

    from benchtui.core.target import Verdict
    from benchtui.runners.kit.toolgate.submit import Submissions

    limits = LogicalLimits(submits=1)
    meter, _, _ = open_meter(Decimal("1"), limits=limits)

    async def verify(cert):
        reason = f"pred reduce failed: unknown problem {cert['rule']!s}\n\tsee --help"
        return Verdict("rejected", reason, "tool_refused")

    how = scripted_verification(verify)
    submissions = Submissions(meter, limits, how, record=lambda kind, **f: None, budget_line=lambda: "")
    server = gate.ToolGate(meter, limits, {}, submit=submissions)
    (tmp_path / "cert.json").write_text(json.dumps({"rule": "A\u009b31mB\u202eC\u0085D\x1b]0;t\x07E"}))
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve, tmp_path / "gate")
        interpreter, _ = gate.python()
        gate.install(
            tmp_path / "shims",
            ["submit"],
            interpreter=interpreter,
            shim=str(gate.SHIM),
            gate=str(tmp_path / "gate"),
        )
        env = {**os.environ, "PATH": f"{tmp_path / 'shims'}:/usr/bin:/bin"}
        with trio.fail_after(30):
            done = await trio.run_process(
                ["bash", "-c", "submit cert.json"], env=env, cwd=tmp_path, capture_stdout=True, check=False
            )
        nursery.cancel_scope.cancel()
    out = done.stdout.decode()
    assert out.startswith("REJECTED\npred reduce failed: unknown problem A31mBCD]0;tE\n\tsee --help\n"), out
    assert not [c for c in out if (ord(c) < 32 and c not in "\t\n") or 0x7F <= ord(c) < 0xA0 or c == "\u202e"]
