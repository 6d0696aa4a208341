"""What a durable hold costs, and what the ledger's contract has to do with it.

Every model call is held (its worst case) durably before it is made (F6), and the ledger is
persisted after every event as a whole file: temp file, fsync, rename (F7), plus an fsync of its
folder so the rename survives a power cut. This script measures that hold with the engine's real
parts (Ledger, Store, Accounts, SessionMeter; 64 sessions in flight, as in the gateway's
benchmark), one session calling alone and 64 at once, beside the same commits written the other
way a store could: one JSON line per changed attempt appended to a journal and fdatasync'd
(`hold journal`). That other way is **not** what benchtui does: ledger.toml would then lag the
holds until the next rewrite, and F7 (and any outside check reading ledger.toml after a kill)
expects it to hold every recorded event. The figures say what the contract costs per call.

    python benchmarks/hold_latency.py [--rounds 3] [--seconds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from benchtui.core.contract import ModelSpec, Usage  # noqa: E402
from benchtui.engine import events as ev  # noqa: E402
from benchtui.engine.accounts import Accounts  # noqa: E402
from benchtui.engine.ledger import Ledger  # noqa: E402
from benchtui.engine.meter import SessionMeter  # noqa: E402
from benchtui.engine.store import Store  # noqa: E402

MODEL = ModelSpec("openai/m", Decimal(3), Decimal(15), 1000, "http://127.0.0.1:9/v1")
SESSIONS = 64
USAGE = Usage(80, 20)


class ChangedAttempts:
    """Stands in for the ledger in a journal store's commit: the attempts changed since the last."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.seen: dict[str, tuple[Any, ...]] = {}

    def to_toml(self) -> bytes:
        lines = []
        for session, flight in self.ledger.running.items():
            state = (flight.held, flight.spent, tuple(flight.counters.items()))
            if self.seen.get(session) != state:
                self.seen[session] = state
                lines.append(json.dumps({"session": session, "attempt": flight.attempt,
                                         "held": str(flight.held), "spent": str(flight.spent),
                                         "counters": flight.counters}, separators=(",", ":")))  # fmt: skip
        return ("\n".join(lines) + "\n").encode() if lines else b""


class HoldJournalStore(Store):
    """The same group commit, its ledger step an append + fdatasync of the changed attempts."""

    def __init__(self, run_dir: Path, ledger: Ledger) -> None:
        super().__init__(run_dir, ledger)
        self.ledger = ChangedAttempts(ledger)  # type: ignore[assignment]
        self._holds = os.open(run_dir / "holds.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def _write(self, rows: dict[str, list[str]], lines: list[str], ledger_bytes: bytes) -> None:
        started = time.perf_counter()
        if lines:
            self.journal.append(("\n".join(lines) + "\n").encode())
        if ledger_bytes:
            os.write(self._holds, ledger_bytes)
            os.fdatasync(self._holds)
        self.write_seconds += time.perf_counter() - started


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(len(values) * q))] * 1000


async def measure(kind: str, seconds: float) -> dict[str, float]:
    run_dir = Path(tempfile.mkdtemp(prefix="holdbench-"))
    ledger = Ledger(Decimal(10**9), {MODEL.name: Decimal(10**9)})
    store = Store(run_dir, ledger) if kind == "ledger.toml" else HoldJournalStore(run_dir, ledger)
    accounts = Accounts(ledger, store, ev.EventBus(), {})
    alone: list[float] = []
    together: list[float] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(store.serve)
        meters = []
        for n in range(SESSIONS):
            flight = ledger.open(f"s-{n}", MODEL.name, 0, 1, "command", Decimal(10**6))
            meters.append(SessionMeter(accounts, flight, MODEL, Decimal(10**6)))

        async def calls(meter: SessionMeter, until: float, into: list[float]) -> None:
            while time.perf_counter() < until:
                started = time.perf_counter()
                await meter.authorise(Decimal("0.001"))
                into.append(time.perf_counter() - started)
                meter.charge(USAGE, settles=Decimal("0.001"))  # rides with the next commit, as in a campaign

        await calls(meters[0], time.perf_counter() + seconds / 2, alone)
        before = (store.commits, store.write_seconds)
        started = time.perf_counter()
        async with trio.open_nursery() as clients:
            for meter in meters:
                clients.start_soon(calls, meter, started + seconds, together)
        elapsed = time.perf_counter() - started
        commits = store.commits - before[0]
        nursery.cancel_scope.cancel()
    store.close()
    shutil.rmtree(run_dir, ignore_errors=True)
    return {
        "alone_p50": pct(alone, 0.5),
        "alone_p99": pct(alone, 0.99),
        "rate": len(together) / elapsed,
        "p50": pct(together, 0.5),
        "p99": pct(together, 0.99),
        "write": (store.write_seconds - before[1]) / max(commits, 1) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    print(f"durable holds, {SESSIONS} attempts in flight; {args.rounds} alternating rounds of "
          f"{args.seconds:g} s (half alone, half 64 at once)\n")  # fmt: skip
    print(f"{'store':<13} | {'1 session p50':>13} {'p99':>6} | {'64: holds/s':>11} {'p50':>6} {'p99':>6} | {'write/commit':>12}")  # fmt: skip
    print(f"{'':<13} | {'ms':>13} {'ms':>6} | {'':>11} {'ms':>6} {'ms':>6} | {'ms':>12}")
    found: dict[str, list[dict[str, float]]] = {"ledger.toml": [], "hold journal": []}
    for _ in range(args.rounds):
        for kind, rows in found.items():
            rows.append(trio.run(measure, kind, args.seconds))
            r = rows[-1]
            print(f"{kind:<13} | {r['alone_p50']:>13.2f} {r['alone_p99']:>6.2f} | {r['rate']:>11.0f} "
                  f"{r['p50']:>6.2f} {r['p99']:>6.2f} | {r['write']:>12.2f}")  # fmt: skip
    print()
    for key, label in (
        ("alone_p50", "1 session p50 (ms)"),
        ("p50", "64 sessions p50 (ms)"),
        ("rate", "64 sessions holds/s"),
    ):
        real = statistics.median(r[key] for r in found["ledger.toml"])
        other = statistics.median(r[key] for r in found["hold journal"])
        print(f"median {label}: ledger.toml {real:.2f}, hold journal {other:.2f}")


if __name__ == "__main__":
    main()
