"""A stand-in of the `top50` runner kind's OUTPUT contract, for tests of what reads it (report,
export): each session writes a submission built in code (support/submissions.py) where the real
runner keeps the benchmark runner's file, `sessions/<id>/attempt-<N>.submission.json`, and spends
$0.01. The runner itself (running `python -m benchmark.run_top50` through the gateway) is
benchtui/runners/top50/; this only writes what it leaves behind.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar, Literal

from benchtui.core.contract import RunnerKind, RunnerProfile, SessionOutcome, Usage
from benchtui.core.outcome import Looked
from benchtui.core.target import Verdict
from support import submissions as S


class StubProfile(RunnerProfile):
    kind: Literal["support.top50_stub:SubmissionRunner"] = "support.top50_stub:SubmissionRunner"
    runs: dict[str, dict[str, Any]] = {}
    """Per "model#index" (or per model): `accepted` {position: attempt}, `certificates`
    {position: file} (default: a minimal certificate), `pred_calls`, `generations`, `episodes`,
    `library_commit`, `pred_version`, `rankable`, `shortlist`, `crash_attempts` (attempts that
    end in an infrastructure error after writing a cut-off file), `no_file` (write nothing),
    `recheck` {rule: status} (benchtui's verifier's verdicts, in attempt-N.certificates.json),
    `file` (a submission.json to keep as it is, e.g. one the benchmark's runner wrote)."""
    prompt: str = ""


class SubmissionRunner(RunnerKind):
    Profile: ClassVar[type[RunnerProfile]] = StubProfile

    def __init__(self, profile: StubProfile, *, run_dir: Path, target=None, executor=None) -> None:
        self.profile = profile
        self.run_dir = run_dir

    async def run(self, session, meter) -> SessionOutcome:
        usage = Usage(flat_usd=Decimal("0.01"))
        if not await meter.authorise(meter.price(usage)):
            return SessionOutcome("no_certificate", reason="budget_exhausted")
        meter.charge(usage)
        name = session.model.name
        spec = self.profile.runs.get(f"{name}#{session.index}", self.profile.runs.get(name, {}))
        if spec.get("no_file"):
            return SessionOutcome("error", reason="the runner wrote no submission", infra_error=False)
        if made := spec.get("file"):  # a file the benchmark's runner wrote, kept as it is
            session.session_dir.mkdir(parents=True, exist_ok=True)
            data = Path(made).read_bytes()
            (session.session_dir / f"attempt-{session.attempt}.submission.json").write_bytes(data)
            return SessionOutcome("no_certificate", steps=1)
        crash = session.attempt in spec.get("crash_attempts", [])
        plans = {}
        for position, attempt in spec.get("accepted", {}).items():
            cert = None
            if file := spec.get("certificates", {}).get(position):
                cert = json.loads(Path(file).read_text())
            plans[int(position)] = S.Plan(
                accepted=attempt,
                rejected=attempt - 1,
                certificate=cert,
                pred_calls=spec.get("pred_calls", 4),
                generations=spec.get("generations", 3),
            )
        for position in range(1, 51):
            plans.setdefault(
                position, S.Plan(pred_calls=spec.get("pred_calls", 4), generations=spec.get("generations", 3))
            )
        sub = S.build(
            name,
            plans,
            shortlist=spec.get("shortlist"),
            episodes=7 if crash else spec.get("episodes", 50),
            library_commit=spec.get("library_commit", S.PUBLISHED_COMMIT),
            pred_version=spec.get("pred_version", S.PUBLISHED_PRED),
            rankable=spec.get("rankable", True),
            prompt=self.profile.prompt or None,
            seed=f"{self.run_dir.name}:{session.id}:{session.attempt}",  # two runs never the same bytes
        )
        session.session_dir.mkdir(parents=True, exist_ok=True)
        (session.session_dir / f"attempt-{session.attempt}.submission.json").write_bytes(S.dumps(sub))
        if recheck := spec.get("recheck"):
            looked = [
                Looked(
                    {"rule": rule},
                    Verdict(status, "re-checked", "violation" if status == "accepted" else "no_violation"),
                )
                for rule, status in recheck.items()
            ]
            (session.session_dir / f"attempt-{session.attempt}.certificates.json").write_text(
                json.dumps([entry.to_json() for entry in looked])
            )
        if crash:
            return SessionOutcome("error", reason="the run was cut off", infra_error=True)
        accepted = sum(1 for e in sub["episodes"] if e["status"] == "bug_found")
        return SessionOutcome("bug_found" if accepted else "no_certificate", steps=len(sub["episodes"]))


def campaign(
    tmp_path: Path, runs: dict[str, dict[str, Any]], *, n: int = 2, name: str = "t50", prompt: str = ""
) -> Path:
    """A campaign file of two models × n sessions of the stub; its target folder made."""
    (tmp_path / "target").mkdir(exist_ok=True)
    profile = json.dumps(runs)
    path = tmp_path / f"{name}.toml"
    path.write_text(
        f'''name = "{name}"
sessions_per_model = {n}
parallelism = 2
runner = "top50"

[budget]
total_usd = 1.0
per_session_usd = 0.01

[runners.top50]
kind = "support.top50_stub:SubmissionRunner"
prompt = "{prompt}"
runs = {_toml_inline(json.loads(profile))}

[[models]]
name = "vendor/model-a"
input_usd_per_mtok = 1.0
output_usd_per_mtok = 2.0

[[models]]
name = "vendor/model-b"
input_usd_per_mtok = 1.0
output_usd_per_mtok = 2.0

[environment]
path = "target"

[target]
kind = "none"
'''
    )
    return path


def _toml_inline(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml_inline(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_inline(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value)


def run(
    tmp_path: Path,
    runs: dict[str, dict[str, Any]],
    *,
    n: int = 2,
    finished: bool = True,
    resume: bool = False,
    **kw: Any,
) -> Path:
    """Run the stub campaign to its end in-process; the run dir."""
    import trio

    from benchtui.engine import events as ev
    from benchtui.engine import run as engine

    path = campaign(tmp_path, runs, n=n, **kw)
    prep = engine.prepare(engine.Options(path, tmp_path / "runs", resume=resume))
    try:
        assert trio.run(engine.run, prep, ev.EventBus()) is finished
    finally:
        prep.lock.release()
    return prep.run_dir
