"""The session copy's disk bound is the kernel's, for both runners: the copy is a filesystem of
`max_disk_mb` free (core/volume.py), so no write gets past it, however fast.

Before, the bound was a poll (a walk of the copy every 5 s): an agent that `fallocate`d 1.5 GiB in
one go with the documented bound of 1,024 MB had it all on the host's disk until the next poll
(and the mini runner's RLIMIT_FSIZE bounds one file, not their sum). Here a sampler measures the
host disk the session's copy takes (its image's allocated blocks, or the copy's own where it is a
plain folder) every few milliseconds while the agent runs.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import pytest
import trio
from support.mini import journal, pred_on_path, run_campaign, write_campaign
from support.real_parts import copies_are_volumes, require_tools
from support.script_agent import agent_log, script_campaign
from support.scripted_llm import SUBMIT, Reply, ScriptedLLM
from support.scripted_upstream import ScriptedUpstream

from benchtui.core import volume
from benchtui.runners.kit import resources

MB = 1 << 20
MARGIN = 8 * MB
"""The filesystem's own blocks beyond the copy and its bound, and rounding (measured: < 1 MB)."""
ONE_GO = (
    # ext4 keeps what a failed fallocate allocated (past the end of the file): removed, then the rest.
    'fallocate -l 1536M big; echo "one go: $?"; rm -f big; fallocate -l 1000M a && echo a-kept; '
    'fallocate -l 100M b; echo "then 100M more: $?"; df -B1 --output=avail . | tail -1'
)
WRITTEN = 'head -c 24000000 /dev/urandom > a; echo "a: $?"; head -c 24000000 /dev/urandom > b; echo "b: $?"; sync; ls -l'


class HostDisk:
    """The most host disk any session copy under `state` took while it ran (sampled)."""

    def __init__(self, state: Path) -> None:
        self.state, self.most, self._stop = state, 0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> HostDisk:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            for copy in self.state.glob("*/sessions/*/workdir"):
                image = volume.image_of(copy)
                try:
                    used = os.stat(image).st_blocks * 512 if image.exists() else resources.disk_used(copy)
                except OSError:
                    continue
                self.most = max(self.most, used)


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    require_tools("bwrap")
    copies_are_volumes(monkeypatch)
    pred_on_path(tmp_path, monkeypatch)
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test-scripted-0000")


async def run_mini(tmp_path: Path, command: str, max_disk_mb: int) -> tuple[str, HostDisk]:
    def script(request):  # type: ignore[no-untyped-def]
        return Reply(command) if request.turn == 0 else Reply(SUBMIT)

    with ScriptedLLM(script=script) as llm, HostDisk(tmp_path / "runs") as disk:
        runner = {"environment": "bubblewrap", "max_disk_mb": max_disk_mb, "command_timeout_s": 120}
        path = write_campaign(tmp_path, llm.url, runner=runner)
        with trio.fail_after(180):
            prep, _ = await run_campaign(path, tmp_path / "runs")
    (record,) = journal(prep.run_dir).values()
    assert (record["state"], record["reason"]) == ("done", "submitted without a certificate"), record
    return str(llm.requests[-1].messages[3]["content"]), disk


async def run_command(tmp_path: Path, command: str, max_disk_mb: int) -> tuple[str, HostDisk]:
    require_tools("socat")
    with ScriptedUpstream() as up, HostDisk(tmp_path / "state") as disk:
        runner = {"command": ["bash", "-c", command], "max_disk_mb": max_disk_mb, "wall_time_s": 180}
        path = script_campaign(tmp_path, up.url, "", runner=runner)
        with trio.fail_after(180):
            prep, _ = await run_campaign(path, tmp_path / "state")
    (record,) = journal(prep.run_dir).values()
    assert (record["state"], record["reason"]) == ("done", "exit 0"), record
    return agent_log(prep.run_dir, record["session"]), disk


@pytest.mark.trio
@pytest.mark.parametrize("runner", ["mini", "command"])
async def test_one_and_a_half_gib_in_one_go_is_refused_by_the_kernel(tmp_path, runner):
    seen, disk = await (run_mini if runner == "mini" else run_command)(tmp_path, ONE_GO, 1024)
    # The command runner gets ENOSPC; the mini runner's RLIMIT_FSIZE (one file) stops it first.
    assert re.search(r"one go: (1|153)\n", seen), seen
    assert "a-kept" in seen and "then 100M more: 1" in seen and "No space left on device" in seen, seen
    assert int(seen.split("then 100M more: 1\n")[1].split()[0]) < 25 * MB  # 1,024 MB in all, not more
    assert disk.most < 1024 * MB + MARGIN


@pytest.mark.trio
@pytest.mark.parametrize("runner", ["mini", "command"])
async def test_what_is_written_never_takes_more_host_disk_than_the_bound(tmp_path, runner):
    seen, disk = await (run_mini if runner == "mini" else run_command)(tmp_path, WRITTEN, 32)
    assert "a: 0" in seen and "b: 1" in seen and "No space left on device" in seen, seen
    assert 30 * MB < disk.most < 32 * MB + MARGIN, disk.most  # the data was on the host's disk, bounded
