"""F6/F7 through a power cut: only the journal is fsynced, so a power cut may leave ledger.toml,
the results files and the outcome details old, empty, torn or zero-filled (or lose the journal's
last batch, written but not yet fsynced: nothing acted on it). Whatever it left, `report` says
what an undamaged run dir says, and `--resume` loses nothing that was acted on and charges
nothing twice."""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import textwrap
import threading
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest
import trio
from support import (
    ROOT,
    benchtui,
    calls,
    check_accounts,
    check_reconciled,
    last_states,
    ledger,
    money,
    write_campaign,
)

from benchtui.core import atomic
from benchtui.engine import events as ev
from benchtui.engine import run as engine

DAMAGE = ("previous", "oldest", "empty", "torn", "zeros", "missing")
"""What a power cut may leave of a file written without fsync: an earlier version; nothing; a
torn end (an appended file), or zeros where blocks were not written (a replaced one: its rename
is in the filesystem's journal, its data may not be); the file gone (one created since the
folder's last fsync). A replaced file's name is never lost once it existed: ledger.toml's."""


def derived_files(run: Path) -> list[Path]:
    """What the journal says again: never fsynced, so a power cut may leave any of them behind."""
    return [
        run / "ledger.toml",
        run / "results.position",
        *sorted((run / "results").glob("*.json")),
        *sorted((run / "outcomes").glob("*.jsonl")),
    ]


def damage(path: Path, how: str, versions: list[bytes], rng: random.Random) -> None:
    """What a power cut can leave of a file written without fsync."""
    now = path.read_bytes() if path.exists() else b""
    older = [v for v in versions if v != now] or [b""]
    cut = rng.randrange(len(now) + 1)
    replaced = path.suffix != ".jsonl"  # written by rename; the others are appended to
    if how == "previous":
        path.write_bytes(older[-1])
    elif how == "oldest":
        path.write_bytes(older[0])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "torn":
        path.write_bytes(now[:cut] + (b"\0" * (len(now) - cut) if replaced else b""))
    elif how == "zeros":
        path.write_bytes(b"\0" * len(now))
    elif how == "missing" and path.name != "ledger.toml":
        path.unlink(missing_ok=True)


def report(tmp_path: Path) -> dict:
    done = benchtui("report", "runs/t", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("how", DAMAGE)
def test_a_power_cut_after_the_last_commit_changes_nothing_a_reader_sees(tmp_path, monkeypatch, how):
    write_campaign(tmp_path, sessions=12, total="10", parallelism=3, extra_runners="")
    versions: dict[str, list[bytes]] = {}
    real_write, real_append = atomic.atomic_write, atomic.AppendLog.append

    def keep(path: Path) -> None:
        versions.setdefault(path.name, []).append(path.read_bytes() if path.exists() else b"")

    def atomic_write(path, data, *, durable=True):
        keep(Path(path))
        real_write(path, data, durable=durable)

    def append(log, data, *, durable=True):
        keep(log.path)
        real_append(log, data, durable=durable)

    for module in ("benchtui.engine.store", "benchtui.engine.results"):
        monkeypatch.setattr(f"{module}.atomic_write", atomic_write)
    monkeypatch.setattr(atomic.AppendLog, "append", append)
    with engine.prepare(engine.Options(tmp_path / "t.toml", tmp_path / "runs")) as prep:
        assert trio.run(engine.run, prep, ev.EventBus()) is True
    run = prep.run_dir
    before = {p: p.read_bytes() for p in derived_files(run)}
    assert len(before) == 6 and len(versions["ledger.toml"]) > 10
    seen, spent, made = report(tmp_path), ledger(run), calls(run)

    rng = random.Random(how)
    for path in before:
        damage(path, how, versions.get(path.name, []), rng)
    assert report(tmp_path) == seen  # read from the journal, whatever the derived files say
    again = benchtui("t.toml", "--no-ui", "--resume", cwd=tmp_path)
    assert again.returncode == 0 and "0 of 24 sessions to run" in again.stdout, again.stdout + again.stderr
    assert calls(run) == made  # nothing ran again
    assert ledger(run) == spent  # brought up to date, nothing charged twice
    assert {p: p.read_bytes() for p in derived_files(run)} == before  # results and details, whole again
    check_accounts(run)


def test_sigkill_then_a_power_cut_at_random_instants(tmp_path):
    """Kills at random instants while sessions run; each time the derived files are then set
    back to a version a poller saw earlier, emptied, torn or zero-filled. The report is the one
    the undamaged files gave, --resume rebuilds what it starts from, and in the end every call
    that happened is charged once and no finished session ran twice."""
    rng = random.Random(38)
    write_campaign(
        tmp_path, sessions=40, parallelism=2, total="2.0", per_model="1.0", per_session="0.03",
        cost="0.02", latency=0.03,
    )  # fmt: skip
    run = tmp_path / "runs/t"
    seen: dict[str, list[bytes]] = {}
    stop = threading.Event()

    def poll() -> None:  # earlier versions, as a power cut may leave them
        while not stop.is_set():
            for path in derived_files(run) if run.exists() else []:
                try:
                    data = path.read_bytes()
                except OSError:
                    continue
                kept = seen.setdefault(path.name, [])
                if not kept or kept[-1] != data:
                    kept.append(data)
            time.sleep(0.005)

    done_at_kill: set[str] = set()
    made_at_kill: list[str] = []
    for _ in range(6):
        poller = threading.Thread(target=poll, daemon=True)
        stop.clear()
        poller.start()
        size = journal_size(run)
        proc = popen_quiet(tmp_path, "t.toml", "--no-ui", "--resume")
        deadline = time.monotonic() + 60
        while journal_size(run) <= size and proc.poll() is None:  # it runs sessions now
            assert time.monotonic() < deadline, "no progress"
            time.sleep(0.01)
        time.sleep(rng.uniform(0, 0.4))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        stop.set()
        poller.join()
        assert not set(calls(run)[len(made_at_kill) :]) & done_at_kill, "a finished session ran again"
        undamaged = report(tmp_path)
        for path in derived_files(run):
            damage(path, rng.choice(DAMAGE), seen.get(path.name, []), rng)
        assert report(tmp_path) == undamaged
        check_reconciled(tmp_path / "t.toml", tmp_path / "runs")
        done_at_kill = {s for s, r in last_states(run).items() if r["state"] == "done"}
        made_at_kill = calls(run)
    final = benchtui("t.toml", "--no-ui", "--resume", cwd=tmp_path, timeout=120)
    assert final.returncode == 0, final.stderr
    assert not set(calls(run)[len(made_at_kill) :]) & done_at_kill
    states = Counter(r["state"] for r in last_states(run).values())
    assert set(states) <= {"done", "skipped_budget"} and sum(states.values()) == 80
    spent, made = money(ledger(run)["totals"]["spent_usd"]), len(calls(run))
    assert (
        made * Decimal("0.02") <= spent <= (made + 6 * 2) * Decimal("0.02")
    )  # holds a kill left: worst case
    check_accounts(run)


def journal_size(run: Path) -> int:
    path = run / "sessions.jsonl"
    return path.stat().st_size if path.exists() else 0


def popen_quiet(cwd: Path, *args: str):
    import subprocess

    return subprocess.Popen(
        [sys.executable, "-m", "benchtui", *args],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


KILL_AT_APPEND = textwrap.dedent("""
    import os, signal, sys
    from benchtui.core import atomic
    real = atomic.AppendLog.append
    left = int(os.environ["KILL_AT"])

    def append(log, data, *, durable=True):
        global left
        if log.path.name == "sessions.jsonl":
            left -= 1
            if left == 0:  # written, not yet fsynced: a SIGKILL keeps it, a power cut may not
                with open(os.environ["SIZE_FILE"], "w") as f:
                    f.write(str(os.path.getsize(log.path)))
                os.write(log.fd, data)
                os.kill(os.getpid(), signal.SIGKILL)
        real(log, data, durable=durable)

    atomic.AppendLog.append = append
    from benchtui.cli.main import main
    sys.exit(main(sys.argv[1:]))
""")


@pytest.mark.parametrize("lost", [False, True], ids=["sigkill", "power-cut"])
def test_killed_between_a_batch_written_and_fsynced(tmp_path, lost):
    """The batch's waiters had not gone on (a call not made, an end not announced): a SIGKILL
    keeps the batch, a power cut may lose it; either way resuming charges every call that was
    made, once, and runs no session whose end was on disk."""
    import subprocess

    write_campaign(tmp_path, sessions=20, parallelism=3, total="10", cost="0.02", latency=0.01)
    run = tmp_path / "runs/t"
    env = {
        **os.environ,
        "KILL_AT": str(random.Random(str(lost)).randint(8, 30)),
        "SIZE_FILE": str(tmp_path / "size"),
    }
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-c", KILL_AT_APPEND, "t.toml", "--no-ui"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    if lost:
        size = int((tmp_path / "size").read_text())
        with open(run / "sessions.jsonl", "r+b") as f:
            f.truncate(size)
        for path in derived_files(run):
            damage(path, "torn", [], random.Random(1))
    done_before, made_before = {s for s, r in last_states(run).items() if r["state"] == "done"}, calls(run)
    check_reconciled(tmp_path / "t.toml", tmp_path / "runs")
    again = benchtui("t.toml", "--no-ui", "--resume", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert not set(calls(run)[len(made_before) :]) & done_before
    assert {r["state"] for r in last_states(run).values()} == {"done"}
    spent, made = money(ledger(run)["totals"]["spent_usd"]), len(calls(run))
    assert made * Decimal("0.02") <= spent <= (made + 3) * Decimal("0.02")
    check_accounts(run)
