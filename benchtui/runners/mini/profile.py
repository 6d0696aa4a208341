"""The `[runners.<name>]` table of kind "mini-swe-agent", and its prompt templates (docs/design/invariants.md#f2).

The templates' content hash and mini-swe-agent's version are computed at validation and are
fields of the profile, so they are part of the campaign identity: editing the templates or
upgrading the agent makes `--resume` refuse (sessions would no longer be comparable).
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Mapping
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationInfo, model_validator

from benchtui.core import inputs
from benchtui.core.contract import ModelSpec, RunnerProfile
from benchtui.core.errors import BadInput
from benchtui.core.target import with_brief

DEFAULT_TEMPLATES = Path(__file__).with_name("templates.yaml")
TEMPLATE_KEYS = ("system_template", "instance_template", "observation_template", "format_error_template")
TRIAGE_TEMPLATE = "triage_template"
"""The instance template of a shortlist campaign's triage session (optional in a templates file)."""
GENERIC_BRIEF = {
    "mini.system": "You are a meticulous software tester. You hunt for bugs in the library whose source is\n"
    "your working directory, using its own programs (on your PATH).",
    "mini.task": "{% if task -%}\n## Your task: find a bug in `{{ task }}`\n{%- else -%}\n"
    "## Your task: find a bug in the library\n{%- endif %}\n\n"
    "Read its source and its tests to find a likely weakness, then show it on a tiny input with the\n"
    "library's programs.",
    "mini.certificate": "what the campaign's target asks for (its documentation says).",
    "mini.triage_inputs": "instance_template: the library's source only, its inventory (`rules`)",
    "mini.triage": "## Your task: choose the {{ shortlist_size }} rules most likely to be buggy\n\n"
    "Read the sources (no program of the library is available here), then write the file\n"
    "`shortlist.json` in the working directory: a JSON list of {{ shortlist_size }} objects with the\n"
    "keys `rule` (copied exactly from the list below) and `hypothesis`, most promising first.",
}
"""The templates' wording where the campaign's target has no brief of its own (`TargetKind.brief`)."""


class MiniSweProfile(RunnerProfile):
    path_keys: ClassVar[tuple[str, ...]] = ("templates",)

    kind: Literal["mini-swe-agent"] = "mini-swe-agent"
    """A mini-swe-agent session per (model, task), through litellm."""
    environment: Literal["local", "bubblewrap"] = "bubblewrap"
    """Where the agent's commands run: `bubblewrap` (read-only system, writable session copy, no
    network) or `local` (the plain host: no isolation)."""
    unsandboxed: bool = False
    """Must be `true` with `environment = "local"`: there the agent's commands run as you, on the
    host, and can read the API keys (e.g. from /proc/<benchtui pid>/environ) and your files."""
    step_limit: int = Field(default=40, gt=0)
    """Model calls per session (the same for every model)."""
    action_format: Literal["tool_call", "text"] = "tool_call"
    """How every model gives its actions (part of the identity): `tool_call`, a call of the `bash`
    tool in each answer (its server must do tool calling, e.g. vLLM with
    `--enable-auto-tool-choice`), or `text`, exactly one fenced block opened by
    ```` ```mswea_bash_command ```` in each answer (mini-swe-agent's text-based model), for servers
    that do none. `benchtui check --ping` asks each model for one action in this format."""
    command_timeout_s: int = Field(default=120, gt=0)
    """Wall-clock limit of one agent command."""
    templates: Path | None = None
    """Prompt templates (YAML); default: the bug-hunting templates shipped in benchtui/runners/mini/templates.yaml."""
    programs: dict[str, str] = Field(default_factory=dict)
    """Where the target's programs are, by name (`programs = { tool = "/opt/tool" }`: a name on
    PATH, or a path); a program not named is its name on PATH. The agent has each on its PATH
    under its name, and the verifier uses the same one."""
    verify_timeout_s: float = Field(default=60.0, gt=0)
    """Limit of each call of the verifier's program; a timeout is inconclusive, never a bug."""
    max_certificates: int = Field(default=5, gt=0)
    """Distinct certificates verified per session (the first accepted one counts)."""
    retries: int = Field(default=4, ge=0)
    """Retries of a model call on 429/5xx/timeouts; every attempt is authorised and charged."""
    retry_backoff_s: float = Field(default=2.0, ge=0)
    """First wait before a retry (doubling each time, at most 60 s); a Retry-After header wins."""
    request_timeout_s: float = Field(default=600.0, gt=0)
    """Total deadline of one HTTP attempt to the model (not per read: an answer dripping a byte at a
    time is cut off too); a timed-out attempt is charged its worst case."""
    max_processes: int = Field(default=256, gt=0)
    """Processes the agent's commands may run at once (all of the session's; a pids cgroup where
    benchtui can make one, else counted in /proc). Past it they are killed and the session ends
    (`resource_limit`)."""
    max_disk_mb: int = Field(default=1024, gt=0)
    """Disk the session may write: its copy may grow by this much (a filesystem with this much
    free where one can be mounted, root and loop devices: a write past it gets ENOSPC; else its
    growth is polled), no file may be larger, and bubblewrap's /tmp is this large. Past it the
    session ends (`resource_limit`)."""
    observation_chars: int = Field(default=10_000, gt=0)
    """Output of one command the model sees (head and tail, the cut marked)."""
    command_output_bytes: int = Field(default=2 * 1024 * 1024, gt=0)
    """Output of one command kept in the trajectory (head and tail; the rest is counted, never stored)."""
    trajectory_output_bytes: int = Field(default=32 * 1024 * 1024, gt=0)
    """Output kept in one session's trajectory in all; past it each command keeps what the model saw."""
    wall_time_s: float | None = Field(default=3600.0, gt=0)
    """Wall-clock limit of one session (default 1 h); past it the session ends as `error`."""
    prompt_token_margin: float = Field(default=1.25, ge=1.0)
    """Prompt tokens are counted locally (litellm.token_counter); the worst case authorised before
    a call uses count × margin, as the provider's tokenizer may count more."""
    api_key_env: str | None = None
    """Default for models without `api_key_env`: the environment variable holding the API key."""

    calls_model_api: ClassVar[bool] = True
    program_keys_before: ClassVar[bool] = True
    added_later: ClassVar[dict[str, Any]] = {"action_format": "tool_call"}

    def key_variable(self, model: ModelSpec) -> str | None:
        return model.api_key_env or self.api_key_env

    keep_workdir: bool = False
    """Keep each session's copy of the target after the session (default: delete it)."""
    startup_timeout_s: float = Field(default=120.0, gt=0)
    """How long the pre-warmed worker process may take to import litellm and mini-swe-agent."""
    templates_sha256: str = ""
    """Computed: content hash of the templates (part of the campaign identity)."""
    agent_version: str = ""
    """Computed: the installed mini-swe-agent version (part of the campaign identity)."""

    @model_validator(mode="before")
    @classmethod
    def _computed(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)  # pure: what this machine has installed is checked by preflight
        path = Path(data["templates"]).expanduser().resolve() if data.get("templates") else DEFAULT_TEMPLATES
        if data.get("templates"):
            data["templates"] = path
        brief = (info.context or {}).get("brief", {})  # the campaign's target's (core.registry)
        data["templates_sha256"] = templates_digest(path, brief)
        data["agent_version"] = _agent_version()
        if data.get("environment") == "local" and data.get("unsandboxed") is not True:
            raise ValueError(
                'environment = "local" runs the agent\'s commands on the host, where they can read the '
                "API keys and your files: say so with unsandboxed = true, or use bubblewrap"
            )
        return data

    @property
    def templates_path(self) -> Path:
        return self.templates or DEFAULT_TEMPLATES


def load_templates(path: Path, brief: Mapping[str, str] | None = None) -> dict[str, str]:
    """The template texts, the target's `brief` in them; ValueError with one clear line if the
    file is unusable."""
    import yaml

    try:
        data = yaml.safe_load(_composed(path, brief or {}))
    except BadInput as exc:  # a folder, a FIFO, a huge file
        raise ValueError(f"templates {exc}") from None
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"templates {path}: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ValueError(f"templates {path}: not a YAML mapping")
    missing = [k for k in TEMPLATE_KEYS if not isinstance(data.get(k), str)]
    if missing:
        raise ValueError(f"templates {path}: missing {', '.join(missing)}")
    texts = {k: data[k] for k in TEMPLATE_KEYS}
    if isinstance(data.get(TRIAGE_TEMPLATE), str):  # optional: shortlist campaigns need it
        texts[TRIAGE_TEMPLATE] = data[TRIAGE_TEMPLATE]
    return texts


def _composed(path: Path, brief: Mapping[str, str]) -> str:
    return with_brief(
        inputs.read_text(path, inputs.TEMPLATE_MAX_BYTES, "the templates file"), brief, GENERIC_BRIEF
    )


def templates_digest(path: Path, brief: Mapping[str, str] | None = None) -> str:
    """What the identity holds of the templates: the file's digest as the models get it (the
    brief in it; a file without a `[[brief:…]]` mark, byte for byte)."""
    load_templates(path, brief)
    raw = inputs.read_bytes(path, inputs.TEMPLATE_MAX_BYTES, "the templates file")
    text = _composed(path, brief or {})
    return hashlib.sha256(raw if text == raw.decode(errors="replace") else text.encode()).hexdigest()


RUNNER_PACKAGES = ("minisweagent", "litellm", "openai")


def missing_packages() -> list[str]:
    """The runner's own dependencies (the `mini` extra) that are not installed."""
    return [name for name in RUNNER_PACKAGES if importlib.util.find_spec(name) is None]


@cache
def _agent_version() -> str:
    try:
        return f"mini-swe-agent {version('mini-swe-agent')}"
    except PackageNotFoundError:
        return "mini-swe-agent missing"
