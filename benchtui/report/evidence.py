"""The evidence audit: a counter that counted more than the session's evidence ledger shows.

Each finished session's journal end line says how many units of each counter it used; its
`sessions/<id>/evidence.jsonl` (the runners' record of each step) shows what they were spent
on. A counter above its evidence is a finding: a unit taken for nothing the ledger can show.
Sessions without a ledger (older runs, runners that keep none) are not audited.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from benchtui.core import inputs
from benchtui.core.errors import BadInput
from benchtui.report.runs import RecordedRun, SessionHistory
from benchtui.runners.kit.evidence import FILE

MAX_EVIDENCE_BYTES = 64 * 1024 * 1024
MAX_FINDINGS = 20


KIND_OF = {"model_calls": "generation", "shell_actions": "action"}
"""Counters whose evidence only some runners keep (an agent CLI's calls go through the gateway,
its commands through its own shell): audited where the ledger has records of that kind. The
tool gate's counters (tools, submits) are recorded by every runner that has a gate."""


def shown(path: Path, attempt: int) -> Counter[str] | None:
    """Units the ledger of one attempt shows, by flat counter name, plus one `kind:<kind>` entry
    per record kind present (None: no readable ledger)."""
    try:
        text = inputs.read_text(path, MAX_EVIDENCE_BYTES, "an evidence ledger")
    except (FileNotFoundError, BadInput):
        return None
    units: Counter[str] = Counter()
    for line in text.splitlines():
        try:
            record = inputs.loads_json(line)
        except ValueError:
            continue  # a torn last line
        if not isinstance(record, dict) or record.get("attempt") != attempt:
            continue
        kind = record.get("kind")
        units[f"kind:{kind}"] += 1
        if kind == "generation" and record.get("charged") is True:
            units["model_calls"] += 1
        elif kind == "action" and record.get("unit") is True:
            units["shell_actions"] += 1
        elif kind == "tool" and record.get("granted") is True and record.get("free") is False:
            counters = record.get("counters")
            if isinstance(counters, list):
                units.update(c for c in counters if isinstance(c, str))
        elif kind == "submit" and record.get("verdict") not in (None, "refused"):
            units["submits"] += 1
    return units


def findings(runs: list[RecordedRun]) -> list[str]:
    out: list[str] = []
    for run in runs:
        for view in run.sessions:
            out += _session(run.path, view)
    if len(out) > MAX_FINDINGS:
        out = [*out[:MAX_FINDINGS], f"evidence: {len(out) - MAX_FINDINGS} more sessions' counters exceed it"]
    return out


def _session(run_dir: Path, view: SessionHistory) -> list[str]:
    if view.state != "done" or not view.counters:
        return []
    ledger = shown(run_dir / "sessions" / view.planned.id / FILE, view.attempt)
    if ledger is None:
        return []
    over = {c: (n, ledger[c]) for c, n in view.counters.items() if n > ledger[c] and c != "model_calls"}
    if (
        "model_calls" in view.counters
        and any(ledger.values())
        and view.counters["model_calls"] > ledger["model_calls"]
    ):
        over["model_calls"] = (view.counters["model_calls"], ledger["model_calls"])
    return [
        f"evidence: session {view.planned.id}: {counter} counted {n} but its evidence shows {seen} "
        f"({json.dumps(str(FILE))})"
        for counter, (n, seen) in sorted(over.items())
    ]
