"""Where a run stands: rebuilt from the journal and the saved ledger, reconciled after a crash.

The journal is the history of attempts; the accounts are rebuilt from its end lines, so a
finished attempt is counted exactly once whatever instant a crash hit. The saved ledger adds
what only it knows: the spend and open holds of attempts that were in flight. An attempt that
was running when the previous process died is ended as an `error` (interrupted, retryable),
charged what it spent plus its unsettled holds at their worst case (F6), and queued again.
"""

from __future__ import annotations

import json
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchtui import inputs, limits, rundir
from benchtui.atomic import gc_paused
from benchtui.campaign import Campaign
from benchtui.errors import BadInput
from benchtui.ledger import Ledger
from benchtui.money import ZERO, to_float, usd
from benchtui.plan import PlannedSession
from benchtui.store import JOURNAL, LEDGER

STATES = {"pending", "running", "done", "skipped_budget", "error", "killed"}
ENDED = {"done", "skipped_budget", "error", "killed"}
INTERRUPTED = "interrupted: benchtui stopped while the session ran"


def new_ledger(campaign: Campaign) -> Ledger:
    caps = {m.name: campaign.per_model_usd for m in campaign.models}
    return Ledger(campaign.budget.total_usd, caps, enforce=campaign.budget.enforce)


def is_final(record: dict[str, Any]) -> bool:
    """Final states are never re-run; infrastructure errors are retried on resume."""
    state = record["state"]
    return state in ENDED and not (state == "error" and record.get("retryable"))


@dataclass
class Checkpoint:
    ledger: Ledger
    last: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The current (last) journal record of every session that has one."""
    reconciled: list[dict[str, Any]] = field(default_factory=list)
    """End lines for interrupted attempts, to append to the journal before anything runs."""
    saved_runner: str | None = None
    """The active runner profile when the run was last saved (it may have been switched)."""

    def pending(self, plan: list[PlannedSession]) -> list[PlannedSession]:
        return [s for s in plan if s.id not in self.last or not is_final(self.last[s.id])]


def read_journal(path: Path, plan_ids: dict[str, PlannedSession]) -> list[dict[str, Any]]:
    """Parse the journal; a torn last line is ignored, any other bad line is corruption."""
    try:
        text = inputs.read_bytes(path, None, "the journal").decode("utf-8", errors="replace")
    except FileNotFoundError:
        return []
    lines = text.split("\n")
    lines.pop()  # "" when the file ends with a newline, else a torn last line: ignored
    try:
        records = _parse_all(lines)
    except ValueError as exc:
        raise BadInput(f"{path}: corrupted journal {exc}; use --fresh to start over") from None
    for number, rec in enumerate(records, 1):
        try:
            planned = plan_ids[rec["session"]]
            ok = (
                rec["state"] in STATES
                and rec["model"] == planned.model
                and isinstance(rec["attempt"], int)
                and not isinstance(rec["attempt"], bool)
                and limits.sane_amount(rec["cost_usd"])
                and isinstance(rec.get("tokens", 0), int)
            )
        except (KeyError, TypeError):
            ok = False
        if not ok:
            raise BadInput(f"{path}: corrupted journal at line {number}; use --fresh to start over")
    return records


def _parse_all(lines: list[str]) -> list[Any]:
    """One JSON parse for the whole journal (4x faster than a parse a line); a line that
    does not parse, or holds more or less than one value, is found and named line by line."""
    try:
        with gc_paused():
            records = json.loads("[" + ",".join(lines) + "]")
        if len(records) == len(lines):
            return records
    except (ValueError, RecursionError):
        pass
    for number, line in enumerate(lines, 1):
        try:
            json.loads(line)
        except (ValueError, RecursionError):
            raise ValueError(f"at line {number}") from None
    raise ValueError("(a line holds more than one record)")


def load(run_dir: Path, campaign: Campaign, plan: list[PlannedSession]) -> Checkpoint:
    rundir.check_layout(run_dir)
    try:
        saved = tomllib.loads(inputs.read_text(run_dir / LEDGER, inputs.LEDGER_MAX_BYTES, "the ledger"))
        in_flight = {f.session: f for f in Ledger.running_from_toml(saved)}
        amounts = [x for f in in_flight.values() for x in (f.reservation, f.spent, f.held)]
        if not isinstance(saved.get("runner", ""), str) or not all(map(limits.sane_amount, amounts)):
            raise ValueError("a value out of range")
    except FileNotFoundError:
        raise BadInput(f"{run_dir / LEDGER}: missing; use --fresh to start over") from None
    except (tomllib.TOMLDecodeError, KeyError, TypeError, ValueError, ArithmeticError, RecursionError) as exc:
        raise BadInput(f"{run_dir / LEDGER}: corrupted ledger ({exc}); use --fresh") from None
    ledger = new_ledger(campaign)
    check = Checkpoint(ledger, saved_runner=saved.get("runner"))
    plan_ids = {s.id: s for s in plan}
    for rec in read_journal(run_dir / JOURNAL, plan_ids):
        check.last[rec["session"]] = rec
        if rec["state"] in ENDED:
            ledger.record_end(
                rec["model"],
                rec["state"],
                usd(rec["cost_usd"]),
                certificates=int(bool(rec.get("certificate"))),
                tokens=rec.get("tokens", 0),
            )
    now = time.time()
    for sid, rec in list(check.last.items()):
        if rec["state"] != "running":
            continue
        flight = in_flight.get(sid)
        # No in-flight entry: the ledger was never saved with it, so no call was authorised.
        cost = flight.spent + flight.held if flight and flight.attempt == rec["attempt"] else ZERO
        end = {
            **rec,
            "state": "error",
            "cost_usd": to_float(cost),
            "result": "error",
            "reason": INTERRUPTED,
            "retryable": True,
            "t": now,
        }
        ledger.record_end(rec["model"], "error", cost)
        check.last[sid] = end
        check.reconciled.append(end)
    return check
