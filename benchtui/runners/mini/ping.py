"""PingRunner: one tiny model call per session, metered like any other (`benchtui check --ping`).

It proves a model's key and endpoint, and that it can act, before a campaign spends money: the
call asks for one action in the campaign's `action_format` (a bash tool call, or one
```mswea_bash_command block) and is parsed as a session's answer would be; an answer without
one names the fix (core/endings.py), and one longer than `max_tokens` says the server ignores it.
The call is authorised at its worst case by the meter (docs/design/invariants.md#f5), sent in a
child process with the same litellm arguments a session uses (`ping_call.py`: litellm stays out
of the engine's process), and charged from the usage the provider returned at the campaign's
prices (docs/design/invariants.md#f6). A timed-out call is charged its worst case, as a
session's would be.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from typing import Any, ClassVar, Literal

import trio
from pydantic import Field

from benchtui.core.contract import Meter, RunnerKind, RunnerProfile, SessionOutcome, SessionSpec, Usage
from benchtui.core.endings import CAUSE_WORDS, FORMAT_ERRORS, SERVER_FIX, SERVER_WITHOUT_TOOLS, Ending, fix
from benchtui.runners.kit import secrets as keys
from benchtui.runners.kit import serverprobe

KEYLESS = "no-key"
"""The key sent to an `api_base` whose model names no `api_key_env` (a server that checks none);
the mini runner's sessions send the same (runners/mini/runner.py)."""
CLIENT_REFUSED = "the client refused to send the call"
"""The words of an error the client raised before sending (engine/breaker.py's kind)."""

PROMPTS = {
    "tool_call": "Run the shell command `echo ok`: call the bash tool once, with that command.",
    "text": "Run the shell command `echo ok`: reply with exactly this block and nothing else:\n"
    "```mswea_bash_command\necho ok\n```",
}
PROMPT_TOKENS = 300
"""Authorised for the prompt: generous for either prompt and the bash tool's definition on any
tokenizer (about 120 tokens with the tool)."""


START_S = 300
"""Room to start the child before its call: importing litellm took 27 s at a load of 12 on 2 cores
(two pings at once then ran past the 60 s this was)."""


class PingProfile(RunnerProfile):
    kind: Literal["benchtui.runners.mini.ping:PingRunner"] = "benchtui.runners.mini.ping:PingRunner"
    """One tiny metered call per session (used by `benchtui check --ping`)."""
    request_timeout_s: float = Field(default=60.0, gt=0)
    """Limit of the call; a timed-out call is charged its worst case."""
    api_key_env: str | None = None
    """Default for models without `api_key_env`: the environment variable holding the API key."""
    action_format: Literal["tool_call", "text"] = "tool_call"
    """The format the campaign's sessions act in: the ping asks for one action in it."""


class PingRunner(RunnerKind):
    Profile: ClassVar[type[RunnerProfile]] = PingProfile
    profile: PingProfile

    async def run(self, session: SessionSpec, meter: Meter) -> SessionOutcome:
        m = session.model
        key_name = m.api_key_env or self.profile.api_key_env
        secrets = keys.collect(filter(None, [key_name]))
        if key_name and key_name not in secrets:
            why = f"API key variable {key_name} is not set"
            return SessionOutcome("error", reason=why, infra_error=True, ending="setup_error")
        if not await meter.authorise(meter.worst_case_usd(PROMPT_TOKENS)):
            why = "the ping does not fit the budget"
            return SessionOutcome("error", reason=why, infra_error=True, ending="budget_exhausted")
        request = {
            "prompt": PROMPTS[self.profile.action_format],
            "action_format": self.profile.action_format,
            "model": {
                "name": m.name,
                "max_output_tokens": m.max_output_tokens,
                "api_base": m.api_base,
                "litellm": m.litellm,
            },
            "timeout": self.profile.request_timeout_s,
            # As a session sends it: a keyless server (api_base, no key variable) gets a placeholder.
            "api_key": secrets.get(key_name) if key_name else (KEYLESS if m.api_base else None),
        }
        env = {**keys.public_environment(filter(None, [key_name])), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        with trio.move_on_after(self.profile.request_timeout_s + START_S):
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
            outcome = self._settle(answer, meter, list(secrets.values()), m.max_output_tokens)
            return await self._name_the_obstacle(outcome, m.api_base)
        meter.charge(Usage(PROMPT_TOKENS, m.max_output_tokens))
        return SessionOutcome(
            "error", reason="the ping process hung", infra_error=True, ending="runner_error"
        )

    async def _name_the_obstacle(self, outcome: SessionOutcome, api_base: str | None) -> SessionOutcome:
        """A ping whose answer carried no action says what stood in the way: the model's chat
        template (the server's /props), or the model (core/endings.py `cause_of`)."""
        if outcome.ending != "no_action":
            return outcome
        action_format = self.profile.action_format
        cause = await serverprobe.obstacle("no_action", action_format, api_base)
        if cause is None:
            return outcome
        head, _, said = outcome.reason.partition(": ")
        said = said.rsplit("; fix: ", 1)[0]
        reason = f"{head} ({CAUSE_WORDS[cause]}): {said}; fix: {fix('no_action', action_format, cause)}"
        return replace(outcome, reason=reason, cause=cause)

    def _settle(
        self, answer: dict[str, Any], meter: Meter, secrets: list[str], max_tokens: int
    ) -> SessionOutcome:
        if "error" in answer:
            timed_out = bool(answer.get("timeout"))  # the provider may have billed it: the worst case
            meter.charge(Usage(PROMPT_TOKENS, max_tokens, worst_case=True) if timed_out else Usage())
            why = keys.scrub(str(answer["error"]), secrets)
            if answer.get("refused"):  # the client's refusal, before anything was sent: not the server
                why = f"{CLIENT_REFUSED} (nothing sent, nothing charged): {why}"
                return SessionOutcome("error", reason=why, infra_error=True, ending="setup_error")
            if SERVER_WITHOUT_TOOLS.search(why):  # it refused the bash tool: no answer to read
                why = f"{CAUSE_WORDS['server']} (it refused the bash tool: {why[:200]}); fix: {SERVER_FIX}"
                return SessionOutcome(
                    "error", reason=why, infra_error=True, ending="provider_error", cause="server"
                )
            return SessionOutcome("error", reason=why, infra_error=True, ending="provider_error")
        # No usage that can be trusted: the worst case, never under (docs/design/invariants.md#f6).
        found = Usage.from_buckets(answer.get("usage"))
        usage = found if isinstance(found, Usage) else Usage(PROMPT_TOKENS, max_tokens, worst_case=True)
        cost = meter.charge(usage)
        cached = f", {usage.cache_read_tokens} of them cached" if usage.cache_read_tokens else ""
        spent = f"{usage.prompt_tokens} + {usage.output_tokens} tokens{cached}, ${cost:.6f}"
        if usage.output_tokens > max_tokens:
            return SessionOutcome(
                "error", reason=f"{ignores_max_tokens(usage.output_tokens, max_tokens)} ({spent})"
            )
        unusable = answer.get("unusable")
        if isinstance(unusable, dict) and unusable.get("kind") in FORMAT_ERRORS:
            kind: Ending = unusable["kind"]
            said = keys.scrub(str(unusable.get("detail", "")), secrets)[:200]
            reply = keys.scrub(str(answer.get("reply", "")), secrets)[:60]
            return SessionOutcome(
                "error",
                reason=f"{WORDS[kind]}: {said} (it said {reply!r}; {spent}); fix: "
                f"{fix(kind, self.profile.action_format)}",
                steps=1,
                ending=kind,
                actions=0,
            )
        action = keys.scrub(str(answer.get("action", "")), secrets)[:60]
        return SessionOutcome(
            "no_certificate",
            reason=f"acts in the {self.profile.action_format} format (asked for `echo ok`, got `{action}`): {spent}",
            steps=1,
            ending="model_done",
            actions=1,
        )


WORDS: dict[str, str] = {
    "no_action": "no action in its answer",
    "malformed_action": "an action that cannot be read",
    "several_actions": "several actions in one answer",
    "empty_answer": "an empty or refused answer",
}
"""The ping's first words for an answer without a usable action (its kind's fix follows)."""


def ignores_max_tokens(output_tokens: int, max_tokens: int) -> str:
    """What to say when a server answered with more tokens than it was allowed."""
    return (
        f"the server ignores max_tokens: it returned {output_tokens} output tokens for max_tokens "
        f"{max_tokens}, so a call can cost more than benchtui authorised and a campaign stops such a "
        "session (overspent); cap the output length at the server (e.g. vLLM's "
        "--override-generation-config '{\"max_new_tokens\": N}'), or use a server that honours max_tokens"
    )
