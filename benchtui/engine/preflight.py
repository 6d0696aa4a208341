"""Preflight checks: the cheap part runs before every start; `benchtui check` (check.py) runs all.

Before any money is spent: the campaign validates, the target exists and is fingerprinted, each
runner profile's tools work and (full check) every task is verifiable. What a runner kind needs
is its own business: the engine asks the kind's optional `preflight` ability and knows nothing
of the target.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

from benchtui.core import inputs, workspace
from benchtui.core.contract import Check, LogicalLimits, ModelSpec, RunnerProfile
from benchtui.core.errors import BadInput, Problems
from benchtui.core.target import TargetKind
from benchtui.engine.campaign import Campaign, ResolvedProfile


def runner_checks(
    runner: ResolvedProfile, *, tasks: list[str] | None, full: bool, target: TargetKind
) -> list[Check]:
    """The checks runner profile `runner` asks for (its kind's `preflight`), then what the
    campaign's `target` needs with the tools that profile gives it (the target's `preflight`)."""
    found = runner.kind.preflight(runner.profile, tasks=tasks, full=full)
    if runner.kind.uses_target and not any(not c.ok for c in found):
        tools = runner.kind.target_tools(runner.profile, type(target))
        found += target.preflight(tools, tasks=tasks, full=full)
    return [c.named(f"runner {runner.name}") for c in found]


def limit_checks(runner: ResolvedProfile, limits: LogicalLimits) -> list[Check]:
    """The logical budget as runner profile `runner` would apply it (its kind's `check_limits`): a
    limit it could not enforce as written (a counted tool its sandbox shows anyway) is refused."""
    if not limits:
        return []
    found = runner.kind.check_limits(runner.profile, limits)
    return [c.named(f"runner {runner.name}") for c in found]


@dataclass(frozen=True, slots=True)
class Start:
    """What a campaign start learnt before writing anything: the target's fingerprint, and the
    notes to show (warnings, limits the runner cannot enforce, a dirty checkout)."""

    fingerprint: str
    notes: list[str]
    programs: dict[str, str] = field(default_factory=dict)
    """The target's programs the active runner gives its sessions, each as `<version>@sha256:<binary>`
    (`{"pred": "pred 0.5.0@sha256:…"}`): recorded in the run's identity and compared on resume and
    by the report (two builds may print one version)."""


HUGE_FILES = 20_000
HUGE_BYTES = 500_000_000
"""A plain-directory target past either is named at start: e.g. `path = "."` beside a venv (~10k
files, 2.4 s to hash, and a copy per session)."""


def at_start(
    campaign: Campaign, runner: ResolvedProfile, target: TargetKind, *, network: bool = True
) -> Start:
    """Every check before a start (BadInput on a problem), in one visit: the active runner's
    (`runner`, its kind resolved) tools and limits, the models' keys and (`network`) their
    `api_base`s, the campaign's warnings, the target's fingerprint."""
    cheap(
        campaign, runner, target, network=network
    )  # e.g. no `pred`, no key: exit 2 before anything is written
    notes = [
        *campaign.warnings(),
        *unenforced(runner, campaign.logical_limits, remote=campaign.executor.remote),
        *runner_notes(runner),
    ]
    size = workspace.HashStats()
    path = campaign.environment.path
    fingerprint = workspace.fingerprint(
        path, campaign.environment.tools, cache=workspace.default_cache(), stats=size
    )
    fingerprint += target_fingerprint(target, runner)
    if size.files > HUGE_FILES or size.bytes > HUGE_BYTES:
        notes.append(
            f"{path} is large ({size.files} files, {size.bytes / 1e6:.0f} MB) and is copied whole into "
            "every session: is environment.path right (a venv or build output inside it)?"
        )
    if "+dirty" in fingerprint.split()[0]:
        notes.append(
            f"{campaign.environment.path} has uncommitted changes: sessions get copies of "
            "its last commit, without them"
        )
    return Start(fingerprint, notes, programs(target, runner))


def programs(target: TargetKind, runner: ResolvedProfile) -> dict[str, str]:
    """What `Start.programs` says: the target's programs as the runner finds them (none for a runner
    whose sessions never use the target, e.g. fake: its sessions would not depend on them)."""
    if not runner.kind.uses_target:
        return {}
    found = runner.kind.target_tools(runner.profile, type(target)).programs
    return {name: workspace.program_version(path) for name, path in sorted(found.items())}


CONNECT_TIMEOUT_S = 3.0
"""A TCP connect that takes longer says the endpoint is unreachable from here."""
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def cheap(campaign: Campaign, runner: ResolvedProfile, target: TargetKind, *, network: bool = True) -> None:
    """The checks run before a campaign starts, before the run dir is written: the target
    exists, the active profile's (`runner`) tools and limits, every model's key variable, and
    (`network`) that every `api_base` accepts a TCP connection. Problems raises every problem
    found, one line each (as `benchtui check` lists them), so a missing `pred`, key or server is
    exit 2 before any session starts, and a newcomer fixes them all in one go, not one per try."""
    models = [m.spec() for m in campaign.models]
    checks = [
        target_check(campaign, target, fingerprint=False),
        *runner_checks(runner, tasks=None, full=False, target=target),
        *limit_checks(runner, campaign.logical_limits),
        *key_checks(models, runner.profile),
        *runner.kind.model_checks(runner.profile, models),
        *(endpoint_checks(models, runner.profile) if network else []),
    ]
    problems = [c for c in checks if not c.ok]
    if problems:
        raise Problems(
            [f"{c.what}: {c.problem}{SKIP_HINT if c.what.startswith('api_base') else ''}" for c in problems]
        )


SKIP_HINT = " (--no-preflight skips this check)"


def key_checks(
    models: Sequence[ModelSpec], profile: RunnerProfile, dotenv: Path = Path(".env")
) -> list[Check]:
    """Every model's key variable is set (in the environment, or in ./.env as the runners read it).
    A .env the runners could not read (a folder, a FIFO, too large) is a problem of its own, now."""
    checks = []
    from_file: dict[str, str] | None = None
    for model in models:
        name = profile.key_variable(model)
        if name is None:
            continue
        if from_file is None:
            where = dotenv.absolute()
            try:
                from_file = inputs.read_dotenv(where)
            except BadInput as exc:
                return [Check(str(where), str(exc).removeprefix(f"{where}: "))]
        value = os.environ.get(name) or from_file.get(name)
        what = f"API key of {model.name}"
        if value:
            checks.append(Check(what, detail=f"{name} is set"))
        else:
            checks.append(Check(what, f"{name} is not set (export it, or put it in ./.env)"))
    return checks


def endpoint_checks(models: Sequence[ModelSpec], profile: RunnerProfile) -> list[Check]:
    """Every distinct `api_base` accepts a TCP connection (cheap: no request, no money)."""
    if not profile.calls_model_api:
        return []
    urls: dict[str, list[str]] = {}
    for model in models:
        if model.api_base:
            urls.setdefault(model.api_base, []).append(model.name)
    if not urls:
        return []
    with ThreadPoolExecutor(max_workers=min(8, len(urls))) as pool:
        found = list(pool.map(reachable, urls))
    return [
        Check(f"api_base {url} ({', '.join(models)})", problem, detail)
        for (url, models), (problem, detail) in zip(urls.items(), found, strict=True)
    ]


def reachable(url: str, timeout: float = CONNECT_TIMEOUT_S) -> tuple[str, str]:
    """("", detail) when `url`'s host accepts a TCP connection, else (problem, "")."""
    try:
        parts = urlsplit(url)
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError as exc:
        return f"not a URL: {exc}", ""
    if not parts.hostname or port is None:
        return "not an http(s) URL with a host", ""
    if _proxied(parts.hostname):
        return "", "not probed: requests go through the proxy in the environment"
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            return "", f"accepts connections on {parts.hostname}:{port}"
    except ConnectionRefusedError:
        return f"connection refused: nothing listens on {parts.hostname}:{port}", ""
    except socket.gaierror:
        return f"host name {parts.hostname!r} does not resolve (DNS)", ""
    except TimeoutError:
        return f"no answer from {parts.hostname}:{port} within {timeout:g} s", ""
    except OSError as exc:
        return f"cannot connect to {parts.hostname}:{port}: {exc.strerror or exc}", ""


def _proxied(host: str) -> bool:
    if not any(os.environ.get(v) for v in PROXY_VARIABLES):
        return False
    bypass = [
        h.strip().lstrip(".")
        for h in (os.environ.get("NO_PROXY") or os.environ.get("no_proxy") or "").split(",")
    ]
    return not any(h == "*" or (h and (host == h or host.endswith("." + h))) for h in bypass)


def unenforced(runner: ResolvedProfile, limits: LogicalLimits, *, remote: bool) -> list[str]:
    """A warning for each logical budget the active runner's kind cannot enforce (its optional
    `enforces` ability lists what it can; the meter enforces `model_calls` for every kind)."""
    if not limits:
        return []
    can = {"model_calls", *runner.kind.enforces}  # on a Ray node too (its tool gate)
    named = [*limits.counters, *(["observation_chars"] if limits.observation_chars else [])]
    missing = [c for c in named if c not in can and not (c.startswith("tools.") and "tools" in can)]
    if not missing:
        return []
    where = " on a Ray cluster" if remote else ""
    return [
        f"runner {runner.name} ({runner.profile.kind}){where} cannot enforce {', '.join(missing)}: those "
        "limits are not applied to its sessions (the same for every model)"
    ]


def runner_notes(runner: ResolvedProfile) -> list[str]:
    """What the active runner's kind says its sessions lack on this machine (its `notes`)."""
    return [
        f"runner {runner.name} ({runner.profile.kind}): {note}" for note in runner.kind.notes(runner.profile)
    ]


def worst_case(campaign: Campaign) -> dict[str, Decimal]:
    """What each model can spend at most: its sessions' full reservations, within its cap."""
    sessions = campaign.per_session_usd * campaign.sessions_per_model_count
    return {m.name: min(sessions, campaign.per_model_usd) for m in campaign.models}


def target_fingerprint(target: TargetKind, runner: ResolvedProfile) -> str:
    """What of the target's verifier is part of the environment (a checker's version), as a
    suffix of the fingerprint ("" for targets with none: old runs' fingerprints stay as they were)."""
    found = target.fingerprint(runner.kind.target_tools(runner.profile, type(target)))
    return f" {found}" if found else ""


def target_check(campaign: Campaign, target: TargetKind, *, fingerprint: bool = True) -> Check:
    """The target checkout is a directory (`fingerprint`: and what its fingerprint is)."""
    path = campaign.environment.path
    if not path.is_dir():
        what = "does not exist" if not path.exists() else "is not a directory"
        return Check(f"environment.path {path}", f"{what}: give {target.checkout}")
    detail = workspace.fingerprint(path, campaign.environment.tools) if fingerprint else "a directory"
    return Check(f"environment.path {path}", detail=detail)
