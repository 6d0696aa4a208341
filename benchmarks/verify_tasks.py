"""How long the verifier takes with the real pred on each task of the shipped campaign.

    python benchmarks/verify_tasks.py [--pred PATH] [--repeats 3] [--campaign campaigns/problem-reductions.toml]

For each task: its canonical example (`pred create --example SRC --to TGT`, reduced), verified
`--repeats` times; prints the verdict, the median and the slowest wall time, and that time as a
share of the campaign's `verify_timeout_s` (every task must stay well under it, on a loaded
machine too). Needs the real pred: on PATH, or ../shared/tools/pred/bin/pred.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchtui.targets.problem_reductions import verify  # noqa: E402
from benchtui.targets.problem_reductions.tasks import TASK_RULES, canonical_certificate  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pred", default=shutil.which("pred") or str(ROOT.parent / "shared/tools/pred/bin/pred"))
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--campaign", type=Path, default=ROOT / "campaigns" / "problem-reductions.toml")
    args = p.parse_args()
    doc = tomllib.loads(args.campaign.read_text())
    limit = float(doc["runners"][doc["runner"]].get("verify_timeout_s", 60))
    print(f"pred {args.pred}, verify_timeout_s {limit:g} s, {args.repeats} runs per task")
    print(f"{'task':<44}{'verdict':<14}{'median s':>9}{'max s':>8}{'of limit':>10}")
    worst = 0.0
    for task in doc["tasks"]:
        cert, problem = canonical_certificate(TASK_RULES[task], args.pred, timeout=limit)
        if cert is None:
            print(f"{task:<44}{problem}")
            continue
        times, status = [], ""
        for _ in range(args.repeats):
            started = time.perf_counter()
            status = verify(cert, pred=args.pred, timeout=limit).status
            times.append(time.perf_counter() - started)
        worst = max(worst, max(times))
        print(
            f"{task:<44}{status:<14}{statistics.median(times):>9.2f}{max(times):>8.2f}"
            f"{max(times) / limit:>10.1%}"
        )
    print(f"slowest verification: {worst:.2f} s ({worst / limit:.1%} of the limit)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
