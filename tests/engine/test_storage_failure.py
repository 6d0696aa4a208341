"""A full disk or a failing write: the previous ledger stays intact, the campaign stops clearly."""

from __future__ import annotations

import contextlib
import errno
import shutil
import subprocess
import tomllib

import pytest
from support import benchtui, check_accounts, last_states, write_campaign

from benchtui.core import atomic
from benchtui.core.errors import StorageFailed
from benchtui.engine import events as ev
from benchtui.engine import run as engine


@pytest.mark.trio
async def test_enospc_on_the_ledger_write_keeps_the_previous_ledger(tmp_path, monkeypatch):
    write_campaign(tmp_path, sessions=20, total="10", latency=0.01, parallelism=2)
    prep = engine.prepare(engine.Options(tmp_path / "t.toml", tmp_path / "runs"))
    ledger_path = prep.run_dir / "ledger.toml"
    real_write = atomic.atomic_write
    writes = 0
    seen: dict[str, bytes] = {}

    def failing_write(path, data, **options):
        nonlocal writes
        writes += 1
        if writes == 30:
            seen["before"] = ledger_path.read_bytes()
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(path, data, **options)

    monkeypatch.setattr("benchtui.engine.store.atomic_write", failing_write)
    with pytest.raises(StorageFailed, match="No space left on device.*--resume"):
        await engine.run(prep, ev.EventBus())
    assert ledger_path.read_bytes() == seen["before"]
    tomllib.loads(ledger_path.read_text())
    assert not prep.lock.fd >= 0  # the run dir is free again

    monkeypatch.setattr("benchtui.engine.store.atomic_write", real_write)
    again = engine.prepare(engine.Options(tmp_path / "t.toml", tmp_path / "runs", resume=True))
    assert await engine.run(again, ev.EventBus()) is True
    assert {r["state"] for r in last_states(prep.run_dir).values()} == {"done"}
    check_accounts(prep.run_dir)


@pytest.fixture
def tiny_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_full_disk_stops_the_campaign_with_one_clear_line(tmp_path, tiny_disk):
    write_campaign(tmp_path, sessions=400, total="100", per_session="0.03", cost="0.001", parallelism=8)
    done = benchtui("t.toml", "--no-ui", "--state-dir", tiny_disk, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("benchtui: cannot save state")
    assert "No space left on device" in done.stderr
    run = tiny_disk / "t"
    tomllib.loads((run / "ledger.toml").read_text())  # the previous ledger is intact
    # Free space and resume: everything completes, the accounts add up.
    subprocess.run(["mount", "-o", "remount,size=64m", str(tiny_disk)], check=True)
    again = benchtui("t.toml", "--no-ui", "--resume", "--state-dir", tiny_disk, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert {r["state"] for r in last_states(run).values()} == {"done"}
    check_accounts(run)
    shutil.rmtree(run, ignore_errors=True)


def test_starting_on_a_full_disk_is_one_line(tmp_path, tiny_disk):
    write_campaign(tmp_path)
    filler = tiny_disk / "filler"
    with open(filler, "wb", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(b"x" * 4096)
    done = benchtui("t.toml", "--no-ui", "--state-dir", tiny_disk, cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert "No space left on device" in done.stderr
    assert sorted(p.name for p in tiny_disk.iterdir()) == ["filler"]  # no half-made run dir left
