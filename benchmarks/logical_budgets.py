"""What a logical budget costs: a counted tool call through the shim and the gate, against the
tool called directly; and a durable unit (saved before its action) inside a real campaign.

    python benchmarks/logical_budgets.py [--calls 200]

Prints medians (the machine is shared: compare ratios, not absolute numbers).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from benchtui.core.contract import LogicalLimits  # noqa: E402
from benchtui.runners.kit import bubblewrap  # noqa: E402
from benchtui.runners.kit import toolgate as gate  # noqa: E402


class Granting:
    """Grants every unit at once (isolates the shim + gate from the meter's disk write)."""

    limits = LogicalLimits(tools=(("pred", 10**9),))

    async def use(self, *counters: str) -> str | None:
        return None


def timed(argv: list[str], env: dict[str, str], calls: int) -> float:
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


async def shim_overhead(pred: str, calls: int, sandboxed: bool = False) -> None:
    """The gate runs each granted call itself: on the host, or (bubblewrap sessions) in a
    one-shot sandbox of its own."""
    folder = Path(tempfile.mkdtemp(prefix="benchtui-bench-"))
    (folder / "workdir").mkdir()
    launch = bubblewrap.tool_launch(folder / "workdir") if sandboxed else gate.run_here
    server = gate.ToolGate(Granting(), Granting.limits, {"pred": pred}, launch=launch)  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve, folder / "gate")
        interpreter, _ = gate.python()
        gate.install(
            folder / "shims",
            ["pred"],
            interpreter=interpreter,
            shim=str(gate.SHIM),
            gate=str(folder / "gate"),
        )
        env = {**os.environ, "PATH": f"{folder / 'shims'}:/usr/bin:/bin"}
        direct = await trio.to_thread.run_sync(timed, [pred, "--version"], env, calls)
        shimmed = await trio.to_thread.run_sync(timed, ["pred", "--version"], env, calls)
        nursery.cancel_scope.cancel()
    shutil.rmtree(folder)
    where = "in a one-shot bubblewrap sandbox" if sandboxed else "on the host"
    print(
        f"pred --version, {calls} calls: direct {direct * 1000:.1f} ms, through shim + gate, run {where}: "
        f"{shimmed * 1000:.1f} ms (median; +{(shimmed - direct) * 1000:.1f} ms a counted call)"
    )


def durable_units(rounds: int) -> None:
    """A campaign of the test suite's Counting agent: every unit is saved before its action."""
    with tempfile.TemporaryDirectory() as tmp:
        from support import write_campaign

        tmp_path = Path(tmp)
        log = tmp_path / "performed.log"
        limits = f"[budget.per_session]\nshell_actions = {rounds}\n"
        runner = f'[runners.count]\nkind = "support.stub_runners:Counting"\nlog = "{log}"\ntries = {rounds}\npause_s = 0\n'
        path = write_campaign(
            tmp_path, sessions=4, parallelism=8, total="10", per_session="1", extra_runners=runner + limits
        )
        env = {**os.environ, "PYTHONPATH": f"{ROOT / 'tests'}", "BENCHTUI_RUNNER": "count"}
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "benchtui", path.name, "--no-ui"], cwd=tmp, env=env, check=True,
                       stdout=subprocess.DEVNULL)  # fmt: skip
        took = time.perf_counter() - started
        units = len(log.read_text().splitlines())
    print(
        f"durable units: {units} actions granted in 8 sessions at once in {took:.2f} s "
        f"({units / took:.0f} units/s, each on disk before its action; group commit)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--pred", help="the pred to call (default: the one on PATH)")
    args = parser.parse_args()
    pred = args.pred or shutil.which("pred") or ""
    if not os.access(pred, os.X_OK):
        sys.exit("benchmarks/logical_budgets.py: needs a pred: put it on PATH or give --pred")
    trio.run(shim_overhead, pred, args.calls)
    trio.run(shim_overhead, pred, args.calls, True)
    durable_units(100)


if __name__ == "__main__":
    main()
