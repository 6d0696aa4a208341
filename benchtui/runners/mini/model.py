"""The metered model: mini-swe-agent's LitellmModel with every HTTP attempt authorised and charged.

It takes its actions in the campaign's `action_format` (runners/mini/actions.py): bash tool calls
(`tool_call`, what LitellmModel does) or one fenced ```mswea_bash_command block per answer
(`text`, what mini-swe-agent's LitellmTextbasedModel does, for servers without tool calling);
everything else below is the same for both.

Each attempt of a call: count the prompt (litellm.token_counter × margin), ask the engine to
authorise the worst case (docs/design/invariants.md#f5), send it with `max_tokens` = the campaign's max_output_tokens,
report the usage the provider returned (docs/design/invariants.md#f6). Retries on 429/5xx/timeouts are ours, not litellm's
or mini-swe-agent's, so that each attempt is authorised and charged on its own. An attempt the
provider may have served (and billed) without a usable usage is charged its worst case, with the
reason (see `billing`); one it refused costs nothing. Each attempt has a total deadline
(`request_timeout_s`), not only a per-read one. Waits back off exponentially and honour
Retry-After. Imported only in worker processes (it imports litellm).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import time
from typing import Any

import litellm
import openai
from minisweagent.exceptions import FormatError, InterruptAgentFlow
from minisweagent.models.litellm_model import LitellmModel
from minisweagent.models.utils.actions_toolcall import BASH_TOOL

from benchtui.core.text import inert
from benchtui.runners.kit import observation, throttle
from benchtui.runners.mini import actions as formats
from benchtui.runners.mini import billing
from benchtui.runners.mini.protocol import ParentGone, WorkerChannel

# Ours to set: the worst case authorised assumes exactly max_tokens output tokens.
OVERRIDDEN_KWARGS = ("max_tokens", "max_completion_tokens", "api_key", "num_retries", "max_retries")
RETRY_STATUS = {408, 409, 429}
MAX_WAIT_S = 60.0


class BudgetExhausted(InterruptAgentFlow):
    """The meter refused the next call: the agent loop ends cleanly."""

    def __init__(self) -> None:
        super().__init__(
            {
                "role": "exit",
                "content": "BudgetExhausted",
                "extra": {"exit_status": "BudgetExhausted", "submission": ""},
            }
        )


class Accepted(InterruptAgentFlow):
    """A `submit` was accepted: the session ends (the engine refused the next call for it)."""

    def __init__(self) -> None:
        super().__init__(
            {"role": "exit", "content": "Accepted", "extra": {"exit_status": "Accepted", "submission": ""}}
        )


class MeteredModel(LitellmModel):
    abort_exceptions = [*LitellmModel.abort_exceptions, BudgetExhausted, Accepted, ParentGone]

    def __init__(
        self,
        *,
        channel: WorkerChannel,
        margin: float,
        max_output_tokens: int,
        retries: int,
        backoff_s: float,
        api_key: str | None,
        deadline_s: float,
        observation_chars: int,
        outputs: observation.SavedOutputs | None = None,
        budget_line: bool = False,
        action_format: formats.ActionFormat = "tool_call",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.outputs = outputs
        self.action_format: formats.ActionFormat = action_format
        self.format_error: formats.Unusable | None = None
        """The last answer the agent could not act on (a RepeatedFormatError ends on its kind)."""
        self._parsed: tuple[Any, list[dict[str, Any]] | FormatError] | None = None
        self.budget_line = budget_line
        self.actions = 0
        self.deadline_s = deadline_s
        self.observation_chars = observation_chars
        self.channel = channel
        self.margin = margin
        self.max_output_tokens = max_output_tokens
        self.retries = retries
        self.backoff_s = backoff_s
        self.api_key = api_key  # passed per call, so it is never part of the saved config
        self.calls = 0
        self.prompt_sent = False

    def _query(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        if not self.prompt_sent:  # docs/design/invariants.md#f2: the rendered system + task prompt, hashed
            prompt = "\n\0\n".join(str(m.get("content", "")) for m in messages[:2])
            self.channel.send("prompt", sha256=hashlib.sha256(prompt.encode()).hexdigest(), chars=len(prompt))
            self.prompt_sent = True
        prompt_tokens = math.ceil(
            count_tokens(self.config.model_name, messages, self.action_format) * self.margin
        )
        if self.api_key:
            kwargs["api_key"] = self.api_key
        attempt = 0
        while True:
            if not self.channel.authorise(prompt_tokens):
                raise Accepted() if self.channel.ended == "accepted" else BudgetExhausted()
            billing.OBSERVED.status, billing.OBSERVED.sent = None, False
            try:
                with billing.total_deadline(self.deadline_s) as hit:
                    response = self._send(messages, **kwargs)
                break
            except Exception as exc:
                refused = billing.client_refusal(exc, billing.OBSERVED.sent)
                if refused is not None:  # nothing was sent: nothing to charge, nothing to retry
                    self._charge(prompt_tokens, None, failed=True)
                    exc.client_refused = refused  # type: ignore[attr-defined]  # for the error's wording
                    raise exc from None
                why = billing.failed_attempt_cost(exc, billing.OBSERVED.status, hit[0], billing.OBSERVED.sent)
                throttled = why is None and getattr(exc, "status_code", None) == throttle.TOO_MANY_REQUESTS
                self._charge(prompt_tokens, why, failed=True, throttled=throttled, after=_headers(exc))
                if hit[0] and not isinstance(exc, billing.CallDeadline):
                    exc = billing.CallDeadline(f"{why}: {type(exc).__name__}")
                if attempt >= self.retries or not (hit[0] or retryable(exc)):
                    exc.requests_made = attempt + 1  # type: ignore[attr-defined]  # for the error's wording
                    raise exc from None
                self.channel.send("step", note=f"retrying after {type(exc).__name__}")
                if not throttled:  # a 429's wait is the provider's backoff, which authorise waits out
                    time.sleep(backoff(exc, attempt, self.backoff_s))
                attempt += 1
        parsed = self._parse(response)  # what the answer holds goes with its generation's evidence
        self._parsed = (response, parsed)
        outcome = {"outcome": "action"} if isinstance(parsed, list) else formats.evidence(self.format_error)
        usage = billing.billable_usage(response)
        if isinstance(usage, str):  # served, but its usage cannot be trusted: the worst case
            self._charge(prompt_tokens, usage, outcome=outcome)
        else:
            cost = usage.provider_cost_usd
            self.channel.send(
                "usage",
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_tokens=usage.cache_read_tokens,
                cache_write_tokens=usage.cache_write_tokens,
                reasoning_tokens=usage.reasoning_tokens,
                **({"provider_cost_usd": str(cost)} if cost is not None else {}),
                **outcome,
            )
        self.calls += 1
        command = parsed[0].get("command") if isinstance(parsed, list) and parsed else None
        # What the model sent as its command, as it sent it: a tool call's arguments can hold a
        # number, a list or null (the environment tells the model; the note only names it).
        what = (command if isinstance(command, str) else repr(command)).splitlines()[0] if command else None
        if what is None and self.format_error is not None and not isinstance(parsed, list):
            what = f"format error: {self.format_error.detail}"
        self.channel.send("step", note=f"call {self.calls}: {(what or '(no command)')[:120]}")
        return response

    def _send(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        """One HTTP attempt: with the bash tool (tool_call), or without tools (text)."""
        if self.action_format == "text":
            return litellm.completion(
                model=self.config.model_name, messages=messages, **(self.config.model_kwargs | kwargs)
            )
        return super()._query(messages, **kwargs)

    def _parse(self, response: Any) -> list[dict[str, Any]] | FormatError:
        """The answer's actions, or the format error it is (its kind kept in `format_error`)."""
        try:
            actions = formats.parse(response, self.action_format, self.config.format_error_template)
        except FormatError as error:
            self.format_error = formats.unusable(response, self.action_format, error)
            return error
        return actions

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        """The templates see the campaign's `action_format` (they tell the model how to act)."""
        return {**super().get_template_vars(**kwargs), "action_format": self.action_format}

    def format_observation_messages(
        self,
        message: dict[str, Any],
        outputs: list[dict[str, Any]],
        template_vars: dict[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """Each output as the observation policy shows it (`observation.shape`: at most about
        observation_chars, the full output saved in the session's copy), after the budget line;
        the log keeps what was read. Each action goes to the evidence ledger."""
        actions = message.get("extra", {}).get("actions", [])
        shown, seen = [], []
        for i, output in enumerate(outputs):
            self.actions += 1
            name = f"action-{self.actions}.txt"
            view = observation.shape(
                str(output.get("output", "")), self.observation_chars, self.outputs, name
            )
            seen.append(view)
            why = inert(str(output.get("exception_info") or ""))  # it may quote the command
            shown.append({**output, "output": view.text, "exception_info": why})
            command = actions[i].get("command", "") if i < len(actions) else ""
            self.channel.send(
                "action",
                command=str(command)[:2000],
                exit=output.get("returncode"),
                duration_s=(output.get("extra") or {}).get("duration_s", 0.0),
                raw_bytes=(output.get("extra") or {}).get("raw_bytes", len(str(output.get("output", "")))),
                shown_chars=len(view.text),
                cut=view.cut,
                saved=view.saved,
            )
        messages = super().format_observation_messages(message, shown, template_vars)
        line = self.channel.budget() if self.budget_line else ""
        for observation_message, output in zip(messages, outputs, strict=False):
            observation_message.setdefault("extra", {})["raw_output"] = output.get("output", "")
            if line:
                observation_message["content"] = f"{line}\n{observation_message['content']}"
        return messages

    def _parse_actions(self, response: Any) -> list[dict[str, Any]]:
        """The actions `_query` parsed; a reply the agent cannot act on is an observation too: it
        gets the budget line."""
        parsed = self._parsed[1] if self._parsed is not None and self._parsed[0] is response else None
        if parsed is None:
            parsed = self._parse(response)
        self._parsed = None
        if isinstance(parsed, list):
            return parsed
        line = self.channel.budget() if self.budget_line else ""
        for m in parsed.messages if line else ():
            if isinstance(m.get("content"), str):
                m["content"] = f"{line}\n{m['content']}"
        raise parsed

    def _charge(
        self,
        prompt_tokens: int,
        why: str | None,
        failed: bool = False,
        throttled: bool = False,
        after: Any = None,
        outcome: dict[str, str] | None = None,
    ) -> None:
        """The authorised worst case when the attempt may have been billed (`why`), else nothing;
        a 429 says so, with the wait the provider asked for (`after`: the answer's headers)."""
        if why is None and throttled:
            wait = throttle.retry_after_s(after)
            self.channel.send(
                "usage", input_tokens=0, output_tokens=0, failed=failed, throttled=True, retry_after_s=wait
            )
        elif why is None:
            self.channel.send("usage", input_tokens=0, output_tokens=0, failed=failed)
        else:
            self.channel.send(
                "usage",
                input_tokens=prompt_tokens,
                output_tokens=self.max_output_tokens,
                worst_case=why,
                **(outcome or {}),
            )


def retryable(exc: Exception) -> bool:
    status = getattr(exc, "status_code", None)
    return (
        isinstance(exc, openai.APIConnectionError | billing.CallDeadline)
        or status in RETRY_STATUS
        or (status or 0) >= 500
    )


def _headers(exc: Exception) -> Any:
    return getattr(getattr(exc, "response", None), "headers", None)


def backoff(exc: Exception, attempt: int, base_s: float) -> float:
    """Retry-After (ms, s or a date) when the provider sent one, else base × 2^attempt with jitter."""
    wait = throttle.retry_after_s(_headers(exc))
    if wait is not None and wait <= MAX_WAIT_S:
        return wait
    return min(base_s * float(2**attempt), MAX_WAIT_S) * random.uniform(0.75, 1.25)


def count_tokens(model: str, messages: list[dict[str, Any]], action_format: str = "tool_call") -> int:
    """The prompt's tokens as sent: with the bash tool's definition when the format sends it."""
    tools = [BASH_TOOL] if action_format == "tool_call" else []
    try:
        return int(litellm.token_counter(model=model, messages=messages, tools=tools or None))  # type: ignore[arg-type]
    except Exception:  # no tokenizer for this model: a generous estimate (about 2 characters a token)
        return (len(json.dumps(messages)) + len(json.dumps(tools))) // 2


def model_kwargs(model: dict[str, Any], request_timeout_s: float) -> dict[str, Any]:
    """litellm arguments: the campaign's extras, then what the budget needs (not overridable)."""
    extra = {k: v for k, v in model["litellm"].items() if k not in OVERRIDDEN_KWARGS}
    kwargs = {
        "drop_params": True,
        **extra,
        "max_tokens": model["max_output_tokens"],
        "max_retries": 0,
        "timeout": request_timeout_s,
    }
    if model.get("api_base"):
        kwargs["api_base"] = model["api_base"]
    return kwargs


def root_cause(exc: BaseException) -> str:
    """` (cause: ConnectionRefusedError: …)`: litellm words a refused connection, a DNS failure
    and a reset all as "InternalServerError … Connection error."; the first OSError says which."""
    seen: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and cause not in seen and len(seen) < 20:
        seen.append(cause)
        if isinstance(cause, OSError) and str(cause):
            return f" (cause: {type(cause).__name__}: {str(cause)[:200]})"
        cause = cause.__cause__ or cause.__context__
    return ""
