"""PingRunner: one tiny model call per session, metered like any other (`benchtui check --ping`).

It proves a model's key and endpoint before a campaign spends money: the call is authorised at
its worst case by the meter (docs/design/invariants.md#f5), sent in a child process with the same litellm arguments a
session uses (`ping_call.py`: litellm stays out of the engine's process), and charged from the
usage the provider returned at the campaign's prices (docs/design/invariants.md#f6). A timed-out call is charged its worst
case, as a session's would be.
"""

from __future__ import annotations

import json
import sys
from typing import Any, ClassVar, Literal

import trio
from pydantic import Field

from benchtui.core.contract import Meter, RunnerKind, RunnerProfile, SessionOutcome, SessionSpec, Usage
from benchtui.runners.kit import secrets as keys

PROMPT = "Reply with the single word OK."
PROMPT_TOKENS = 64
"""Authorised for the prompt: generous for PROMPT on any tokenizer (about 15 tokens)."""


class PingProfile(RunnerProfile):
    kind: Literal["benchtui.runners.mini.ping:PingRunner"] = "benchtui.runners.mini.ping:PingRunner"
    """One tiny metered call per session (used by `benchtui check --ping`)."""
    request_timeout_s: float = Field(default=60.0, gt=0)
    """Limit of the call; a timed-out call is charged its worst case."""
    api_key_env: str | None = None
    """Default for models without `api_key_env`: the environment variable holding the API key."""


class PingRunner(RunnerKind):
    Profile: ClassVar[type[RunnerProfile]] = PingProfile
    profile: PingProfile

    async def run(self, session: SessionSpec, meter: Meter) -> SessionOutcome:
        m = session.model
        key_name = m.api_key_env or self.profile.api_key_env
        secrets = keys.collect(filter(None, [key_name]))
        if key_name and key_name not in secrets:
            return SessionOutcome("error", reason=f"API key variable {key_name} is not set", infra_error=True)
        if not await meter.authorise(meter.worst_case_usd(PROMPT_TOKENS)):
            return SessionOutcome("error", reason="the ping does not fit the budget", infra_error=True)
        request = {
            "prompt": PROMPT,
            "model": {
                "name": m.name,
                "max_output_tokens": m.max_output_tokens,
                "api_base": m.api_base,
                "litellm": m.litellm,
            },
            "timeout": self.profile.request_timeout_s,
            "api_key": secrets.get(key_name) if key_name else None,
        }
        env = {**keys.public_environment(filter(None, [key_name])), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        with trio.move_on_after(self.profile.request_timeout_s + 60):
            done = await trio.run_process(
                [sys.executable, "-m", "benchtui.runners.mini.ping_call"],
                stdin=json.dumps(request).encode(),
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                env=env,
            )
            try:
                answer = json.loads(done.stdout.decode().strip().splitlines()[-1])
            except (ValueError, IndexError):
                answer = {"error": f"the ping process failed: {done.stderr.decode()[-300:].strip()}"}
            return self._settle(answer, meter, list(secrets.values()), m.max_output_tokens)
        meter.charge(Usage(PROMPT_TOKENS, m.max_output_tokens))
        return SessionOutcome("error", reason="the ping process hung", infra_error=True)

    def _settle(
        self, answer: dict[str, Any], meter: Meter, secrets: list[str], max_tokens: int
    ) -> SessionOutcome:
        if "error" in answer:
            timed_out = bool(answer.get("timeout"))  # the provider may have billed it: the worst case
            meter.charge(Usage(PROMPT_TOKENS, max_tokens) if timed_out else Usage())
            return SessionOutcome("error", reason=keys.scrub(str(answer["error"]), secrets), infra_error=True)
        # No usage reported: the worst case, never under (docs/design/invariants.md#f6).
        if answer.get("input_tokens") is None:
            usage = Usage(PROMPT_TOKENS, max_tokens)
        else:
            usage = Usage(int(answer["input_tokens"]), int(answer["output_tokens"]))
        cost = meter.charge(usage)
        reply = keys.scrub(str(answer.get("reply", "")), secrets)[:40]
        return SessionOutcome(
            "no_certificate",
            reason=f"answered {reply!r}: {usage.input_tokens} + {usage.output_tokens} tokens, ${cost:.6f}",
            steps=1,
        )
