"""Top50Runner: one session is one whole run of the benchmark's own runner for one model.

The runner is entered once per campaign run (it opens the metering gateway). A session: the
benchmark's runner is started where its placement puts it (`checkout`: this machine, in a mount
namespace of its own; `docker`: its image) with the session's model, the gateway as its
API_BASE and the session's token as its key; every HTTP request it makes (its LiteLLM's retries
included) is held at its worst case on the session's meter and charged, and a call the budget
refuses answers 401 (LiteLLM stops at once on it; a 429 it retries for minutes). While it runs,
its checkpointed `submission.json` is read for progress; past `wall_time_s` its whole tree is
killed. Its outcome is read from that file (its status, run error and episode count, never the
exit code: the runner exits 0 on failure); the file is kept byte for byte as
`attempt-<N>.submission.json` and its output as `attempt-<N>.agent.log`. Every accepted
certificate is re-checked by the campaign's target; where the checkout is here, the benchmark's
`verify_submission` runs too; both verdicts go to `attempt-<N>.verdicts.json`, a disagreement is
an audit finding. A run cut off (the cap, the watchdog, a crash) is never taken half-way: it is
an infrastructure error, run again on `--resume` as a new attempt, its spend kept as wasted.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import trio

from benchtui.core import submission, tempdirs
from benchtui.core.atomic import atomic_write
from benchtui.core.contract import (
    Check,
    LogicalLimits,
    Meter,
    RunnerKind,
    RunnerProfile,
    SessionOutcome,
    SessionSpec,
)
from benchtui.core.endings import Ending
from benchtui.core.errors import BadInput
from benchtui.core.outcome import Checked, Judgement, Looked, SessionFacts
from benchtui.core.target import TargetKind, TargetTools, Toolbox, Verdict, locate
from benchtui.runners.kit import reaper
from benchtui.runners.kit import secrets as keys
from benchtui.runners.kit.agentlog import CHUNK, CappedLog
from benchtui.runners.kit.gateway import Gateway, open_gateway
from benchtui.runners.kit.oneshot import OneShot
from benchtui.runners.top50 import checkout, checkpoint, docker, ids
from benchtui.runners.top50.profile import MAX_TOKENS, Top50Profile

POLL_S = 1.0
"""How often the checkpointed output is looked at while the run lasts (a stat; read when it changed)."""
REFUSED_STATUS = 401
KILL_WAIT_S = 5.0
VERIFY_SUBMISSION_S = 600.0


@dataclass
class Ran:
    """How the benchmark's runner process ended."""

    code: int | None = None
    watchdog: bool = False
    start_error: str = ""
    last: submission.Progress = field(default_factory=lambda: submission.Progress("absent"))


class Top50Runner(RunnerKind):
    Profile: ClassVar[type[RunnerProfile]] = Top50Profile
    enforces: ClassVar[frozenset[str]] = frozenset()
    uses_target = True

    @classmethod
    def preflight(cls, profile: Any, *, tasks: list[str] | None, full: bool) -> list[Check]:
        p: Top50Profile = profile
        if p.placement == "docker":
            why = docker.missing(p.docker)
            return [Check("docker", why or "", "" if why else str(shutil.which(p.docker)))]
        found = [Check("root (it setuids to its agent and oracle)", "" if os.geteuid() == 0 else "not root")]
        found.append(Check("unshare", "" if shutil.which("unshare") else "unshare (util-linux) not on PATH"))
        bench = p.benchmark
        runner = bench / "benchmark" / "run_top50.py" if bench else None
        found.append(
            Check(
                "the benchmark's checkout",
                "" if runner and runner.is_file() else f"no benchmark/run_top50.py in {bench}",
                str(bench),
            )
        )
        pred = locate(p.pred)
        found.append(Check("pred", "" if pred else f"{p.pred!r} not found", pred or ""))
        if full:
            python = p.python or sys.executable
            code = "import minisweagent, litellm; print(minisweagent.__version__)"
            env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "MSWEA_SILENT_STARTUP": "1"}
            done = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env, timeout=120)
            version = done.stdout.strip().splitlines()[-1:] or [""]
            problem = "" if done.returncode == 0 else f"{python}: {done.stderr.strip()[-200:]}"
            found.append(Check("mini-swe-agent and litellm", problem, f"mini-swe-agent {version[0]}"))
        return found

    @classmethod
    def find_toolbox(cls, profile: Any, target: type[TargetKind]) -> Toolbox:
        """The benchmark fixes its program: the profile's `pred` (baked into each session) is
        where the target's `pred` is found, not the PATH. Placement docker runs the image's own:
        a host pred is then only our re-check's, and its absence makes that re-check inconclusive
        (`target_tools`), not the run impossible."""
        found = target.toolbox({"pred": profile.pred} if _declares_pred(target) else {})
        if profile.placement == "docker":
            return Toolbox(found.found, {}, found.declared)
        return found

    @classmethod
    def target_tools(cls, profile: Any, target: type[TargetKind]) -> TargetTools:
        """Our own verifier's `pred`: the profile's (the one baked into each session)."""
        wanted = _declares_pred(target)
        pred = locate(profile.pred) if wanted else None
        return TargetTools(
            {"pred": pred} if pred else {},
            profile.verify_timeout_s,
            OneShot(sandboxed=False),
            {"pred": profile.pred} if wanted and not pred else {},
        )

    @classmethod
    def check_limits(
        cls, profile: Any, limits: LogicalLimits, *, toolbox: Toolbox | None = None
    ) -> list[Check]:
        """The benchmark's budget is its own (fixed: M/E/P/S/O); a campaign's would not apply."""
        if not limits:
            return []
        return [
            Check(
                "[budget.per_session]",
                "the top50 runner runs the benchmark's own fixed budget: remove [budget.per_session]",
            )
        ]

    def __init__(self, profile: Top50Profile, *, run_dir: Path, target: TargetKind, executor: Any = None):
        super().__init__(profile, run_dir=run_dir, target=target, executor=executor)
        self.profile: Top50Profile = profile
        self.tools = self.target_tools(profile, type(target))
        self.gateway: Gateway | None = None
        self._pins: dict[Path, checkout.Pins] = {}
        self._ready = trio.Event()
        self._stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> Top50Runner:
        self.gateway = await self._stack.enter_async_context(
            open_gateway(request_timeout_s=self.profile.request_timeout_s)
        )
        self._ready.set()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.gateway = None
        await self._stack.aclose()

    async def _pins_of(self, library: Path) -> checkout.Pins:
        """The library checkout's commit and the pred's version (once per checkout)."""
        if library not in self._pins:
            pred = locate(self.profile.pred) or self.profile.pred
            commit = await trio.to_thread.run_sync(checkout.library_commit, library)
            version = await trio.to_thread.run_sync(checkout.pred_version, pred)
            self._pins[library] = checkout.Pins(commit, version)
        return self._pins[library]

    async def run(self, session: SessionSpec, meter: Meter) -> SessionOutcome:
        await self._ready.wait()
        assert self.gateway is not None
        profile, model = self.profile, session.model
        if model.max_output_tokens < MAX_TOKENS:
            return _infra(
                f"the benchmark's runner asks max_tokens {MAX_TOKENS} on every call: model "
                f"{model.name}'s max_output_tokens is {model.max_output_tokens} (the gateway would "
                "cut its answers, which the benchmark fixes); set it to at least 8192"
            )
        key_name = profile.key_variable(model)
        secrets = keys.collect(filter(None, [key_name]))
        if key_name and key_name not in secrets:
            return _infra(f"API key variable {key_name} is not set")
        files = session.session_dir.resolve()
        await trio.to_thread.run_sync(lambda: files.mkdir(parents=True, exist_ok=True))
        n = session.attempt
        log, kept = files / f"attempt-{n}.agent.log", files / f"attempt-{n}.submission.json"
        stage = tempdirs.make("top50")  # names no model: what the run's namespace shows
        out = stage / "out"
        out.mkdir(mode=0o700)
        data: bytes | None = None
        try:
            with ids.slot(profile.uid_base) as slot:
                async with self.gateway.session(
                    meter, model, secrets.get(key_name or ""), refusal_status=REFUSED_STATUS
                ) as grant:
                    env = benchmark_env(model.name, self._api_base(model.name), grant.token)
                    try:
                        argv, run_env, container = await self._command(session, stage, out, env, slot)
                    except (ValueError, OSError, subprocess.SubprocessError) as exc:
                        return _infra(f"the session's run could not be set up: {exc}")
                    ran = await self._run(argv, run_env, log, out, meter, container)
                refused = grant.refused
            try:
                data = await trio.to_thread.run_sync(checkpoint.read, out)
            except checkpoint.Unreadable as exc:
                return _cut(f"its output is not a submission: {exc}", "runner_error", ran)
            if data is not None:
                await trio.to_thread.run_sync(atomic_write, kept, data)
                ended = submission.progress(data)
                if ended.describe() != ran.last.describe():
                    meter.progress(ended.describe(), milestone=True)  # the end, however fast it came
                ran.last = ended
            if ran.start_error:
                return _infra(ran.start_error)
            return await self._outcome(session, ran, refused, data, stage, files)
        except ids.NoSlot as exc:
            return _infra(str(exc))
        finally:
            with trio.CancelScope(shield=True):
                if data is None:  # cut off: whatever it had written is kept all the same
                    with contextlib.suppress(checkpoint.Unreadable, OSError):
                        left = await trio.to_thread.run_sync(checkpoint.read, out)
                        if left is not None:
                            await trio.to_thread.run_sync(atomic_write, kept, left)
                await trio.to_thread.run_sync(keys.redact, [log, kept], secrets.values())
                await trio.to_thread.run_sync(partial_rmtree, stage)

    def _api_base(self, model_name: str) -> str:
        """The gateway as its LiteLLM reaches it: OpenAI-compatible providers at /v1, Anthropic's
        client adds /v1/messages itself."""
        assert self.gateway is not None
        provider = model_name.split("/", 1)[0] if "/" in model_name else "openai"
        return self.gateway.url if provider == "anthropic" else f"{self.gateway.url}/v1"

    async def _command(
        self, session: SessionSpec, stage: Path, out: Path, env: dict[str, str], slot: ids.Ids
    ) -> tuple[list[str], dict[str, str], str | None]:
        profile = self.profile
        if profile.placement == "docker":
            why = docker.missing(profile.docker)
            if why:
                raise ValueError(why)
            name = docker.container_name()
            env_file = stage / "submission.env"
            await trio.to_thread.run_sync(docker.write_env_file, env_file, env)
            argv = docker.argv(profile.docker, profile.image, name, env_file, out)
            return argv, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, name
        assert profile.benchmark is not None
        library = session.environment.resolve()
        pins = await self._pins_of(library)
        pred = locate(profile.pred)
        if pred is None:
            raise ValueError(f"pred not found ({profile.pred!r}): set the profile's `pred`")
        plan_env = {**env, **slot.env()}
        argv, run_env = await trio.to_thread.run_sync(
            lambda: checkout.write_plan(
                stage,
                library=library,
                benchmark=profile.benchmark.resolve(),  # type: ignore[union-attr]
                pred=pred,
                pins=pins,
                oracle_gid=slot.oracle,
                python=profile.python or sys.executable,
                env=plan_env,
                out=out,
            )
        )
        return argv, run_env, None

    async def _run(
        self,
        argv: list[str],
        env: dict[str, str],
        log: Path,
        out: Path,
        meter: Meter,
        container: str | None,
    ) -> Ran:
        """The runner's process to its end, its output into a bounded log, its checkpoint watched;
        past the watchdog, or on cancellation, its whole tree is killed (a container by name)."""
        ran = Ran()
        # The run's lifeline (placement checkout): `inside.py` kills the run's whole tree when it
        # reads the end of this pipe, which the engine's death (even by SIGKILL) closes.
        fds: tuple[int, ...] = ()
        hold = -1
        if container is None:
            lifeline, hold = os.pipe()
            fds = (lifeline,)
            argv = [*argv, str(lifeline)]
        with CappedLog(log) as sink, _closing(hold):
            try:
                process = await trio.lowlevel.open_process(
                    argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    env=env, start_new_session=True, pass_fds=fds,
                )  # fmt: skip
            except OSError as exc:
                ran.start_error = f"the benchmark's runner could not start: {exc}"
                return ran
            finally:
                for fd in fds:
                    os.close(fd)  # the child holds the read end; the write end is held below
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(_pump, process, sink)
                    nursery.start_soon(_watch, out, meter, ran)
                    try:
                        with trio.move_on_after(self.profile.run_wall_time_s) as dog:
                            ran.code = await process.wait()
                        ran.watchdog = dog.cancelled_caught
                    finally:
                        if process.returncode is None:
                            with trio.CancelScope(shield=True):
                                await _kill(process, container, self.profile.docker)
                        nursery.cancel_scope.deadline = trio.current_time() + 2.0
            finally:
                assert process.stdout is not None
                with trio.CancelScope(shield=True):
                    await process.stdout.aclose()
        return ran

    async def _outcome(
        self,
        session: SessionSpec,
        ran: Ran,
        refused: int,
        data: bytes | None,
        stage: Path,
        files: Path,
    ) -> SessionOutcome:
        where = _where(ran.last)
        if ran.watchdog:
            why = f"watchdog: the run passed wall_time_s {self.profile.run_wall_time_s:g} s{where}"
            return _cut(why, "wall_time", ran)
        if refused:
            why = f"the session's budget was spent: the gateway refused {refused} call(s) (401){where}"
            return _cut(why, "budget_exhausted", ran)
        if data is None:
            return _cut(f"the runner ended (exit {ran.code}) without a submission.json", "runner_error", ran)
        try:
            sub = submission.parse(data)
        except BadInput as exc:
            return _cut(f"its output is not a submission: {exc}", "runner_error", ran)
        if not sub.complete:
            error = sub.run_error or f"status {sub.status} with {sub.done} episodes"
            if not sub.shortlist and not sub.episodes and "without a valid frozen Top50" in error:
                facts = SessionFacts(exit_status=f"exit {ran.code}", reject_reason=error)
                return SessionOutcome(
                    "no_certificate",
                    f"its triage froze no Top50: {error}",
                    facts=facts,
                    ending="agent_failed",
                )
            ending: Ending = "provider_error" if "infrastructure error" in error else "runner_error"
            return _cut(f"the run did not finish: {error[:300]}", ending, ran)
        return await self._judge(session, ran, sub, stage, files)

    async def _judge(
        self, session: SessionSpec, ran: Ran, sub: submission.Submission, stage: Path, files: Path
    ) -> SessionOutcome:
        """A whole run: every accepted certificate re-checked by the target (and by the
        benchmark's `verify_submission` where its checkout is here); both verdicts recorded."""
        accepted = [(e.index, e.rule, e.accepted.certificate) for e in sub.accepts if e.accepted]
        ours: list[tuple[int, str, dict[str, Any], Verdict]] = []
        for index, rule, cert in accepted:
            try:
                verdict = await self.target.verify(cert, self.tools)
            except Exception as exc:  # a certificate the target cannot handle is not a crash of the run
                verdict = Verdict("rejected", f"{type(exc).__name__}: {str(exc)[:200]}", "malformed")
            ours.append((index, rule, cert, verdict))
        theirs = await self._verify_submission(files / f"attempt-{session.attempt}.submission.json", stage)
        findings = disagreements(ours, theirs)
        record = {
            "ours": [{"episode": i, "rule": r, **v.to_json()} for i, r, _, v in ours],
            "benchmark": theirs,
            "findings": findings,
        }
        n = session.attempt
        looked = [Looked(cert, v).to_json() for *_, cert, v in ours]
        await trio.to_thread.run_sync(
            atomic_write,
            files / f"attempt-{n}.certificates.json",
            json.dumps(looked, indent=1, default=str).encode(),
        )
        await trio.to_thread.run_sync(
            atomic_write, files / f"attempt-{n}.verdicts.json", json.dumps(record, indent=2).encode()
        )
        confirmed = [(i, cert, v) for i, _, cert, v in ours if v.accepted]
        checked = tuple(Checked(v.status, v.reason, v.cause) for *_, v in ours)
        facts = SessionFacts(exit_status=f"exit {ran.code}", unverified_certificates=None)
        summary = (
            f"{len(confirmed)} of {len(ours)} accepted certificates confirmed by our verifier, "
            f"{sub.done} episodes"
            + (f"; audit: {len(findings)} disagreement(s) with the benchmark's verifier" if findings else "")
        )
        if confirmed:
            _, cert, verdict = confirmed[0]
            return SessionOutcome(
                "bug_found",
                summary,
                steps=sub.done,
                certificate=cert,
                judgement=Judgement(verdict, checked),
                facts=facts,
                ending="found",
            )
        judgement = Judgement(ours[0][3], checked) if ours else None
        return SessionOutcome(
            "no_certificate",
            summary,
            steps=sub.done,
            judgement=judgement,
            facts=facts,
            ending="model_done",
        )

    async def _verify_submission(self, submission: Path, stage: Path) -> dict[str, Any] | None:
        """The benchmark's own `python -m benchmark.verify_submission FILE --repo-dir DIR --out X`
        (placement `checkout` only; its pred version pin set to the run's, as scoring allows)."""
        profile = self.profile
        if profile.placement != "checkout" or profile.benchmark is None:
            return None
        bench = profile.benchmark.resolve()
        result = stage / "verified.json"
        pred = locate(profile.pred) or profile.pred
        version = next(iter(self._pins.values())).pred_version if self._pins else ""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": str(bench),
            "PRED_BINARY": pred,
            "EXPECTED_PRED_VERSION": version,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        argv = [profile.python or sys.executable, "-m", "benchmark.verify_submission", str(submission)]
        argv += ["--repo-dir", str(stage / "repo"), "--out", str(result)]
        with trio.move_on_after(VERIFY_SUBMISSION_S):
            done = await trio.run_process(
                argv, env=env, cwd=bench, capture_stdout=True, capture_stderr=True, check=False
            )
            if done.returncode == 0:
                with contextlib.suppress(OSError, ValueError):
                    scored = json.loads(result.read_bytes())
                    if isinstance(scored, dict):
                        return scored
            return {"error": done.stderr.decode(errors="replace").strip()[-300:] or f"exit {done.returncode}"}
        return {"error": f"verify_submission took longer than {VERIFY_SUBMISSION_S:g} s"}


def benchmark_env(model: str, api_base: str, token: str) -> dict[str, str]:
    """What the benchmark's runner reads, for one session: its model, the gateway, the session's
    token (never a real key), and the settings that keep it off the network and off the host's
    mini-swe-agent configuration."""
    return {
        "MODEL_NAME": model,
        "API_BASE": api_base,
        "API_KEY": token,
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "MSWEA_GLOBAL_CONFIG_DIR": "/tmp/.mini-swe-agent",
        "MSWEA_SILENT_STARTUP": "1",
        "MSWEA_COST_TRACKING": "ignore_errors",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


def disagreements(
    ours: list[tuple[int, str, dict[str, Any], Verdict]], theirs: dict[str, Any] | None
) -> list[str]:
    """Where our verifier and the benchmark's disagree on an accepted certificate (an audit finding each)."""
    if not theirs or not isinstance(theirs.get("verifier_report"), list):
        return []
    said = {
        (item.get("position"), item.get("rule")): item.get("accepted") is True
        for item in theirs["verifier_report"]
        if isinstance(item, dict) and item.get("accepted") is not None
    }
    found = []
    for index, rule, _, verdict in ours:
        bench = said.get((index, rule))
        if bench is not None and bench != verdict.accepted and verdict.status != "inconclusive":
            found.append(
                f"episode {index} ({rule}): the benchmark's verifier "
                f"{'accepts' if bench else 'rejects'}, ours says {verdict.status} ({verdict.reason[:200]})"
            )
    return found


def _where(last: submission.Progress) -> str:
    return f" after episode {last.done}/{last.planned}" if last.done else " in triage"


def _infra(reason: str) -> SessionOutcome:
    return SessionOutcome("error", reason=reason, infra_error=True, ending="setup_error")


def _cut(reason: str, ending: Ending, ran: Ran) -> SessionOutcome:
    """A run that did not finish: never taken half-way; run again on --resume as a new attempt."""
    facts = SessionFacts(exit_status=f"exit {ran.code}" if ran.code is not None else "killed")
    return SessionOutcome("error", reason=reason, infra_error=True, facts=facts, ending=ending)


async def _pump(process: trio.Process, sink: CappedLog) -> None:
    assert process.stdout is not None
    while chunk := await process.stdout.receive_some(CHUNK):
        sink.write(chunk)


async def _watch(out: Path, meter: Meter, ran: Ran) -> None:
    """Progress from the checkpointed output (`triage` until the first episode is written, then
    `episode k/50, n accepted`), told to the meter when it changes."""
    seen: tuple[int, int] | None = None
    note = ran.last.describe()
    meter.progress(note, milestone=True)
    while True:
        await trio.sleep(POLL_S)
        try:
            info = os.stat(out / checkpoint.NAME, follow_symlinks=False)
        except OSError:
            continue
        stamp = (info.st_mtime_ns, info.st_size)
        if stamp == seen:
            continue
        seen = stamp
        now = await trio.to_thread.run_sync(checkpoint.progress, out)
        if now.phase == "unreadable":
            continue  # between the runner's renames, or planted: the end reads it for good
        ran.last = now
        if now.describe() != note:
            note = now.describe()
            meter.progress(note, milestone=True)


async def _kill(process: trio.Process, container: str | None, client: str) -> None:
    if container is not None:
        with contextlib.suppress(OSError), trio.move_on_after(30):
            await trio.run_process(docker.kill_argv(client, container), capture_stdout=True, capture_stderr=True, check=False)  # fmt: skip
    reaper.kill_tree(process.pid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with trio.move_on_after(KILL_WAIT_S):
        await process.wait()


@contextlib.contextmanager
def _closing(fd: int) -> Iterator[None]:
    try:
        yield
    finally:
        if fd >= 0:
            os.close(fd)


def partial_rmtree(stage: Path) -> None:
    """The stage goes (its namespace's mounts died with the run's processes)."""
    shutil.rmtree(stage, ignore_errors=True)


def _declares_pred(target: type[TargetKind]) -> bool:
    """Whether the campaign's target has the program the benchmark fixes (its `programs` are
    `Program`s since the target owns its toolbox, names before)."""
    return any(p.name == "pred" for p in target.declared())
