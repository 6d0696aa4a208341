"""Items 5 and 12 of issue 15: the control socket against hostile clients, and its permissions.

The campaign must never notice a bad client: deep JSON, huge lines, idle or non-reading clients,
hundreds of connections at once each get an error reply or are dropped, with bounded descriptors.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import pytest
import trio
from support import Recorder, start
from support.ctl import ctl, in_call, prepare

from benchtui.cli import ctl as ctl_client
from benchtui.engine import control, rundir
from benchtui.engine.control import socket_address


def _connect(run_dir, *, blocking: bool = True) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX)
    sock.setblocking(blocking)
    with socket_address(run_dir / rundir.CONTROL_SOCKET) as address:
        try:
            sock.connect(address)
        except BlockingIOError:  # the backlog is full
            sock.close()
            raise
    return sock


def _exchange(run_dir, data: bytes) -> list[dict]:
    with _connect(run_dir) as sock:
        sock.settimeout(20)
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        return [json.loads(line) for line in sock.makefile("rb")]


@pytest.mark.trio
async def test_hostile_lines_get_error_replies_and_the_campaign_goes_on(tmp_path):
    prep = prepare(tmp_path, sessions=2, total="10", latency=0.3, parallelism=1)
    async with trio.open_nursery() as nursery:
        _, result = await start(prep, nursery)
        lines = [
            b"[" * 5000 + b"]" * 5000 + b"\n",  # nested 5,000 deep: RecursionError before
            b'{"cmd": "kill", "session": ' + b"[" * 900 + b"]" * 900 + b"}\n",
            b'{"cmd": "kill", "session": ["a"]}\n',
            b'{"cmd": "runner", "profile": {"x": 1}}\n',
            b'{"cmd": "parallelism", "n": 1000000000000000000000}\n',
            b"\xff\xfe\n",
        ]
        replies = await trio.to_thread.run_sync(partial(_exchange, prep.run_dir, b"".join(lines)))
        assert [r["ok"] for r in replies] == [False] * len(lines)
        too_long = await trio.to_thread.run_sync(
            partial(_exchange, prep.run_dir, b"x" * (control.MAX_LINE + 10))
        )
        assert too_long == [{"ok": False, "error": f"a request line is at most {control.MAX_LINE} bytes"}]
        status = await trio.to_thread.run_sync(partial(_exchange, prep.run_dir, b'{"cmd": "status"}\n'))
        assert status[0]["ok"] is True
    assert result["finished"] is True


def _server_fds(baseline: int, clients: list[socket.socket]) -> int:
    return len(os.listdir("/proc/self/fd")) - baseline - len(clients)


@pytest.mark.trio
async def test_hundreds_of_idle_clients_hold_bounded_descriptors_and_ctl_still_answers(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(control, "IDLE_S", 0.3)
    prep = prepare(tmp_path, sessions=2, total="10", latency=30, parallelism=1)
    rec = Recorder()
    async with trio.open_nursery() as nursery:
        scheduler, result = await start(prep, nursery, rec)
        await rec.until(lambda: in_call(rec) == 1)
        baseline = len(os.listdir("/proc/self/fd"))
        idle: list[socket.socket] = []
        most = 0
        for _ in range(300):
            with contextlib.suppress(BlockingIOError):  # the backlog is full
                idle.append(_connect(prep.run_dir, blocking=False))
            await trio.sleep(0)  # let the server accept what it will
            most = max(most, _server_fds(baseline, idle))
        for _ in range(50):
            await trio.sleep(0.01)
            most = max(most, _server_fds(baseline, idle))
        assert most <= control.MAX_CLIENTS + 2, most  # unbounded before: one descriptor per client
        assert (await ctl(capsys, prep.run_dir, "pause"))[0] == 0  # served once idle ones are dropped
        for sock in idle:
            sock.close()
        scheduler.stop(now=True)
    assert result["finished"] is False


@pytest.mark.trio
async def test_a_client_that_never_reads_its_replies_is_dropped(tmp_path, monkeypatch):
    monkeypatch.setattr(control, "IDLE_S", 0.3)
    prep = prepare(tmp_path, sessions=2, total="10", latency=0.3, parallelism=1)
    async with trio.open_nursery() as nursery:
        _, result = await start(prep, nursery)

        def flood() -> None:
            with _connect(prep.run_dir) as sock:
                sock.settimeout(10)
                try:  # replies pile up unread until the server gives up on this client
                    for _ in range(100_000):
                        sock.sendall(b'{"cmd": "status"}\n' * 100)
                except OSError:
                    return
                pytest.fail("the server kept answering a client that never reads")

        await trio.to_thread.run_sync(flood)
    assert result["finished"] is True


@pytest.mark.trio
async def test_a_thousand_ctl_clients_at_once_all_get_an_answer(tmp_path):
    prep = prepare(tmp_path, sessions=2, total="10", latency=30, parallelism=1)
    async with trio.open_nursery() as nursery:
        scheduler, _ = await start(prep, nursery)

        def many() -> list[bool]:
            with ThreadPoolExecutor(max_workers=64) as pool:
                asks = [pool.submit(ctl_client.ask, prep.run_dir, {"cmd": "status"}) for _ in range(1000)]
                return [f.result()["ok"] for f in asks]

        assert await trio.to_thread.run_sync(many) == [True] * 1000
        scheduler.stop(now=True)


@pytest.mark.trio
async def test_socket_0600_and_run_dir_0700_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        prep = prepare(tmp_path, sessions=1, total="10", latency=0.5, parallelism=1)
        async with trio.open_nursery() as nursery:
            scheduler, _ = await start(prep, nursery)
            sock_mode = stat.S_IMODE((prep.run_dir / rundir.CONTROL_SOCKET).stat().st_mode)
            scheduler.stop(now=True)
    finally:
        os.umask(old)
    assert sock_mode == 0o600
    assert stat.S_IMODE(prep.run_dir.stat().st_mode) == 0o700


@pytest.mark.trio
async def test_a_directory_where_the_socket_goes_is_a_warning_not_a_crash(tmp_path):
    prep = prepare(tmp_path, sessions=1, total="10", latency=0, parallelism=1)
    (prep.run_dir / rundir.CONTROL_SOCKET).mkdir()
    async with trio.open_nursery() as nursery:
        _, result = await start(prep, nursery)
    assert result["finished"] is True
    assert (prep.run_dir / rundir.CONTROL_SOCKET).is_dir()  # not ours: left alone


def _fake_server(path, replies: list[bytes]) -> threading.Thread:
    """A socket at `path` that answers each request line with the next of `replies`."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()

    def answer() -> None:
        conn, _ = server.accept()
        with conn, contextlib.suppress(OSError):
            for reply in replies:
                conn.recv(1000)
                conn.sendall(reply)
        server.close()

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    return thread


def _hello(run_dir, **changed) -> bytes:
    """A handshake this process can give for `run_dir` (its lock then names this pid)."""
    (run_dir / rundir.LOCK).write_text(f"{os.getpid()}\n")
    return json.dumps({"ok": True, **control.whoami(run_dir, "fake"), **changed}).encode() + b"\n"


@pytest.mark.parametrize(
    ("replies", "phrase"),
    [
        (lambda d: [b"garbage\n"], "not a benchtui reply"),
        (lambda d: [b"[" * 100_000 + b"\n"], "not a benchtui reply"),
        (lambda d: [b'{"ok": true}\n'], "answered something that is not a benchtui control socket"),
        (lambda d: [b'{"ok": false, "error": "\\u001b[2J\\nfake line"}\n'], "\\x1b[2J\\nfake line"),
        (lambda d: [_hello(d, inode=1)], "answers for the campaign in"),  # another run dir
        (lambda d: [_hello(d, pid=1)], "answers for the campaign in"),  # not the kernel's pid
        (lambda d: [_hello(d, identity="0" * 16)], "answers for the campaign in"),
        (lambda d: [_hello(d), b'{"ok": true}\n'], "malformed status reply"),
        (lambda d: [_hello(d), b'{"ok": false, "error": "\\u001b[2J"}\n'], "benchtui: \\x1b[2J"),
    ],
)
def test_ctl_against_a_socket_that_is_not_benchtui_is_one_line(tmp_path, capsys, replies, phrase):
    from benchtui.cli import main as cli

    (tmp_path / rundir.CAMPAIGN).write_text("")
    (tmp_path / rundir.IDENTITY).write_text("{}")
    thread = _fake_server(tmp_path / rundir.CONTROL_SOCKET, replies(tmp_path))
    rc = cli.main(["ctl", str(tmp_path), "status"])
    thread.join(5)
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and phrase in err, err
