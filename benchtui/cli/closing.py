"""What a campaign says when a front end closes, and what a run dir says when nothing runs it.

Headless and the TUI print the same closing lines (the per-model table, where the results are,
how to continue); `benchtui ctl status` on a run that is not running reads the same from disk.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchtui.cli.headless import summary_table
from benchtui.core.errors import BadInput, BenchtuiError
from benchtui.core.text import printable
from benchtui.engine import events as ev
from benchtui.engine import rundir

if TYPE_CHECKING:
    from benchtui.engine.run import PreparedRun


def resume_command(run_dir: Path) -> str:
    """The command that continues this run, naming it: a state dir may hold several campaigns,
    and the latest one need not be this one (`benchtui --resume NAME`, or its run dir)."""
    default = rundir.state_dir()
    if run_dir.parent.resolve() == default.resolve() and not Path(run_dir.name).is_file():
        return f"benchtui --resume {run_dir.name}"
    return f"benchtui --resume {run_dir}"


def view_command(run_dir: Path) -> str:
    """The command that shows every session of this run in the browser."""
    return f"benchtui view {run_dir}"


def endings_text(endings: Any) -> list[str]:
    """`endings: fake/model-a model_done ×3, found ×1`, one line per model (ctl status); a model
    most of whose sessions could not act is named with the ending that says why."""
    if not isinstance(endings, dict) or not endings:
        return []
    lines = ["endings (why its sessions ended):"]
    for model, found in endings.items():
        if isinstance(found, dict):
            shown = ", ".join(f"{printable(str(e))} ×{n}" for e, n in found.items() if isinstance(n, int))
            lines.append(f"  {printable(str(model))}: {shown}")
    return lines


def closing_text(run_dir: Path, accounts: ev.AccountsCommitted | None, finished: bool) -> str:
    """The per-model table, where the results are, how to read each session, and (when
    unfinished) how to resume."""
    lines = [summary_table(accounts)] if accounts is not None else []
    lines.append(f"results: {run_dir / 'results'}/ (one JSON file per model); run dir: {run_dir}")
    lines.append(
        f"sessions: `{view_command(run_dir)}` shows each one (what the model saw, ran and submitted)"
    )
    if not finished:
        lines.append(f"not finished: `{resume_command(run_dir)}` continues it")
    return "\n".join(lines)


def run_dir_status(run_dir: Path) -> str:
    """`ctl status` of a run nobody runs: its accounts rebuilt from the journal and the saved
    ledger (read-only: an interrupted attempt shows as the error `--resume` will record)."""
    from benchtui.engine.control import endings_by_model
    from benchtui.engine.reader import RunDir
    from benchtui.engine.run import accounts_event

    saved = RunDir(run_dir)
    try:
        campaign, plan = saved.campaign, saved.plan
        check = saved.checkpoint()
        runner = saved.ledger.control.runner or campaign.runner
    except BenchtuiError as exc:
        raise BadInput(
            f"the campaign in {run_dir} is not running, and its state cannot be read: {exc}"
        ) from None
    unfinished = len(check.pending(plan))
    ended = sum(1 for s in plan if (r := check.journal.get(s.id)) is not None and r.ended)
    # Sessions that failed on their own (not interrupted by a stop or a crash of benchtui).
    failed = [
        r
        for s in plan
        if (r := check.journal.get(s.id)) is not None
        and r.state == "error"
        and r.retryable
        and not r.reason.startswith("interrupted")
    ]
    state = "finished" if not unfinished else f"stopped, {unfinished} of {len(plan)} sessions to run"
    if unfinished and failed:
        why = printable(max(failed, key=lambda r: r.t).reason)  # it may quote what an agent wrote
        state = (
            f"failed: {len(failed)} of {len(plan)} sessions ended in infrastructure errors "
            f"(the last: {why[:300]}); {unfinished} to run"
        )
    head = (
        f"campaign {campaign.name}: {state} (not running), runner {runner}, "
        f"{ended}/{len(plan)} sessions ended"
    )
    table = accounts_event(check.ledger, Counter(s.model for s in plan))
    endings = endings_text(endings_by_model(check.journal.values()))
    return "\n".join([head, *endings, closing_text(run_dir, table, finished=not unfinished)])


def report_command(run_dir: Path) -> str:
    return f"benchtui report {run_dir}"


def finished_text(prep: PreparedRun) -> str:
    """A finished run started again without a flag: its summary, where its results and report are,
    and that nothing ran (nor was spent)."""
    from benchtui.engine.run import accounts_event

    plan = prep.plan
    table = accounts_event(prep.checkpoint.ledger, Counter(s.model for s in plan))
    head = (
        f"campaign {prep.campaign.name}: finished ({len(plan)}/{len(plan)} sessions ended); nothing was "
        "run or spent (--fresh starts over with a new budget; --resume with models or repeats added grows it)"
    )
    report = f"report: `{report_command(prep.run_dir)}` (`--format html -o report.html` for a page)"
    return "\n".join([head, closing_text(prep.run_dir, table, finished=True), report])
