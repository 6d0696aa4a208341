"""The `[runners.<name>]` table of kind "command": any agent CLI, behind the metering gateway.

The prompt file's content hash is computed at validation and is a field of the profile, so it is
part of the campaign identity (docs/design/invariants.md#f2): editing the prompt makes `--resume` refuse.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, SerializerFunctionWrapHandler, ValidationInfo, model_serializer, model_validator

from benchtui.core import inputs
from benchtui.core.contract import ModelSpec, RunnerProfile
from benchtui.core.errors import BadInput
from benchtui.core.target import with_brief

DEFAULT_PROMPT = Path(__file__).with_name("prompt.md")
ADDED_KEYS: dict[str, Any] = {"unsandboxed": False, "max_processes": 256, "max_disk_mb": 1024}
"""Keys added after the first release, left out of a dump at their defaults: the frozen copy and
the identity of a campaign that does not set them stay what they were (its --resume still works)."""
GENERIC_BRIEF = {
    "command.intro": "You hunt for bugs in the library whose source is your working directory, using its own\n"
    "programs (on your PATH).",
    "command.task": "the part of the library named",
    "command.hunt": "Read its source and its tests to find a likely weakness, then show it on a tiny input with\n"
    "the library's programs.",
    "command.certificate": "Its keys are what the campaign's target asks for (its documentation says).",
    "command.any_task": "any part of it",
}
"""The prompt's wording where the campaign's target has no brief of its own (`TargetKind.brief`)."""
PLACEHOLDERS = ("{prompt}", "{prompt_file}", "{task}", "{workdir}", "{gateway}", "{model}")


class CommandProfile(RunnerProfile):
    path_keys: ClassVar[tuple[str, ...]] = ("prompt_template",)

    kind: Literal["command"] = "command"
    """An agent CLI that calls its model API through benchtui's metering gateway."""
    command: list[str] = Field(min_length=1)
    """The agent's command line. Placeholders: {prompt} (the rendered prompt), {prompt_file} (a
    file holding it), {task}, {workdir} (the session's copy of the target), {gateway} (the
    gateway's URL, as the agent sees it), {model} (the campaign model's provider-side name)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment for the agent (never secrets: each session's token is set for you)."""
    environment: Literal["local", "bubblewrap"] = "bubblewrap"
    """`bubblewrap`: read-only system, a writable session copy, no network but the gateway;
    `local`: the plain host (no isolation)."""
    unsandboxed: bool = False
    """Must be `true` with `environment = "local"`: there the agent runs as you, on the host, and
    can read your files, other sessions' tokens and whatever the host holds."""
    prompt_template: Path | None = None
    """The prompt (text; `{task}` is replaced by the session's task); default: benchtui/runners/command/prompt.md."""
    programs: dict[str, str] = Field(default_factory=dict)
    """Where the target's programs are, by name (`programs = { tool = "/opt/tool" }`: a name on
    PATH, or a path); a program not named is its name on PATH. The agent has each on its PATH
    under its name, and the verifier uses the same one."""
    verify_timeout_s: float = Field(default=60.0, gt=0)
    max_certificates: int = Field(default=5, gt=0)
    """Distinct certificates verified per session (the first accepted one counts)."""
    api_key_env: str | None = None
    """Default for models without `api_key_env`: the variable holding the provider key (the
    gateway's; the agent never sees it)."""

    calls_model_api: ClassVar[bool] = True
    program_keys_before: ClassVar[bool] = True

    def key_variable(self, model: ModelSpec) -> str | None:
        return model.api_key_env or self.api_key_env

    request_timeout_s: float = Field(default=600.0, gt=0)
    """Limit of one call to the provider; a timed-out call is charged its worst case."""
    max_processes: int = Field(default=256, gt=0)
    """Processes (and threads) the agent may run at once, its sandbox's included (a pids cgroup
    where one can be made: the kernel refuses more; else counted in /proc). Past it, the session
    ends as the model's outcome (`resource_limit`)."""
    max_disk_mb: int = Field(default=1024, gt=0)
    """Disk the session copy may grow by (and the sandbox's /tmp may hold): the copy is a
    filesystem with this much free where one can be mounted (root, loop devices: a write past it
    gets ENOSPC), else its growth is polled; past it, the session ends (`resource_limit`)."""
    keep_workdir: bool = False
    """Keep each session's copy of the target after the session (default: delete it)."""
    prompt_sha256: str = ""
    """Computed: content hash of the prompt (part of the campaign identity)."""

    @model_validator(mode="before")
    @classmethod
    def _computed(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        path = Path(data["prompt_template"]).expanduser().resolve() if data.get("prompt_template") else None
        brief = (info.context or {}).get("brief", {})  # the campaign's target's (core.registry)
        try:
            data["prompt_sha256"] = prompt_digest(path or DEFAULT_PROMPT, brief)
        except OSError as exc:
            raise ValueError(f"prompt_template {path}: {exc.strerror}") from None
        except BadInput as exc:  # a folder, a FIFO, a huge file
            raise ValueError(f"prompt_template {exc}") from None
        if path:
            data["prompt_template"] = path
        if data.get("environment") == "local" and data.get("unsandboxed") is not True:
            raise ValueError(
                'environment = "local" runs the agent on the host, where it can read your files and '
                "reach other sessions: say so with unsandboxed = true, or use bubblewrap"
            )
        return data  # pure: the tools this machine has are checked by preflight

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for key, default in ADDED_KEYS.items():
            if data.get(key) == default:
                del data[key]
        return data

    def render_prompt(self, task: str | None, brief: Mapping[str, str] | None = None) -> str:
        """The prompt with the target's `brief` in it, `{task}` the session's task."""
        text = compose(_prompt_bytes(self.prompt_template or DEFAULT_PROMPT), brief or {})
        return text.replace(
            "{task}", task or (brief or {}).get("command.any_task", GENERIC_BRIEF["command.any_task"])
        )

    def invocation(self, argv0: Path, values: dict[str, str], token: str) -> tuple[list[str], dict[str, str]]:
        """The agent's argv and environment, placeholders filled (`values["{gateway}"]` is the
        gateway's address as the agent reaches it); the same locally and on a node."""
        url = values["{gateway}"]
        argv = [str(argv0), *(_fill(a, values) for a in self.command[1:])]
        env = {
            "OPENAI_BASE_URL": f"{url}/v1",
            "OPENAI_API_BASE": f"{url}/v1",
            "OPENAI_API_KEY": token,
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": token,
            **{k: _fill(v, values) for k, v in self.env.items()},
        }
        return argv, env


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace(key, value)
    return text


def compose(raw: bytes, brief: Mapping[str, str]) -> str:
    """A prompt file's text with the target's `brief` where it says `[[brief:NAME]]`."""
    return with_brief(raw.decode(errors="replace"), brief, GENERIC_BRIEF)


def prompt_digest(path: Path, brief: Mapping[str, str]) -> str:
    """What the identity holds of the prompt: the file's digest as it is sent (the brief in it;
    a file without a `[[brief:…]]` mark, byte for byte)."""
    raw = _prompt_bytes(path)
    text = compose(raw, brief)
    return hashlib.sha256(raw if text == raw.decode(errors="replace") else text.encode()).hexdigest()


def _prompt_bytes(path: Path) -> bytes:
    return inputs.read_bytes(path, inputs.TEMPLATE_MAX_BYTES, "the prompt template")
