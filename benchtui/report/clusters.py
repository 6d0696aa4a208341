"""What a report's intervals cluster: the unit sessions share something by.

- `run` for runs of the benchmark's own Top50 runner (kind `top50`): a session is one run of 50
  episodes on its model's shortlist; runs are the independent units.
- `task` for campaigns with tasks: the sessions of a task (its repeats, in every pooled run)
  share its difficulty, so they are one cluster.
- `session` otherwise (each session hunts the whole library: its own cluster).
"""

from __future__ import annotations

from benchtui.report.clustered import Unit
from benchtui.report.runs import RecordedRun, SessionHistory

RUN_KINDS = ("top50",)
"""Runner kinds whose session is a whole run of the benchmark's own runner."""


def unit_of(runs: list[RecordedRun]) -> Unit:
    """The unit a report of these runs clusters by (above)."""
    for run in runs:
        used = {v.runner for v in run.sessions if v.runner in run.campaign.runners} or {run.campaign.runner}
        if any(str(run.campaign.runners[name].kind) in RUN_KINDS for name in used):
            return "run"
    if all(run.campaign.tasks for run in runs):
        return "task"
    return "session"


def cluster_key(view: SessionHistory, unit: Unit) -> str:
    """The cluster a session belongs to: its task, or itself (its run dir and id)."""
    if unit == "task":
        return view.planned.task or ""
    return f"{view.run}#{view.planned.id}"
