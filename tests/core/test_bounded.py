"""A program fed hostile input, run bounded (core/bounded.py): it may print forever, fork without
end, allocate everything, never return, or leave daemons behind — each is stopped at its bound and
nothing of it is left running. Every test runs both ways a tree is held: in a pids cgroup (where
one can be made: root, or a delegated cgroup) and under the subreaper (without one)."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest
import trio
from support.processes import cgroup_possible, pids_matching

from benchtui.core.bounded import run_bounded
from benchtui.core.target import Ran

BIG_TIMEOUT_S = 600.0
"""A bound the test must never reach: a program stopped by another bound returns long before."""


@pytest.fixture(params=["cgroup", "subreaper"])
def held(request, monkeypatch):
    """How the program's tree is held: a pids cgroup, or the subreaper (no cgroup allowed)."""
    if request.param == "cgroup" and not cgroup_possible():
        pytest.skip("no pids cgroup can be made here (not root, or cgroup v2 without delegation)")
    if request.param == "subreaper":
        monkeypatch.setenv("BENCHTUI_PIDS_CGROUP", "0")
    return request.param


async def bounded(script: str, *, timeout_s: float = BIG_TIMEOUT_S, **bounds: int) -> Ran:
    limits = {"output_bytes": 1 << 16, "memory_bytes": 1 << 30, "max_processes": 32, **bounds}
    with trio.fail_after(120):
        return await run_bounded(
            ["sh", "-c", script],
            cwd=Path("/tmp"),
            stdin=b'{"rule": "r"}',
            timeout_s=timeout_s,
            **limits,
        )


async def left(marker: str) -> list[int]:
    """Processes (not zombies) whose command line holds `marker`, given a moment to be reaped."""
    for _ in range(100):
        if not pids_matching(marker):
            return []
        await trio.sleep(0.05)
    return pids_matching(marker)


@pytest.mark.trio
async def test_its_exit_status_output_and_input(held):
    ran = await bounded("cat; echo; echo said >&2; exit 3")
    assert (ran.returncode, ran.stdout, ran.stderr, ran.stopped) == (3, b'{"rule": "r"}\n', b"said\n", "")
    ran = await bounded("kill -SEGV $$")
    assert ran.returncode == -11 and ran.stopped == ""


@pytest.mark.trio
async def test_endless_output_is_stopped_at_its_bound(held):
    marker = f"yes {uuid.uuid4().hex}"
    ran = await bounded(f"{marker} & {marker} >&2", output_bytes=100_000)
    assert ran.stopped == "output" and ran.returncode is None
    assert len(ran.stdout) + len(ran.stderr) == 100_000
    assert await left(marker) == []


@pytest.mark.trio
async def test_a_program_that_never_returns_is_killed_with_everything_it_started(held):
    marker = f"sleep 1000.{uuid.uuid4().int % 10**8}"
    # its children: one in the background, one in a session of its own, one ignoring SIGHUP
    script = f"{marker} & setsid {marker} & nohup {marker} >/dev/null 2>&1 & trap '' TERM; wait"
    ran = await bounded(script, timeout_s=2)
    assert ran.stopped == "timeout" and ran.returncode is None
    assert await left(marker) == []


@pytest.mark.trio
async def test_a_daemon_left_holding_its_output_neither_keeps_it_running_nor_lives_on(held):
    marker = f"sleep 1000.{uuid.uuid4().int % 10**8}"
    ran = await bounded(f"setsid {marker} & echo done; exit 0")
    assert (ran.returncode, ran.stdout, ran.stopped) == (0, b"done\n", "")  # not a timeout
    assert await left(marker) == []


@pytest.mark.trio
async def test_a_cancelled_run_leaves_nothing_behind(held):
    marker = f"sleep 1000.{uuid.uuid4().int % 10**8}"
    async with trio.open_nursery() as nursery:  # a session killed while its checker runs
        nursery.start_soon(bounded, f"setsid {marker} & {marker}")
        while len(pids_matching(marker)) < 2:
            await trio.sleep(0.05)
        nursery.cancel_scope.cancel()
    assert await left(marker) == []


@pytest.mark.trio
async def test_its_address_space_is_bounded(held):
    # 3 GiB of address space, reserved and never touched: refused under a 1 GiB bound
    reserve = "python3 -c 'import mmap; mmap.mmap(-1, 3 << 30)'"
    ran = await bounded(reserve, memory_bytes=1 << 30)
    assert ran.returncode == 1 and b"Cannot allocate memory" in ran.stderr, ran
    assert (await bounded(reserve, memory_bytes=4 << 30)).returncode == 0


@pytest.mark.trio
async def test_a_fork_bomb_is_refused_by_the_kernel_and_the_machine_stays_usable():
    if not cgroup_possible():
        pytest.skip("no pids cgroup can be made here (not root, or cgroup v2 without delegation)")
    marker = f"sleep 1000.{uuid.uuid4().int % 10**8}"
    seen: list[int] = []

    async def watch() -> None:
        while True:
            seen.append(len(pids_matching(marker)))
            # this machine still forks (the bomb is held to its 16 processes)
            assert subprocess.run(["true"], timeout=30).returncode == 0
            await trio.sleep(0.05)

    # forks for ever, a refused fork only a pause: it runs to its time bound, always at its bound
    forever = (
        "import subprocess, time\n"
        "while True:\n"
        "    try: subprocess.Popen(['sh', '-c', 'exec " + marker + "'])\n"
        "    except OSError: time.sleep(0.01)\n"
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch)
        ran = await bounded(f'python3 -c "{forever}"', timeout_s=3, max_processes=16)
        nursery.cancel_scope.cancel()
    assert ran.stopped == "timeout" and ran.returncode is None
    assert max(seen) > 8 and max(seen) <= 16, seen  # it filled its bound, never more
    assert await left(marker) == []
    bomb = await bounded("b() { b | b; }; b", max_processes=16)
    assert bomb.stopped == "processes" and bomb.returncode is None  # at once, not at the time bound
