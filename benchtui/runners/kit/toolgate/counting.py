"""A session's logical budget as a runner applies it: the tool gate's life, submits, wording."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from benchtui.core import counters, tempdirs
from benchtui.core.contract import (
    MODEL_CALLS,
    TOOLS,
    Check,
    LogicalLimits,
    Meter,
    SessionOutcome,
    SessionSpec,
)
from benchtui.core.target import Toolbox
from benchtui.runners.kit import bubblewrap
from benchtui.runners.kit import toolgate as gate
from benchtui.runners.kit.evidence import Evidence
from benchtui.runners.kit.toolgate.node import NodeGateSpec
from benchtui.runners.kit.toolgate.remote import NodeTools
from benchtui.runners.kit.toolgate.submit import Submissions
from benchtui.runners.kit.verdict import Verification

if TYPE_CHECKING:
    from benchtui.runners.kit.ray.callback import CallbackListener


def refusal(limits: LogicalLimits, counter: str | None) -> str:
    """What the agent is told when `counter` refused a unit (names the counter and its limit)."""
    if counter is None:
        return ""
    if counter.startswith(TOOLS):
        return gate.refusal(limits, counter)
    what = {"shell_actions": "shell actions", "model_calls": "model calls", "submits": "submits"}
    return (
        f"benchtui: refused: this session's budget of {limits.limit(counter)} "
        f"{what.get(counter, counter)} is spent (counter {counter}); the command was not run"
    )


def describe(limits: LogicalLimits) -> str:
    """The logical budget in words, for the prompt ("" without one)."""
    parts = []
    if limits.model_calls:
        parts.append(f"{limits.model_calls:,} model calls (replies)")
    if limits.shell_actions:
        parts.append(f"{limits.shell_actions:,} shell commands")
    for prefix, calls in limits.tools:
        parts.append(f"{calls:,} `{prefix}` calls")
    if limits.submits:
        parts.append(
            f"{limits.submits:,} certificates verified (check one now with `submit FILE`: it answers "
            "ACCEPTED or REJECTED with the reason; an accepted one ends the session)"
            if not limits.keep_hunting
            else f"{limits.submits:,} certificates verified (check one now with `submit FILE`)"
        )
    if limits.observation_chars:
        parts.append(f"{limits.observation_chars:,} characters of each command's output shown to you")
    return "; ".join(parts)


@dataclass
class Gate:
    """A session's gate while its agent runs: what the sandbox needs (`sandbox`: the shims, the
    shim program, the socket, the interpreter's prefix), the server, the session's submits."""

    sandbox: dict[str, Any] | None = None
    server: gate.ToolGate | None = None
    submissions: Submissions | None = None
    tools: tuple[str, ...] = ()
    """The shimmed names (counted tools' first words, and `submit`)."""
    node: NodeTools | None = None
    """With `open_gate(remote=True)`: the engine's end of a gate on the agent's node."""

    @property
    def ended(self) -> bool:
        """An accepted submit ended the session (the campaign does not keep hunting)."""
        s = self.submissions
        return s is not None and s.accepted.is_set() and not s.limits.keep_hunting


def check_limits(environment: str, toolbox: Toolbox | None, limits: LogicalLimits) -> list[Check]:
    """A counted tool the sandbox shows anyway cannot be counted (the agent would run it directly,
    or copy it): refused when the campaign loads, naming the tool. Unsandboxed, the agent can
    reach anything anyway (`unsandboxed = true` says so)."""
    if environment != "bubblewrap":
        return []
    return [
        Check(f"counted tool {problem.split('`')[1]}", f"{problem}: its counter cannot be enforced there")
        for problem in gate.unhidden(gate.tool_names(limits), toolbox, bubblewrap.visible)
    ]


def budget_line(limits: LogicalLimits, meter: Meter) -> str:
    """`[budget] calls 3/10  actions 5/12  pred 7/24  pred solve 2/10  submits 0/2`: the counters
    the campaign limits, as the meter has them now ("" without any)."""
    if not limits.counters:
        return ""
    return "[budget] " + counters.line(counters.usage({c: meter.used(c) for c in limits.counters}, limits))


@asynccontextmanager
async def open_gate(
    session: SessionSpec | None,
    meter: Meter,
    environment: str,
    toolbox: Toolbox | None,
    *,
    workdir: Path | None = None,
    verification: Verification | None = None,
    evidence: Evidence | None = None,
    tmp_bytes: int | None = None,
    tools_print_budget: bool = True,
    remote: bool = False,
) -> AsyncIterator[Gate]:
    """Serve the session's tool gate while the agent runs: its counted tools and, with `submits`
    limited, `submit FILE`. An empty Gate without either (or without a session: its agent runs
    where the gate cannot be reached). `tools_print_budget`: a gated tool prints the budget line
    after its output (for agent CLIs; the mini runner's observations start with it anyway).
    `remote`: the agent runs on a Ray node, whose gate (`toolgate.node`) asks this one through
    `Gate.node` (nothing is served here; `Gate.tools` are the names the node shims). `verification`:
    how the session's certificates are verified (its target's verifier, the off-task check);
    None, or a target without a verifier: no `submit`."""
    limits = session.limits if session is not None else LogicalLimits()
    names = gate.tool_names(limits)
    if session is None or not (names or limits.submits):
        yield Gate()
        return
    record = evidence.record if evidence is not None else (lambda kind, **fields: None)
    line = partial(budget_line, limits, meter)
    submissions = None
    if limits.submits and verification is not None and verification.target.verifies:
        submissions = Submissions(meter, limits, verification, record=record, budget_line=line)
    shimmed = names + ([gate.SUBMIT] if submissions is not None else [])
    sandboxed = environment == "bubblewrap"
    server = gate.ToolGate(
        meter,
        limits,
        {name: name for name in names} if remote else gate.real_tools(names, toolbox),  # found on the node
        free=limits.free,
        submit=submissions,
        budget_line=line if tools_print_budget else (lambda: ""),
        record=record,
        remote=NodeTools() if remote else None,
    )
    if isinstance(server.remote, NodeTools):
        yield Gate(None, server, submissions, tuple(shimmed), server.remote)
        return
    folder = tempdirs.make("gate")  # short: a unix socket path is <108 bytes
    socket = folder / "gate"
    shims = folder / "shims"  # bound in the sandbox: a host path that names no session
    interpreter, prefix = gate.python()
    await trio.to_thread.run_sync(
        lambda: gate.install(
            shims,
            shimmed,
            interpreter=interpreter,
            shim=gate.SANDBOX_SHIM if sandboxed else str(gate.SHIM),
            gate=gate.SANDBOX_GATE if sandboxed else str(socket),
        )
    )
    copy = workdir or session.session_dir.resolve() / "workdir"
    server.launch = bubblewrap.tool_launch(copy, tmp_bytes) if sandboxed else gate.run_here
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(server.serve, socket)
            yield Gate(
                {
                    "tools": shimmed,
                    "shims": str(shims),
                    "shim": str(gate.SHIM),
                    "socket": str(socket),
                    "prefix": prefix,
                },
                server,
                submissions,
                tuple(shimmed),
            )
            nursery.cancel_scope.cancel()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def until_accepted(opened: Gate, run: Callable[[], Awaitable[str]]) -> str:
    """`run()` (an agent to its end), cut short when a `submit` is accepted (the session ends
    there unless the campaign keeps hunting): then "Accepted"."""
    submissions = opened.submissions
    if submissions is None or submissions.limits.keep_hunting:
        return await run()
    result = "Accepted"
    async with trio.open_nursery() as nursery:

        async def agent() -> None:
            nonlocal result
            result = await run()
            nursery.cancel_scope.cancel()

        async def watch() -> None:
            await submissions.accepted.wait()
            nursery.cancel_scope.cancel()

        nursery.start_soon(agent)
        nursery.start_soon(watch)
    return result


async def serve_node(opened: Gate, stream: trio.abc.Stream) -> None:
    """Serve a node's gate (`open_gate(remote=True)`) on its connection until it ends; tell the
    node when an accepted submit ends the session (it stops the agent there)."""
    assert opened.node is not None and opened.server is not None
    node, submissions = opened.node, opened.submissions
    async with trio.open_nursery() as nursery:
        if submissions is not None and not submissions.limits.keep_hunting:

            async def watch() -> None:
                await submissions.accepted.wait()
                await node.end()

            nursery.start_soon(watch)
        await node.serve(opened.server, stream)
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def on_node(
    opened: Gate,
    listener: CallbackListener,
    *,
    sandboxed: bool,
    toolbox: Toolbox | None,
    tmp_bytes: int | None,
) -> AsyncIterator[NodeGateSpec | None]:
    """What a node needs to serve `opened` (`open_gate(remote=True)`; None: no gate), and, while
    the block runs, this engine's end: the node's gate calls in once with the spec's token."""
    if opened.node is None:
        yield None
        return
    token, arrivals = listener.expect()

    async def serve() -> None:
        arrival = await arrivals.receive()
        try:
            await serve_node(opened, arrival.stream)
        finally:
            arrival.finished.set()

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve)
            yield NodeGateSpec(listener.address, token, opened.tools, sandboxed, toolbox, tmp_bytes)
            nursery.cancel_scope.cancel()
    finally:
        listener.forget(token)


@asynccontextmanager
async def tool_gate(
    session: SessionSpec | None, meter: Meter, environment: str, toolbox: Toolbox | None
) -> AsyncIterator[dict[str, Any] | None]:
    """`open_gate`, for a runner that needs only what its sandbox binds."""
    async with open_gate(session, meter, environment, toolbox) as opened:
        yield opened.sandbox


def submits(
    limits: LogicalLimits, meter: Meter, evidence: Evidence | None = None
) -> Callable[[], Awaitable[str | None]] | None:
    """The verifier's admission: a `submits` unit before each printed certificate is verified
    (after the session; `submit FILE` takes its units itself)."""
    if limits.submits is None:
        return None

    async def admit() -> str | None:
        spent = await meter.use("submits")
        if evidence is not None:
            verdict = "admitted" if spent is None else "refused"
            evidence.record(
                "submit", via="printed block", verdict=verdict, reason="verified after the session"
            )
        return None if spent is None else f"not verified: the session's {limits.submits} submits are spent"

    return admit


def explain(outcome: SessionOutcome, limits: LogicalLimits, meter: Meter) -> SessionOutcome:
    """A session without a certificate that spent its `model_calls` says so first (and, when that
    refusal ended it, ends `step_limit`: its call limit, not its money)."""
    if MODEL_CALLS not in meter.exhausted or outcome.result != "no_certificate":
        return outcome
    why = f"model_calls: the session's {limits.model_calls} model calls are spent"
    if outcome.reason != "budget_exhausted":
        return replace(outcome, reason=f"{why} ({outcome.reason})")
    return replace(outcome, reason=why, ending="step_limit")  # the call limit, not the money
