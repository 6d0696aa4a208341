"""`benchtui check --difference POINTS [--prior RUN_DIR ...]`: before spending, how many sessions
per model separate a difference at 80% power, and what the campaign as planned can resolve.

From the campaign's own data where its run dir holds some (a run to resume or grow), pooled with
earlier runs given as `--prior` (their sessions must have been given the same, as `report`
pools them); a stated prior where there are none (report/power.py). Growing there is a fixed
decision made now: set `repeats` (or `sessions_per_model`) to the number and `--resume`; a
campaign that stops as soon as a look separates its models would separate more often than its
95% says, so there is no "stop when separated" switch."""

from __future__ import annotations

from pathlib import Path

from benchtui.engine.campaign import Campaign
from benchtui.report.board_power import BoardPower, of_plans, reshaped
from benchtui.report.clustered import Unit
from benchtui.report.clusters import RUN_KINDS
from benchtui.report.power import Plan, prior_plan


def shape(campaign: Campaign) -> tuple[int, int, Unit]:
    """(clusters, sessions per cluster, unit) of the campaign as planned."""
    kinds = {str(p.kind) for p in campaign.runners.values()}
    if campaign.runners[campaign.runner].kind in RUN_KINDS or kinds <= set(RUN_KINDS):
        return campaign.sessions_per_model_count, 1, "run"
    if campaign.tasks:
        return len(campaign.tasks), campaign.repeats, "task"
    return campaign.sessions_per_model_count, 1, "session"


def data_dirs(campaign: Campaign, state_dir: Path, priors: list[Path]) -> list[Path]:
    """The campaign's own run dir (where it holds a journal), then the earlier runs given."""
    own = state_dir / campaign.name
    return ([own] if (own / "sessions.jsonl").is_file() else []) + priors


def preview(campaign: Campaign, state_dir: Path, priors: list[Path], difference: float) -> BoardPower:
    """The campaign's power answer, from data where there is some, else from the prior."""
    clusters, repeats, unit = shape(campaign)
    plans: list[Plan] = []
    dirs = data_dirs(campaign, state_dir, priors)
    if dirs:
        from benchtui.report import build

        report = build(dirs)  # BadInput (one line) when they cannot be pooled
        plans = [reshaped(c.plan, clusters, repeats) for c in report.comparisons if c.plan is not None]
    if not plans:
        plans = [prior_plan(clusters, repeats, unit)]
    return of_plans(plans, difference)


def lines(campaign: Campaign, answer: BoardPower) -> list[str]:
    """The answer, and how to grow there."""
    out = [line.replace("this board", "this campaign as planned", 1) for line in answer.lines()]
    if answer.needed is None:
        return out
    key = "repeats" if answer.plan.grows == "repeats" else "sessions_per_model"
    now = campaign.repeats if key == "repeats" else campaign.sessions_per_model_count
    if answer.needed > now:
        out.append(
            f"  to grow there: {key} = {answer.needed} in the campaign, then `benchtui CAMPAIGN --resume` "
            f"(a size fixed now: stopping when a look first separates would separate too often)"
        )
    else:
        out.append(f"  {key} = {now} as planned is enough")
    return out
