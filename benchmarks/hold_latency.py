"""What a durable hold costs: `meter.authorise` with the engine's real parts, and the fsync it waits for.

Every model call is held (its worst case) durably before it is made (F6): the hold goes into the
journal, and the commit that carries it is fsynced once (F7; ledger.toml is rewritten with it but
not fsynced). This script measures `authorise` with the engine's real Ledger, Store, Accounts and
SessionMeter (64 attempts in flight, as in the gateway's benchmark): one session calling alone,
then 64 at once (their holds share commits), each call's charge riding the next commit as in a
campaign. Each round first measures the machine's fsync latency in the same folder (a 4 KiB write
+ fsync, median of 50): it varies from one minute to the next on a shared disk, and a durable hold
cannot be faster than one.

`--also CHECKOUT` measures another checkout of benchtui the same way in the same rounds
(alternating), e.g. the commit before a change to the store. Each measurement runs in a process
of its own.

    python benchmarks/hold_latency.py [--rounds 3] [--seconds 3] [--also CHECKOUT]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from disk import fsync_latency

ROOT = Path(__file__).resolve().parent.parent
SESSIONS = 64


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(len(values) * q))] * 1000


def measure(checkout: str, seconds: float, folder: str) -> dict[str, float]:
    """In a child process: `authorise` of the checkout's engine, alone and 64 at once."""
    sys.path[:0] = [checkout]
    from decimal import Decimal

    import trio

    from benchtui.core.contract import ModelSpec, Usage
    from benchtui.engine import events as ev
    from benchtui.engine.accounts import Accounts
    from benchtui.engine.ledger import Ledger
    from benchtui.engine.meter import SessionMeter
    from benchtui.engine.store import Store

    model = ModelSpec("openai/m", Decimal(3), Decimal(15), 1000, "http://127.0.0.1:9/v1")
    usage = Usage(80, 20)

    async def main() -> dict[str, float]:
        run_dir = Path(tempfile.mkdtemp(prefix="holdbench-", dir=folder))
        ledger = Ledger(Decimal(10**9), {model.name: Decimal(10**9)})
        store = Store(run_dir, ledger)
        accounts = Accounts(ledger, store, ev.EventBus(), {})
        alone: list[float] = []
        together: list[float] = []
        async with trio.open_nursery() as nursery:
            await nursery.start(store.serve)
            meters = []
            for n in range(SESSIONS):
                flight = ledger.open(f"s-{n}", model.name, 0, 1, "command", Decimal(10**6))
                meters.append(SessionMeter(accounts, flight, model, Decimal(10**6)))

            async def calls(meter: SessionMeter, until: float, into: list[float]) -> None:
                while time.perf_counter() < until:
                    started = time.perf_counter()
                    await meter.authorise(Decimal("0.001"))
                    into.append(time.perf_counter() - started)
                    meter.charge(usage, settles=Decimal("0.001"))  # rides the next commit, as in a campaign

            await calls(meters[0], time.perf_counter() + seconds / 2, alone)
            commits = store.commits
            started = time.perf_counter()
            async with trio.open_nursery() as clients:
                for meter in meters:
                    clients.start_soon(calls, meter, started + seconds, together)
            elapsed = time.perf_counter() - started
            commits = store.commits - commits
            nursery.cancel_scope.cancel()
        store.close()
        shutil.rmtree(run_dir, ignore_errors=True)
        return {
            "alone_p50": pct(alone, 0.5),
            "alone_p99": pct(alone, 0.99),
            "rate": len(together) / elapsed,
            "p50": pct(together, 0.5),
            "p99": pct(together, 0.99),
            "holds_per_commit": len(together) / max(commits, 1),
        }

    return trio.run(main)


def child(checkout: str, seconds: float, folder: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", checkout, "--seconds", str(seconds), "--dir", str(folder)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--also", help="another benchtui checkout, measured in the same rounds")
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="where the store writes")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.seconds, args.dir)))
        return
    folder = Path(args.dir)
    checkouts = {"this": str(ROOT)} | ({f"also ({args.also})": args.also} if args.also else {})
    print(f"durable holds, {SESSIONS} attempts in flight; {args.rounds} alternating rounds of "
          f"{args.seconds:g} s (half alone, half 64 at once); load {os.getloadavg()[0]:.1f}\n")  # fmt: skip
    head = f"{'checkout':<28} | {'fsync':>6} | {'1 session p50':>13} {'p99':>6} | {'64: holds/s':>11} {'p50':>6} {'p99':>6} | {'holds/commit':>12}"  # noqa: E501
    print(head + f"\n{'':<28} | {'ms':>6} | {'ms':>13} {'ms':>6} | {'':>11} {'ms':>6} {'ms':>6} |")
    found: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
    for r in range(args.rounds):
        for name, checkout in list(checkouts.items()) if r % 2 == 0 else list(checkouts.items())[::-1]:
            latency = fsync_latency(folder) * 1000
            row = child(checkout, args.seconds, folder) | {"fsync": latency}
            found[name].append(row)
            print(f"{name[:28]:<28} | {latency:>6.2f} | {row['alone_p50']:>13.2f} {row['alone_p99']:>6.2f} | "
                  f"{row['rate']:>11.0f} {row['p50']:>6.2f} {row['p99']:>6.2f} | {row['holds_per_commit']:>12.1f}")  # fmt: skip
    print()
    for name, rows in found.items():
        med = {key: statistics.median(r[key] for r in rows) for key in rows[0]}
        print(f"{name}: median fsync {med['fsync']:.2f} ms; 1 session p50 {med['alone_p50']:.2f} ms "
              f"(fsync + {med['alone_p50'] - med['fsync']:.2f} ms); 64 sessions {med['rate']:.0f} holds/s, "
              f"p50 {med['p50']:.2f} ms, {med['holds_per_commit']:.1f} holds a commit")  # fmt: skip


if __name__ == "__main__":
    main()
