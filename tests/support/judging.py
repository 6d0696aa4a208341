"""Judging a session's report the way the mini and command runners do, against problem-reductions."""

from __future__ import annotations

from pathlib import Path

from benchtui.core.target import TargetTools
from benchtui.runners.kit.verdict import Verification, WorkerDone, WorkerReport
from benchtui.targets.problem_reductions.kind import ProblemReductions, ProblemReductionsProfile


def pred_verification(
    certificates_file: Path,
    pred: str | None,
    *,
    timeout: float = 60.0,
    max_certificates: int = 5,
    task: str | None = None,
    admit=None,
) -> Verification:
    """How a runner with this `pred` verifies a session's certificates (problem-reductions)."""
    return Verification(
        target=ProblemReductions(ProblemReductionsProfile()),
        tools=TargetTools({"pred": pred} if pred else {}, timeout),
        max_certificates=max_certificates,
        certificates_file=certificates_file,
        admit=admit,
        task=task,
    )


def report_of(*blocks: str, steps: int = 1, exit_status: str = "Submitted", **done) -> WorkerReport:
    """A worker's report that printed `blocks`."""
    return WorkerReport(done=WorkerDone(steps=steps, exit_status=exit_status, blocks=list(blocks), **done))


def scripted_verification(verify, certificates_file: Path | None = None) -> Verification:
    """A session's Verification whose target answers with `verify(cert)` (an async function
    returning a core Verdict), for tests of what carries verdicts (the tool gate, submit)."""
    from benchtui.core.target import TargetKind, TargetProfile

    class Scripted(TargetKind):
        verifies = True

        async def verify(self, certificate, tools):
            return await verify(certificate)

    return Verification(
        target=Scripted(TargetProfile(kind="scripted")),
        tools=TargetTools(),
        max_certificates=5,
        certificates_file=certificates_file or Path("/nonexistent/certificates.json"),
    )
