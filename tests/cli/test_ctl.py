"""`benchtui ctl` against a running campaign, through the control socket in its run dir."""

from __future__ import annotations

import json
import os
import signal
import socket
from functools import partial
from pathlib import Path

import pytest
import trio
from support import Recorder, benchtui, last_states, ledger, popen, start, write_campaign
from support.ctl import ctl, in_call, prepare

from benchtui.engine import rundir
from benchtui.engine.control import socket_address

# Time is a MockClock, frozen while `ctl` talks to the campaign (a session sleeping its latency
# stays running however slow the machine), then let run (autojump) to finish the campaign. Waits
# are on events, never polling.


@pytest.mark.trio
async def test_ctl_pauses_resumes_and_reports_status(tmp_path, capsys, mock_clock):
    prep = prepare(tmp_path, sessions=4, total="10", latency=1, parallelism=2)
    run_dir = prep.run_dir
    rec = Recorder()
    async with trio.open_nursery() as nursery:
        scheduler, result = await start(prep, nursery, rec)
        await rec.until(lambda: in_call(rec) == 2)
        assert await ctl(capsys, run_dir, "pause") == (
            0,
            "campaign t: paused: no new session starts; running ones go on",
        )
        assert scheduler.paused
        # The reply comes before the pause's commit, which may land before this task runs again
        # (counting commits from here waited forever then, under load): wait for the file.
        await rec.until(lambda: ledger(run_dir)["paused"] is True)  # the pause is on disk
        rc, out = await ctl(capsys, "--state-dir", tmp_path / "runs", "status")  # the latest run
        assert rc == 0
        assert out.splitlines()[0].startswith("campaign t: paused, runner fake, parallelism 2")
        assert "fake/model-a" in out and "$0.2000" not in out and "$10.0000" in out  # the per-model table
        assert "logical budget" not in out  # a money-only campaign
        assert f"sessions: `benchtui view {run_dir}` shows each one, live" in out
        assert await ctl(capsys, run_dir, "parallelism", "3") == (0, "campaign t: parallelism 3")
        assert scheduler.parallelism == 3
        assert (await ctl(capsys, run_dir, "resume"))[0] == 0
        assert not scheduler.paused
        mock_clock.autojump_threshold = 0
    assert result["finished"] is True
    assert ledger(run_dir)["parallelism"] == 3


@pytest.mark.trio
async def test_ctl_kills_a_session_switches_runner_and_stops(tmp_path, capsys, mock_clock):
    prep = prepare(
        tmp_path,
        sessions=3,
        total="10",
        latency=30,
        parallelism=2,
        extra_runners='[runners.alt]\nkind = "fake"\n',
    )
    run_dir = prep.run_dir
    rec = Recorder()
    async with trio.open_nursery() as nursery:
        scheduler, result = await start(prep, nursery, rec)
        await rec.until(lambda: in_call(rec) == 2)
        assert await ctl(capsys, run_dir, "kill", "fake_model-a-0000") == (
            0,
            "campaign t: killed fake_model-a-0000",
        )
        assert await ctl(capsys, run_dir, "runner", "alt") == (
            0,
            "campaign t: runner alt for sessions not yet started",
        )
        assert scheduler.runner == "alt"
        assert (await ctl(capsys, run_dir, "stop", "--now"))[0] == 0
    assert result["finished"] is False
    last = last_states(run_dir)
    assert last["fake_model-a-0000"]["state"] == "killed"
    assert last["fake_model-b-0000"]["state"] == "error" and last["fake_model-b-0000"]["retryable"]
    assert not (run_dir / rundir.CONTROL_SOCKET).exists()  # removed when the run ends


@pytest.mark.trio
async def test_client_errors_are_one_line_with_exit_code_2(tmp_path, capsys, mock_clock):
    prep = prepare(tmp_path, sessions=2, total="10", latency=30, parallelism=1)
    run_dir = prep.run_dir
    rec = Recorder()
    async with trio.open_nursery() as nursery:
        scheduler, _ = await start(prep, nursery, rec)
        await rec.until(lambda: in_call(rec) == 1)
        for argv, message in [
            ((run_dir, "kill", "no-such-session"), "benchtui: no running session 'no-such-session'"),
            ((run_dir, "runner", "nope"), "benchtui: unknown runner profile 'nope' (campaign has: fake)"),
            ((run_dir, "parallelism", "0"), "benchtui: ctl parallelism takes a whole number from 1 to 10000"),
            (
                (run_dir, "parallelism", "9" * 30),
                "benchtui: ctl parallelism takes a whole number from 1 to 10000",
            ),
            ((run_dir, "kill"), "benchtui: ctl kill takes 1 argument(s)"),
            (
                (run_dir, "frobnicate"),
                "benchtui: ctl: expected a command (pause | resume | stop | status | "
                "kill | runner | parallelism)",
            ),
            ((tmp_path / "elsewhere", "pause"), f"benchtui: {tmp_path / 'elsewhere'}: does not exist"),
            (
                ("--state-dir", tmp_path / "none", "pause"),
                f"benchtui: no run under {tmp_path / 'none'} (give RUN_DIR or --state-dir)",
            ),
        ]:
            assert await ctl(capsys, *argv) == (2, message)
        scheduler.stop(now=True)
    assert await ctl(capsys, run_dir, "pause") == (2, f"benchtui: the campaign in {run_dir} is not running")
    rc, out = await ctl(capsys, run_dir, "status")  # nothing runs it: read from the run dir
    assert rc == 0 and out.splitlines()[0].startswith("campaign t: stopped, "), out
    assert "(not running)" in out and f"`benchtui --resume {run_dir}` continues it" in out


@pytest.mark.trio
async def test_a_stale_socket_is_not_running_and_is_replaced_by_the_next_run(tmp_path, capsys, mock_clock):
    prep = prepare(tmp_path, sessions=1, total="10", latency=1, parallelism=1)
    run_dir = prep.run_dir
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(run_dir / rundir.CONTROL_SOCKET))  # as if a killed benchtui left it behind
    stale.close()
    assert await ctl(capsys, run_dir, "pause") == (2, f"benchtui: the campaign in {run_dir} is not running")
    async with trio.open_nursery() as nursery:
        scheduler, _ = await start(prep, nursery)
        assert (await ctl(capsys, run_dir, "status"))[0] == 0
        mock_clock.autojump_threshold = 0


@pytest.mark.trio
async def test_a_run_dir_deeper_than_a_unix_socket_path_still_works(tmp_path, capsys, mock_clock):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    prep = prepare(tmp_path, state_dir=deep, sessions=1, total="10", latency=5, parallelism=1)
    assert len(str(prep.run_dir / rundir.CONTROL_SOCKET)) > 108
    async with trio.open_nursery() as nursery:
        scheduler, _ = await start(prep, nursery)
        assert await ctl(capsys, prep.run_dir, "pause") == (
            0,
            f"campaign {prep.run_dir.name}: paused: no new session starts; running ones go on",
        )
        scheduler.stop(now=True)


@pytest.mark.trio
async def test_bad_requests_get_an_error_reply_and_the_campaign_goes_on(tmp_path, mock_clock):
    prep = prepare(tmp_path, sessions=2, total="10", latency=1, parallelism=1)

    def exchange(lines: list[bytes]) -> list[dict]:
        with socket.socket(socket.AF_UNIX) as sock, socket_address(prep.run_dir / rundir.CONTROL_SOCKET) as a:
            sock.connect(a)
            sock.sendall(b"".join(lines))
            sock.shutdown(socket.SHUT_WR)
            return [json.loads(line) for line in sock.makefile("rb")]

    async with trio.open_nursery() as nursery:
        _, result = await start(prep, nursery)
        replies = await trio.to_thread.run_sync(
            partial(
                exchange, [b"not json\n", b"[1]\n", b'{"cmd": "x"}\n', b'{"cmd": "parallelism", "n": "2"}\n']
            )
        )
        assert [r["ok"] for r in replies] == [False] * 4
        assert replies[2]["error"] == "unknown command 'x'"
        mock_clock.autojump_threshold = 0
    assert result["finished"] is True


def test_status_of_a_finished_run_reads_the_run_dir_and_changes_nothing(tmp_path):
    write_campaign(tmp_path, sessions=5)
    run = benchtui("t.toml", "--no-ui", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    run_dir = Path("runs") / "t"
    headless_end = run.stdout.split("campaign finished\n")[1]
    before = {p: p.read_bytes() for p in (tmp_path / run_dir).rglob("*") if p.is_file()}
    status = benchtui("ctl", "status", cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    head, rest = status.stdout.split("\n", 1)
    assert head == "campaign t: finished (not running), runner fake, 10/10 sessions ended"
    endings, rest = rest.split("\n", 3)[:3], rest.split("\n", 3)[3]
    # Why its sessions ended, by name (every fake session claims a bug, two were skipped).
    assert endings == [
        "endings (why its sessions ended):",
        "  fake/model-a: found ×3",
        "  fake/model-b: found ×3",
    ]
    assert rest == headless_end  # the same table and lines as the run printed when it ended
    assert "fake/model-a                    3     2     0      0     3    $0.0900    $0.1000" in rest
    assert f"results: {run_dir / 'results'}/" in rest and "--resume" not in rest
    assert f"sessions: `benchtui view {run_dir}` shows each one" in rest  # the command that reads them
    assert {p: p.read_bytes() for p in (tmp_path / run_dir).rglob("*") if p.is_file()} == before


LOGICAL = """
[budget.per_session]
model_calls = 2
shell_actions = 12
[budget.per_session.tools]
pred = 24
"""


@pytest.mark.trio
async def test_ctl_status_shows_the_logical_budget_each_running_session_has_taken(
    tmp_path, capsys, mock_clock
):
    prep = prepare(tmp_path, sessions=2, total="10", latency=1, parallelism=2, extra_runners=LOGICAL)
    run_dir = prep.run_dir
    rec = Recorder()
    async with trio.open_nursery() as nursery:
        await start(prep, nursery, rec)
        await rec.until(lambda: in_call(rec) == 2)  # each took its `model_calls` unit, on disk
        rc, out = await ctl(capsys, run_dir, "status")
        assert rc == 0
        lines = out.splitlines()
        assert lines[1:4] == [
            "logical budget used:",
            "  fake_model-a-0000  calls 1/2  actions 0/12  pred 0/24",
            "  fake_model-b-0000  calls 1/2  actions 0/12  pred 0/24",
        ]
        assert ledger(run_dir)["running"]["fake_model-a-0000"]["counters"] == {"model_calls": 1}
        mock_clock.autojump_threshold = 0


def _running(tmp_path: Path, name: str):
    """`benchtui <name>.toml --no-ui` in the shared state dir, once its control socket answers."""
    write_campaign(tmp_path, name=name, sessions=4, latency=60, parallelism=1)
    proc = popen(f"{name}.toml", "--no-ui", cwd=tmp_path)
    for line in proc.stdout:  # type: ignore[union-attr]
        if line.startswith("start "):
            return proc
    raise AssertionError(proc.stderr.read())  # type: ignore[union-attr]


@pytest.mark.parametrize("link", ["symbolic", "hard"])
def test_ctl_refuses_a_socket_that_answers_for_another_campaign_and_leaves_that_one_alone(tmp_path, link):
    # Before: a control socket linked to another campaign's stopped that campaign, while ctl
    # printed the first one's name.
    a, b = _running(tmp_path, "a"), _running(tmp_path, "b")
    runs = tmp_path / "runs"
    try:
        ours, theirs = runs / "a" / rundir.CONTROL_SOCKET, runs / "b" / rundir.CONTROL_SOCKET
        ours.unlink()
        ours.symlink_to(theirs) if link == "symbolic" else os.link(theirs, ours)
        done = benchtui("ctl", runs / "a", "stop", "--now", cwd=tmp_path)
        assert done.returncode == 2 and done.stdout == "", done
        (line,) = done.stderr.strip().splitlines()
        assert str(runs / "a") in line and str(runs / "b") in line and "refused" in line, line
        if link == "hard":  # it answered the handshake: the pid it gave, the kernel's, is b's
            assert f"(pid {b.pid})" in line and f"(pid {a.pid})" in line, line
        status = benchtui("ctl", runs / "b", "status", cwd=tmp_path)
        assert status.stdout.startswith("campaign b: running, runner fake"), status  # not stopped
        assert a.poll() is None and b.poll() is None
    finally:
        for proc in (a, b):
            _interrupt(proc)


def _interrupt(proc) -> None:
    """Two stop signals (one at a time: two at once are one pending signal): sessions interrupted."""
    proc.send_signal(signal.SIGTERM)
    for line in proc.stdout:
        if "stopping" in line:
            break
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)
