"""The engine's answers to one worker (local or on a node): the same handler for both.

Each record the worker sends (`protocol.decode`) is answered here: authorisations by the meter
(docs/design/invariants.md#f5), usage charged at campaign prices (docs/design/invariants.md#f6), shell actions' units, the budget line, evidence.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

from benchtui.core.contract import Meter, Usage
from benchtui.runners.kit.evidence import Evidence
from benchtui.runners.kit.toolgate import counting
from benchtui.runners.kit.verdict import WorkerDone, WorkerReport
from benchtui.runners.mini import protocol as p


class Worker(Protocol):
    pid: int | None

    def adopt(self, pid: int) -> None: ...


@dataclass
class WorkerSession:
    """What answering one worker needs: its meter, its report, its gate, its evidence."""

    meter: Meter
    report: WorkerReport
    worker: Worker
    gate: counting.Gate
    evidence: Evidence | None = None
    remote: bool = False
    """On a node: its cgroup is the node's, not ours to remove."""
    _unit: bool = False
    """The action in flight took a `shell_actions` unit (actions come one at a time)."""

    async def handle(self, message: p.WorkerMessage, channel: p.EngineChannel) -> None:
        meter, report = self.meter, self.report
        match message:
            case p.Authorise(prompt_tokens=tokens):
                started = time.perf_counter()
                ended = "accepted" if self.gate.ended else ""
                ok = not ended and tokens is not None and await meter.authorise(meter.worst_case_usd(tokens))
                report.prompt_tokens = tokens or 0
                report.authorisations += 1
                report.meter_wait_s += time.perf_counter() - started
                await channel.send("authorised", ok=ok, ended=ended)
            case p.UsageReport():
                self.settle(message)
            case p.Use():
                spent = await meter.use("shell_actions")
                self._unit = spent is None
                await channel.send("used", ok=spent is None, message=counting.refusal(meter.limits, spent))
            case p.BudgetAsk():
                await channel.send("budget", line=counting.budget_line(meter.limits, meter))
            case p.Action():
                if self.evidence is not None:
                    self.evidence.record(
                        "action",
                        command=message.command,
                        exit=message.exit,
                        duration_s=message.duration_s,
                        raw_bytes=message.raw_bytes,
                        shown_chars=message.shown_chars,
                        cut=message.cut,
                        saved=message.saved,
                        unit=self._unit,
                    )
                self._unit = False
            case p.Step(note=note):
                meter.progress(note)
            case p.Hello(pid=pid):
                self.worker.adopt(pid)
                meter.progress(f"worker {pid} started")
            case p.Copy(fingerprint=fingerprint):
                report.copy_fingerprint = fingerprint
            case p.Prompt(sha256=sha256):
                report.prompt_sha256 = sha256
            case p.Cgroup(path=path):
                if not self.remote:
                    report.cgroup = path
            case p.Done(report=done):
                found = WorkerDone.read(done)
                report.done = (
                    found if isinstance(found, WorkerDone) else WorkerDone(infra_error=True, error=found)
                )

    def late(self, message: p.WorkerMessage) -> None:
        """After the session: only the worker's pid and the usage it reported still matter."""
        if isinstance(message, p.Hello) and self.worker.pid is None:
            self.worker.adopt(message.pid)
        elif isinstance(message, p.UsageReport):
            self.settle(message)

    def settle(self, usage: p.UsageReport) -> None:
        """Charge one attempt's usage report; one that is unreadable is charged the worst case
        that was authorised for the attempt (docs/design/invariants.md#f6: never under), and every worst-case charge says
        why."""
        report = self.report
        counts = (
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
            usage.reasoning_tokens,
        )
        why = usage.worst_case
        if None in counts:
            why = f"unreadable usage report: {usage.raw}"
            charged = Usage(report.prompt_tokens, report.max_output_tokens, worst_case=True)
        elif why:  # the worker sent the worst case it was authorised (prompt, max output)
            charged = Usage(counts[0] or 0, counts[1] or 0, worst_case=True)
        else:
            charged = Usage(
                counts[0] or 0,
                counts[1] or 0,
                cache_read_tokens=counts[2] or 0,
                cache_write_tokens=counts[3] or 0,
                reasoning_tokens=counts[4] or 0,
                provider_cost_usd=usage.provider_cost_usd,
            )
        if why:
            report.worst_case.append(why[:300])
        # A failed attempt the provider surely did not bill (refused, a 429) was no model call either.
        unserved = usage.failed and not why and charged.tokens == 0
        if usage.throttled and unserved:  # every session of the provider waits out its backoff
            self.meter.throttled(usage.retry_after_s)
        cost = self.meter.charge(charged, served=not unserved)
        if self.evidence is not None:
            self.evidence.record(
                "generation",
                input_tokens=charged.input_tokens,
                output_tokens=charged.output_tokens,
                **{
                    f"{bucket}_tokens": n
                    for bucket, n in charged.buckets().items()
                    if bucket not in ("input", "output") and n
                },
                **(
                    {"provider_cost_usd": str(charged.provider_cost_usd)}
                    if charged.provider_cost_usd is not None
                    else {}
                ),
                cost_usd=str(cost),
                hold_usd=str(self.meter.worst_case_usd(report.prompt_tokens)),  # what was authorised
                charged=not unserved,
                failed=usage.failed,
                worst_case=why or "",
                model_calls=self.meter.used("model_calls"),
                **({"outcome": usage.outcome} if usage.outcome else {}),
                **({"format_error": usage.format_error} if usage.format_error else {}),
            )
