"""The `[runners.<name>]` table of kind "command": any agent CLI, behind the metering gateway.

The prompt file's content hash is computed at validation and is a field of the profile, so it is
part of the campaign identity (docs/design/invariants.md#f2): editing the prompt makes `--resume` refuse.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from benchtui.core.contract import RunnerProfile

DEFAULT_PROMPT = Path(__file__).with_name("prompt.md")
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
    prompt_template: Path | None = None
    """The prompt (text; `{task}` is replaced by the session's task); default: runners/command/prompt.md."""
    pred: str = "pred"
    """The `pred` executable the agent and the verifier use (a name on PATH, or a path)."""
    verify_timeout_s: float = Field(default=60.0, gt=0)
    max_certificates: int = Field(default=5, gt=0)
    """Distinct certificates verified per session (the first accepted one counts)."""
    api_key_env: str | None = None
    """Default for models without `api_key_env`: the variable holding the provider key (the
    gateway's; the agent never sees it)."""
    request_timeout_s: float = Field(default=600.0, gt=0)
    """Limit of one call to the provider; a timed-out call is charged its worst case."""
    keep_workdir: bool = False
    """Keep each session's copy of the target after the session (default: delete it)."""
    prompt_sha256: str = ""
    """Computed: content hash of the prompt (part of the campaign identity)."""

    @model_validator(mode="before")
    @classmethod
    def _computed(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        path = Path(data["prompt_template"]).expanduser().resolve() if data.get("prompt_template") else None
        try:
            data["prompt_sha256"] = hashlib.sha256((path or DEFAULT_PROMPT).read_bytes()).hexdigest()
        except OSError as exc:
            raise ValueError(f"prompt_template {path}: {exc.strerror}") from None
        if path:
            data["prompt_template"] = path
        return data  # pure: the tools this machine has are checked by preflight

    def render_prompt(self, task: str | None) -> str:
        return (self.prompt_template or DEFAULT_PROMPT).read_text().replace("{task}", task or "any rule")

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
