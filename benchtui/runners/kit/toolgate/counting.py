"""A session's logical budget as a runner applies it: the tool gate's life, submits, wording."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import trio

from benchtui.core.contract import MODEL_CALLS, TOOLS, LogicalLimits, Meter, SessionOutcome, SessionSpec
from benchtui.runners.kit import toolgate as gate


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
        parts.append(f"{limits.submits:,} certificates verified")
    if limits.observation_chars:
        parts.append(f"{limits.observation_chars:,} characters of each command's output shown to you")
    return "; ".join(parts)


@asynccontextmanager
async def tool_gate(
    session: SessionSpec | None, meter: Meter, environment: str, pred: str | None
) -> AsyncIterator[dict[str, Any] | None]:
    """Serve the session's tool gate while the agent runs; yields what the sandbox needs (the
    shims, the shim program, the socket, the interpreter's prefix), None without counted tools
    (or without a session: its agent runs where the gate cannot be reached)."""
    names = gate.tool_names(session.limits) if session is not None else []
    if session is None or not names:
        yield None
        return
    folder = Path(tempfile.mkdtemp(prefix="benchtui-gate-"))  # short: a unix socket path is <108 bytes
    socket = folder / "gate"
    shims = session.session_dir.resolve() / "shims"
    interpreter, prefix = gate.python()
    sandboxed = environment == "bubblewrap"
    await trio.to_thread.run_sync(
        lambda: gate.install(
            shims,
            names,
            interpreter=interpreter,
            shim=gate.SANDBOX_SHIM if sandboxed else str(gate.SHIM),
            gate=gate.SANDBOX_GATE if sandboxed else str(socket),
        )
    )
    server = gate.ToolGate(meter, session.limits, gate.real_tools(names, pred))
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(server.serve, socket)
            yield {
                "tools": names,
                "shims": str(shims),
                "shim": str(gate.SHIM),
                "socket": str(socket),
                "prefix": prefix,
            }
            nursery.cancel_scope.cancel()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(shims, ignore_errors=True)


def submits(limits: LogicalLimits, meter: Meter) -> Callable[[], Awaitable[str | None]] | None:
    """The verifier's admission: a `submits` unit before each certificate is verified."""
    if limits.submits is None:
        return None

    async def admit() -> str | None:
        spent = await meter.use("submits")
        return None if spent is None else f"not verified: the session's {limits.submits} submits are spent"

    return admit


def explain(outcome: SessionOutcome, limits: LogicalLimits, meter: Meter) -> SessionOutcome:
    """A session without a certificate that spent its `model_calls` says so first."""
    if MODEL_CALLS not in meter.exhausted or outcome.result != "no_certificate":
        return outcome
    why = f"model_calls: the session's {limits.model_calls} model calls are spent"
    return replace(
        outcome, reason=why if outcome.reason == "budget_exhausted" else f"{why} ({outcome.reason})"
    )
