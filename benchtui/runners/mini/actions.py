"""The two action formats of the mini-swe-agent runner, and what an answer that holds no usable
action is (its kind names the session's ending when they repeat: core/endings.py).

`tool_call`: each answer calls the `bash` tool (mini-swe-agent's LitellmModel, `mini.yaml`);
`text`: each answer holds exactly one fenced block opened by ```mswea_bash_command (its
LitellmTextbasedModel, for servers that do no tool calling, e.g. vLLM without
`--enable-auto-tool-choice`). Parsing is mini-swe-agent's own (`parse_toolcall_actions`,
`parse_regex_actions` with its text model's pattern), so an answer acts here exactly as it
would there. Imported only in worker processes (mini-swe-agent imports litellm).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from minisweagent.exceptions import FormatError
from minisweagent.models.litellm_textbased_model import LitellmTextbasedModelConfig
from minisweagent.models.utils.actions_text import parse_regex_actions
from minisweagent.models.utils.actions_toolcall import parse_toolcall_actions

ActionFormat = Literal["tool_call", "text"]
UnusableKind = Literal["no_action", "malformed_action", "several_actions", "empty_answer"]

TEXT_ACTION = str(LitellmTextbasedModelConfig.model_fields["action_regex"].default)
"""mini-swe-agent's pattern of one action in a text answer (```mswea_bash_command … ```)."""
ANY_FENCE = re.compile(r"```[A-Za-z_]*\s*\n")


@dataclass(frozen=True, slots=True)
class Unusable:
    """An answer the agent could not act on: its kind and, in a few words, why."""

    kind: UnusableKind
    detail: str


def parse(response: Any, action_format: ActionFormat, error_template: str) -> list[dict[str, Any]]:
    """The answer's actions (each `{"command": …}`); FormatError when it holds none it can run."""
    choice = response.choices[0]
    extra = {"finish_reason": choice.finish_reason, "action_format": action_format}
    if action_format == "text":
        return parse_regex_actions(
            choice.message.content or "",
            action_regex=TEXT_ACTION,
            format_error_template=error_template,
            template_kwargs=extra,
        )
    return parse_toolcall_actions(
        choice.message.tool_calls or [], format_error_template=error_template, template_kwargs=extra
    )


def unusable(response: Any, action_format: ActionFormat, error: FormatError) -> Unusable:
    """What kind of unusable answer raised `error`."""
    choice = response.choices[0]
    message = choice.message
    content = message.content if isinstance(message.content, str) else ""
    calls = message.tool_calls or []
    refusal = getattr(message, "refusal", None)
    if refusal or choice.finish_reason == "content_filter":
        return Unusable(
            "empty_answer", f"the answer was refused ({str(refusal or choice.finish_reason)[:80]})"
        )
    if not content.strip() and not calls:
        return Unusable("empty_answer", "an empty answer")
    cut = " (cut at max_output_tokens)" if choice.finish_reason == "length" else ""
    if action_format == "tool_call":
        if not calls:
            how = "a fenced block in its text" if ANY_FENCE.search(content) else "text only"
            return Unusable("no_action", f"no tool call in the answer: {how}{cut}")
        return Unusable("malformed_action", f"a tool call that cannot be run: {_error_line(error)}")
    found = len(re.findall(TEXT_ACTION, content, re.DOTALL))
    if found > 1:
        return Unusable("several_actions", f"{found} ```mswea_bash_command blocks in one answer")
    how = "a tool call instead" if calls else "text only"
    return Unusable("no_action", f"no ```mswea_bash_command block in the answer: {how}{cut}")


def evidence(found: Unusable | None) -> dict[str, str]:
    """How a generation's evidence record names an answer without a usable action."""
    return {"outcome": "format_error", "format_error": found.kind if found else "no_action"}


def strip_actions(messages: list[dict[str, Any]], action_format: ActionFormat) -> list[dict[str, Any]]:
    """The messages with the commands taken out of a text answer: a certificate counts when the
    model wrote it or a command printed it, never because a command (a heredoc into a file)
    spelled it, as under tool calls, where the command is not in the answer's text."""
    if action_format != "text":
        return messages
    return [
        {**m, "content": re.sub(TEXT_ACTION, "", m["content"], flags=re.DOTALL)}
        if m.get("role") == "assistant" and isinstance(m.get("content"), str)
        else m
        for m in messages
    ]


def _error_line(error: FormatError) -> str:
    extra = error.messages[0].get("extra", {}) if error.messages else {}
    text = str(extra.get("error") or (error.messages[0].get("content", "") if error.messages else ""))
    return text.strip().splitlines()[0][:160] if text.strip() else "unreadable"
