"""The verifier's recall on the library's known bugs and its false positives on its correct rules.

    python benchmarks/verifier_recall.py [--shared ../shared] [--before 0a81a35]

Ground truth: `../shared/pred-transcripts/` (the real pred's recorded answers for three builds;
`certificates/expected.json` says, per certificate and build, whether it shows a real bug). Each
verifier runs against the replaying stand-in (`tests/support/stand_in_pred.py`), so the answers
are exactly the real pred's. "before" is the verifier of commit `--before` (read with `git show`),
"after" the one in this checkout. An inconclusive verdict counts as not confirmed; a call the
transcripts never recorded (exit 97) is counted as a miss.

Then a probe of false positives of the rule-failure kinds: every public round-trip certificate's
rule and source claimed as `panics_on_valid_instance`, on every build it was recorded with (none
of those rules panics on those instances: none may be confirmed).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
STAND_IN = ROOT / "tests" / "support" / "stand_in_pred.py"


def old_verifier(commit: str, into: Path) -> Any:
    """The `verify` of `commit`'s runners/problem_reductions (or benchtui/targets/… after the move):
    every module of that folder, as it was."""
    package = into / f"verifier_{commit}"
    package.mkdir(parents=True)
    for folder in ("benchtui/targets/problem_reductions", "runners/problem_reductions"):
        listed = subprocess.run(
            ["git", "-C", str(ROOT), "ls-tree", "--name-only", f"{commit}:{folder}"],
            capture_output=True,
            text=True,
        )
        names = [n for n in listed.stdout.split() if n.endswith(".py") and n != "__init__.py"]
        if listed.returncode == 0 and names:
            break
    else:
        raise SystemExit(f"error: commit {commit} has no problem_reductions verifier")
    for name in names:
        text = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{commit}:{folder}/{name}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        (package / name).write_text(text)
    (package / "__init__.py").write_text("from .drivers import verify\n")
    sys.path.insert(0, str(into))
    return importlib.import_module(package.name).verify


def replaying_pred(where: Path, transcripts: Path, build: str) -> str:
    where.mkdir(parents=True, exist_ok=True)
    pred = where / "pred"
    transcript = transcripts / f"{build}.jsonl"
    pred.write_text(
        f"#!/bin/sh\nSTAND_IN_PRED_TRANSCRIPT='{transcript}' exec '{sys.executable}' '{STAND_IN}' \"$@\"\n"
    )
    pred.chmod(0o755)
    return str(pred)


def score(verify: Any, transcripts: Path, work: Path) -> dict[str, Any]:
    table = json.loads((transcripts / "certificates" / "expected.json").read_text())
    rows, misses_log = [], work / "misses.jsonl"
    os.environ["STAND_IN_PRED_MISSES"] = str(misses_log)
    for name, entries in table.items():
        cert = json.loads((transcripts / "certificates" / name).read_text())
        for entry in entries:
            pred = replaying_pred(work / entry["pred"], transcripts, entry["pred"])
            before = misses_log.read_text().count("\n") if misses_log.exists() else 0
            verdict = verify(cert, pred=pred)
            after = misses_log.read_text().count("\n") if misses_log.exists() else 0
            rows.append(
                (name, entry["pred"], entry["expected"], verdict.status, after - before, verdict.reason)
            )
    bugs = [r for r in rows if r[2] == "bug"]
    fine = [r for r in rows if r[2] != "bug"]
    return {
        "rows": rows,
        "recall": (sum(r[3] == "accepted" for r in bugs), len(bugs)),
        "false_positives": (sum(r[3] == "accepted" for r in fine), len(fine)),
        "misses": sum(r[4] for r in rows),
    }


def panic_probe(verify: Any, transcripts: Path, work: Path) -> list[tuple[str, str, str, str]]:
    """(certificate, build, status, reason) of each round-trip certificate claimed as a panic."""
    table = json.loads((transcripts / "certificates" / "expected.json").read_text())
    rows = []
    for name, entries in table.items():
        cert = json.loads((transcripts / "certificates" / name).read_text())
        if "bundle" not in cert:
            continue
        claim = {"rule": cert["rule"], "source": cert["source"], "violation": "panics_on_valid_instance"}
        for entry in entries:
            verdict = verify(claim, pred=replaying_pred(work / entry["pred"], transcripts, entry["pred"]))
            rows.append((name, entry["pred"], verdict.status, verdict.reason))
    return rows


def upstream(transcripts: Path) -> dict[str, Any]:
    table = json.loads((transcripts / "certificates" / "expected.json").read_text())
    entries = [e for es in table.values() for e in es]
    bugs = [e for e in entries if e["expected"] == "bug"]
    fine = [e for e in entries if e["expected"] != "bug"]
    return {
        "recall": (sum(e["upstream_verdict"].startswith("ACCEPTED") for e in bugs), len(bugs)),
        "false_positives": (sum(e["upstream_verdict"].startswith("ACCEPTED") for e in fine), len(fine)),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--shared", type=Path, default=Path(os.environ.get("BENCHTUI_SHARED") or ROOT.parent / "shared")
    )
    p.add_argument("--before", default="0a81a35", help="the commit whose verifier is 'before'")
    args = p.parse_args()
    transcripts = args.shared / "pred-transcripts"
    if not (transcripts / "certificates" / "expected.json").is_file():
        print(f"error: no transcripts at {transcripts} (pass --shared)", file=sys.stderr)
        return 2
    from benchtui.targets.problem_reductions import verify

    with tempfile.TemporaryDirectory(prefix="verifier-recall-") as tmp:
        work = Path(tmp)
        results = {
            f"before ({args.before})": score(
                old_verifier(args.before, work / "old"), transcripts, work / "b"
            ),
            "after (this checkout)": score(verify, transcripts, work / "a"),
        }
        probe = panic_probe(verify, transcripts, work / "p")
    for label, result in results.items():
        print(f"\n== {label}")
        for name, build, expected, status, misses, reason in result["rows"]:
            mark = "ok " if (status == "accepted") == (expected == "bug") else "XX "
            miss = f" [{misses} not recorded]" if misses else ""
            print(f"  {mark}{name:46} {build:9} expected {expected:6} -> {status}{miss}: {reason[:90]}")
    print("\n| verifier | recall on known bugs | false positives on correct/fixed | replay misses |")
    print("| --- | --- | --- | --- |")
    for label, result in results.items():
        (hit, bugs), (fp, fine) = result["recall"], result["false_positives"]
        print(f"| {label} | {hit}/{bugs} | {fp}/{fine} | {result['misses']} |")
    up = upstream(transcripts)
    print(
        f"| upstream verify.py (recorded) | {up['recall'][0]}/{up['recall'][1]} "
        f"| {up['false_positives'][0]}/{up['false_positives'][1]} | - |"
    )
    print("\n== round-trip certificates claimed as panics_on_valid_instance (after): none is a bug")
    for name, build, status, reason in probe:
        print(f"  {'XX ' if status == 'accepted' else 'ok '}{name:46} {build:9} -> {status}: {reason[:90]}")
    confirmed = sum(status == "accepted" for _, _, status, _ in probe)
    print(f"false positives: {confirmed}/{len(probe)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
