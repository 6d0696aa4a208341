"""The target boundary: what a campaign's target brings, as the engine and the runners use it.

A target kind is the library the agents hunt in, seen from benchtui: the `[target]` table (its
`Profile`), the shape of its certificates, its verifier (a certificate in, a typed `Verdict` out),
whether a certificate is on a session's task, its task and rule inventory, and its preflight.
Runners are handed the target they run against (never import a target's package). A target
declares its programs (`Program`: what the agent calls it, how to get it, how it says its
version); a runner finds them on the machine its sessions run on as one `Toolbox` (the
profile's `programs` table, else the name on PATH), puts each on the agent's PATH and behind the
tool gate, and hands the verifier `TargetTools` (the toolbox's programs, how long a call may
take, a one-shot sandbox). A target's `brief` is the library-specific part of a runner's prompt.

Built-ins (core/registry.py): `problem-reductions` (pred's round trip), `none` (certificates are
recorded unverified) and `command` (the maintainer's own checker, sandboxed). Third-party kinds
register in the `benchtui.targets` entry-point group or are named by a `package.module:Class` path.
"""

from __future__ import annotations

import os
import re
import shutil
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, TypeGuard, get_args

from pydantic import BaseModel, ConfigDict

from benchtui.core.certificates import parse_block
from benchtui.core.checks import Check

Status = Literal["accepted", "rejected", "inconclusive", "unverified"]
Cause = Literal[
    "violation",  # accepted: the target shows the bug (any class: round trip, panic, rejection)
    "no_violation",  # rejected: the claim does not hold on the target
    "wrong_target",  # rejected: the certificate's reduction output is not what the rule produces
    "invalid_instance",  # rejected: the certificate's instance is not a valid one of its problem
    "unknown_rule",  # rejected: the target has no such rule (or the name is ambiguous)
    "wrong_source",  # rejected: the instance is not of the rule's source problem
    "tool_refused",  # rejected: the target's own program refused the input (not the rule)
    "malformed",  # rejected: not a certificate of this target
    "off_task",  # rejected: a bug, but in another rule than the session's task
    "refused",  # rejected: not verified (the session's submits are spent, or it has ended)
    "timeout",  # inconclusive: a call of the verifier ran out of time
    "tool_error",  # inconclusive: the verifier's program failed or answered nothing usable
    "tool_missing",  # inconclusive: the verifier's program is not there (a set-up error)
    "unverified",  # unverified: the target has no verifier
]
CAUSES: tuple[str, ...] = get_args(Cause)
STATUS_OF_CAUSE: dict[str, Status] = {
    "violation": "accepted",
    "timeout": "inconclusive",
    "tool_error": "inconclusive",
    "tool_missing": "inconclusive",
    "unverified": "unverified",
}
"""The status each cause implies (every other cause: rejected)."""
LEGACY_CAUSES: dict[str, Cause] = {"pred_error": "tool_error", "pred_missing": "tool_missing"}
"""Causes as run dirs written before the target contract spell them."""
JudgedBy = Literal["verifier", "runner"]


def is_cause(value: str) -> TypeGuard[Cause]:
    """Whether `value` is one of the closed set of causes."""
    return value in CAUSES


def cause_of(status: str) -> Cause:
    """The cause a status implies when nothing more is known (an old verdict without one)."""
    implied: dict[str, Cause] = {
        "accepted": "violation",
        "inconclusive": "tool_error",
        "unverified": "unverified",
    }
    return implied.get(status, "no_violation")


@dataclass(frozen=True, slots=True)
class Verdict:
    """A verifier's answer on one certificate. `cause` is a closed set; `evidence` is what the
    target recorded to show it (exit statuses, the observed violation, a panic line…)."""

    status: Status
    reason: str
    cause: Cause
    verifier: str = ""
    """Who verified: the target's verifier (`benchtui.targets.problem_reductions (pred round
    trip)`), or a runner's own word when `judged_by` is `runner` (a claim)."""
    judged_by: JudgedBy = "verifier"
    found_by: str = ""
    """The route that showed the bug (`reduce-solve-extract`, `target_config`, `panic`, …)."""
    evidence: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.cause not in CAUSES:
            raise ValueError(f"unknown verdict cause {self.cause!r} (causes: {', '.join(CAUSES)})")

    @property
    def accepted(self) -> bool:
        return self.status == "accepted"

    @classmethod
    def of(cls, cause: Cause, reason: str, **kw: Any) -> Verdict:
        """A verdict whose status follows from its cause."""
        return cls(STATUS_OF_CAUSE.get(cause, "rejected"), reason, cause, **kw)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "verifier": self.verifier,
            "judged_by": self.judged_by,
            "status": self.status,
            "reason": self.reason,
            "cause": self.cause,
        }
        if self.found_by:
            out["found_by"] = self.found_by
        out["details"] = dict(self.evidence)
        return out

    @classmethod
    def from_json(cls, data: Any) -> Verdict:
        """The one decoder of stored verdicts, this version's and older ones (whose cause sat in
        `details`, spelled `pred_error`/`pred_missing`, or was missing; a fake runner's claim had no
        status); never raises."""
        if not isinstance(data, Mapping):
            return cls("rejected", "unreadable verdict", "malformed")
        found = data.get("details")
        details: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        # No status: the fake runner's claims before the typed verdict ({"verifier": "none: fake
        # runner"}): nobody verified them (what they claimed is the session's result).
        status: Status = (
            data["status"]
            if data.get("status") in get_args(Status)
            else ("rejected" if "status" in data else "unverified")
        )
        raw = str(data.get("cause", details.get("cause")))
        named = LEGACY_CAUSES.get(raw, raw)
        cause: Cause = named if is_cause(named) else cause_of(status)
        verifier = str(data.get("verifier") or "")
        judged: JudgedBy = (
            data["judged_by"]
            if data.get("judged_by") in ("verifier", "runner")
            # before `judged_by`: pred's verifier named itself so
            else ("verifier" if "pred round trip" in verifier else "runner")
        )
        return cls(
            status,
            str(data.get("reason") or ""),
            cause,
            verifier=verifier,
            judged_by=judged,
            found_by=str(data.get("found_by") or details.get("found_by") or ""),
            evidence={k: v for k, v in details.items() if k not in ("cause", "found_by")},
        )


def malformed(problem: str) -> Verdict:
    """The verdict on what is not a certificate at all (the model's output, final)."""
    return Verdict("rejected", f"malformed certificate: {problem}", "malformed")


# -- what the machine gives a target's verifier ----------------------------------------------------
@dataclass(frozen=True, slots=True)
class Ran:
    """A program run in a sandbox, bounded: its exit status (None: killed), its output (cut at the
    bound), and why it was stopped if it was (`timeout`, `output`, `processes`, `memory`)."""

    returncode: int | None
    stdout: bytes = b""
    stderr: bytes = b""
    stopped: str = ""


class Sandbox(Protocol):
    """A one-shot sandbox for a target's own programs (the tool gate's: a read-only system, no
    network, a private /tmp), bounded in time, memory, processes and output."""

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        readable: Sequence[Path],
        stdin: bytes,
        timeout_s: float,
        output_bytes: int,
        memory_bytes: int,
        max_processes: int,
    ) -> Ran:
        """Run `argv` in `cwd` with only `readable` (and the system) visible, read-only."""
        ...


@dataclass(frozen=True, slots=True)
class Program:
    """One program a target's sessions and its verifier use, as the target declares it."""

    name: str
    """What the agent and the verifier call it: on the agent's PATH under this name."""
    install: str = ""
    """How to get it, for the messages that find it missing."""
    version: tuple[str, ...] = ("--version",)
    """Arguments that make it print its version (a sandbox's preflight runs it so)."""


@dataclass(frozen=True, slots=True)
class Toolbox:
    """A target's programs as a runner found them on the machine its sessions run on: each is put
    on the agent's PATH under its name (behind the tool gate when the campaign counts it) and
    handed to the verifier. What the runners and their kit know of a target's programs."""

    found: Mapping[str, str] = field(default_factory=dict)
    """By name, the absolute path of each program found."""
    missing: Mapping[str, str] = field(default_factory=dict)
    """By name, each program not found, as it was asked for (a name on PATH, or a path)."""
    declared: tuple[Program, ...] = ()
    """What the target declared (how to get each, its version arguments)."""

    @classmethod
    def find(cls, programs: Sequence[Program], where: Mapping[str, str]) -> Toolbox:
        """Each program where `where` puts it (a runner profile's `programs`), else its name on PATH."""
        asked = {p.name: where.get(p.name, p.name) for p in programs}
        located = {name: locate(spelled) for name, spelled in asked.items()}
        return cls(
            {name: path for name, path in located.items() if path},
            {name: asked[name] for name, path in located.items() if not path},
            tuple(programs),
        )

    def path(self, name: str) -> str | None:
        return self.found.get(name)

    @property
    def names(self) -> frozenset[str]:
        """Every program of the target, found or not."""
        return frozenset((*self.found, *self.missing, *(p.name for p in self.declared)))

    @property
    def problem(self) -> str:
        """Why a session cannot start ("" when every program was found): the first one missing."""
        for name, asked in self.missing.items():
            how = next((p.install for p in self.declared if p.name == name and p.install), "install it")
            return f"{name} not found ({asked!r}): {how}, or set the profile's `programs.{name}`"
        return ""

    def first(self) -> tuple[str, str, tuple[str, ...]] | None:
        """(name, path, version arguments) of the first program found, None without any."""
        for program in self.declared:
            if program.name in self.found:
                return program.name, self.found[program.name], program.version
        return None

    def to_json(self) -> dict[str, Any]:
        """What a worker process is sent (and gives back to `from_json`)."""
        return {
            "found": dict(self.found),
            "missing": dict(self.missing),
            "declared": [[p.name, p.install, list(p.version)] for p in self.declared],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Toolbox:
        if not data:
            return cls()
        declared = tuple(Program(n, i, tuple(v)) for n, i, v in data.get("declared", []))
        return cls(dict(data.get("found", {})), dict(data.get("missing", {})), declared)


@dataclass(frozen=True, slots=True)
class TargetTools:
    """What the machine running a session gives its target's verifier."""

    programs: Mapping[str, str] = field(default_factory=dict)
    """The target's programs as found there (`{"pred": "/usr/local/bin/pred"}`); a program not
    found is absent."""
    timeout_s: float = 60.0
    """Of each call of a verifier's program (the runner profile's `verify_timeout_s`)."""
    sandbox: Sandbox | None = None
    """Where a target runs programs of its own (the `command` target's checker)."""
    missing: Mapping[str, str] = field(default_factory=dict)
    """Programs asked for and not found, with how they were asked for (`{"pred": "/opt/pred"}`)."""


BRIEF_MARK = re.compile(r"\[\[brief:([A-Za-z0-9_.-]+)\]\]")
"""Where a prompt takes a part of its target's brief: `[[brief:NAME]]`."""


def with_brief(text: str, brief: Mapping[str, str], defaults: Mapping[str, str] | None = None) -> str:
    """`text` (a prompt, a templates file) with each `[[brief:NAME]]` replaced by the brief's part
    NAME (else `defaults`', else nothing), its lines after the first prefixed as the marker's own
    line is (its indentation, or a comment's `# `): a part is written without them."""

    def part(match: re.Match[str]) -> str:
        found = brief.get(match[1], (defaults or {}).get(match[1], ""))
        line = text[text.rfind("\n", 0, match.start()) + 1 : match.start()]
        prefix = line[: len(line) - len(line.lstrip(" #"))]
        return "\n".join([*found.split("\n")[:1], *(prefix + x if x else x for x in found.split("\n")[1:])])

    return BRIEF_MARK.sub(part, text)


def read_brief(path: Path) -> dict[str, str]:
    """A brief file (TOML: a table per prompt, a string per part) as `{"table.part": text}`."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {f"{table}.{key}": text for table, parts in data.items() for key, text in parts.items()}


def locate(program: str) -> str | None:
    """An executable's absolute path (a name on PATH, or a path), None when there is none."""
    found = shutil.which(program)
    return os.path.abspath(found) if found else None


class TargetProfile(BaseModel):
    """Keys shared by every `[target]` table; each target kind extends it."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    path_keys: ClassVar[tuple[str, ...]] = ()
    """Keys holding file paths; relative ones are resolved against the campaign file's folder."""

    kind: str = "problem-reductions"
    """Registry name of the target (`problem-reductions`, `none`, `command`, an entry point, or
    `pkg.mod:Class`)."""


class TargetKind:
    """The base of every target kind: what it declares, with safe defaults for what it need not.

    A subclass sets `Profile` and overrides what it can do: `verify` (with `verifies = True`),
    `rule_inventory` (with `has_inventory = True`), `on_task`, `preflight`, `certificate_schema`.
    It is constructed once per campaign with its validated profile; every method may be called
    from many sessions at once (keep no per-call state on the instance).
    """

    Profile: ClassVar[type[TargetProfile]] = TargetProfile
    verifies: ClassVar[bool] = False
    """Whether it has a verifier; without one, certificates are recorded unverified (claims)."""
    has_inventory: ClassVar[bool] = False
    """Whether `rule_inventory` gives the rules a shortlist campaign's triage chooses from."""
    programs: ClassVar[tuple[Program | str, ...]] = ()
    """Programs of the target its sessions and its verifier use (a bare name: a `Program` without
    install hint); runners find them as a `Toolbox` (`toolbox`) and put them on the agent's PATH."""
    verifier: ClassVar[str] = ""
    """How its verdicts name their verifier."""
    install: ClassVar[dict[str, str]] = {}
    """How to get each of its programs named bare in `programs`, for the messages that find one
    missing."""
    brief: ClassVar[dict[str, str]] = {}
    """The library-specific parts of a runner's default prompt, by name (runners/command/prompt.md
    and runners/mini/templates.yaml say which they insert where): what the library is, how its
    programs are used, what a certificate holds. Without them a runner's generic wording stands."""
    checkout: ClassVar[str] = "the target checkout"
    """What `environment.path` must be, for the message that finds it missing."""

    def __init__(self, profile: TargetProfile) -> None:
        self.profile = profile

    @classmethod
    def declared(cls) -> tuple[Program, ...]:
        """Its programs, each as a `Program`."""
        return tuple(
            p if isinstance(p, Program) else Program(p, cls.install.get(p, "")) for p in cls.programs
        )

    @classmethod
    def toolbox(cls, where: Mapping[str, str]) -> Toolbox:
        """Its programs as found on this machine: where `where` (a runner profile's `programs`)
        puts each, else its name on PATH."""
        return Toolbox.find(cls.declared(), where)

    # -- certificates ----------------------------------------------------------------------------
    def parse(self, raw: str) -> tuple[dict[str, Any] | None, str]:
        """A certificate from a block an agent printed or submitted, or (None, why it is malformed)."""
        return parse_block(raw)

    @classmethod
    def looks_like(cls, value: Any) -> bool:
        """Whether a JSON value inside a file benchtui wrote is one of its certificates (a results
        row names a rule too: a certificate also carries an instance)."""
        return (
            isinstance(value, dict)
            and isinstance(value.get("rule"), str)
            and "result" not in value
            and any(
                isinstance(v, dict) for k, v in value.items() if k not in ("certificate", "verify_details")
            )
        )

    def rule_of(self, certificate: Mapping[str, Any]) -> str | None:
        """The rule a certificate claims a bug in."""
        rule = certificate.get("rule")
        return rule if isinstance(rule, str) and rule else None

    def on_task(self, certificate: Mapping[str, Any], task: str) -> bool:
        """Whether a certificate is for the session's task (else it is `off_task`)."""
        return self.rule_of(certificate) == task

    def for_task(self, verdict: Verdict, certificate: Mapping[str, Any], task: str | None) -> Verdict:
        """The verifier's verdict as the session's task sees it: an accepted certificate that is
        not on the task (`on_task`) is rejected as `off_task`, saying what it is for."""
        if not (verdict.accepted and task) or self.on_task(certificate, task):
            return verdict
        rule = str(certificate.get("rule"))[:200]
        return Verdict(
            "rejected",
            f"off_task: the certificate is for {rule!r}, not this session's task {task!r} "
            f"(the verifier: {verdict.reason})",
            "off_task",
            verdict.verifier,
            found_by=verdict.found_by,
            evidence={**verdict.evidence, "task": task},
        )

    async def verify(self, certificate: dict[str, Any], tools: TargetTools) -> Verdict:
        """The verdict on one certificate; never raises for any certificate (a crash of the
        verifier on hostile input is the caller's `malformed`). Cancellable at any await."""
        return Verdict(
            "unverified",
            f'unverified: the campaign\'s target has no verifier ([target] kind = "{self.profile.kind}")',
            "unverified",
            verifier=self.verifier,
            judged_by="runner",  # nobody judged it: never counted as verified
        )

    @classmethod
    def certificate_schema(cls) -> dict[str, Any]:
        """The JSON Schema of its certificates (documentation, `benchtui schema`)."""
        return {
            "type": "object",
            "required": ["rule"],
            "properties": {"rule": {"type": "string", "description": "the rule it claims a bug in"}},
        }

    # -- the campaign's tasks and the machine -----------------------------------------------------
    def rule_inventory(self, environment: Path, tools: TargetTools) -> list[str]:
        """The rules a shortlist campaign's triage chooses from (ValueError with the problem)."""
        raise ValueError(f'target kind "{self.profile.kind}" has no rule inventory')

    def preflight(self, tools: TargetTools, *, tasks: list[str] | None, full: bool) -> list[Check]:
        """Checks of what its verifier needs on this machine (`full`: also the slow ones, e.g.
        every task verifiable)."""
        return []

    def fingerprint(self, tools: TargetTools) -> str:
        """What of the target's verifier must not change between sessions (a checker's version):
        part of the environment fingerprint. "" when nothing beyond the checkout."""
        return ""
