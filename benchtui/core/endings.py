"""Why a session ended: a closed set, recorded once (the journal's end line) and shown by name
everywhere (results rows, `ctl status`, the TUI, the report, the audit, `benchtui view`).

The ending is not the result: `result` says what the session produced (bug_found, rejected,
no_certificate, error), the ending says why it stopped. A model that could not act (every answer
without a tool call) and a model that hunted and found nothing both produce `no_certificate`;
their endings (`no_action`, `model_done`) tell them apart.

Each ending belongs to one group, which says how the report counts it:
`hunted` (the session hunted until it found, finished, or met a limit: a trial),
`not_hunting` (the model's doing, final, a trial: counted per model beside the bug rate),
`infrastructure` (not a trial, retried on `--resume`), `stopped` (ended from outside, final) and
`unstated` (a runner that does not say, or a journal line older than the endings).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

Ending = Literal[
    "found",
    "model_done",
    "step_limit",
    "budget_exhausted",
    "wall_time",
    "resource_limit",
    "no_action",
    "malformed_action",
    "several_actions",
    "empty_answer",
    "context_window",
    "agent_failed",
    "provider_error",
    "runner_error",
    "setup_error",
    "interrupted",
    "killed",
    "overspent",
    "unstated",
]
ENDINGS: tuple[Ending, ...] = get_args(Ending)
Group = Literal["hunted", "not_hunting", "infrastructure", "stopped", "unstated"]

#: What each ending means, in the words the report, the TUI's `?` overlay and the docs use.
MEANING: dict[Ending, str] = {
    "found": "found a bug: a submit was accepted, or a certificate it printed was confirmed",
    "model_done": "the model said it was done",
    "step_limit": "the step limit, or the session's model_calls, was reached",
    "budget_exhausted": "the session's money was spent (the next call did not fit)",
    "wall_time": "the wall-clock limit was reached",
    "resource_limit": "a resource limit (processes, disk, output) was reached",
    "no_action": "format errors: answers without an action (no tool call, or no bash block)",
    "malformed_action": "format errors: an action that cannot be read (bad arguments, unknown tool)",
    "several_actions": "format errors: several actions in one answer (the text format takes one)",
    "empty_answer": "empty or refused answers",
    "context_window": "the conversation outgrew the model's context window",
    "agent_failed": "the agent program exited with an error status",
    "provider_error": "the model's API failed after retries",
    "runner_error": "the runner or its worker failed",
    "setup_error": "the session could not be set up (a key, a program, the target copy)",
    "interrupted": "interrupted: the campaign was stopped now, or benchtui stopped",
    "killed": "killed by the user",
    "overspent": "stopped: its charges passed its reservation (the provider ignores max_tokens)",
    "unstated": "the runner did not say (or the run predates endings)",
}

GROUP: dict[Ending, Group] = {
    **dict.fromkeys(
        ("found", "model_done", "step_limit", "budget_exhausted", "wall_time", "resource_limit"), "hunted"
    ),
    **dict.fromkeys(
        (
            "no_action",
            "malformed_action",
            "several_actions",
            "empty_answer",
            "context_window",
            "agent_failed",
        ),
        "not_hunting",
    ),
    **dict.fromkeys(("provider_error", "runner_error", "setup_error", "interrupted"), "infrastructure"),
    **dict.fromkeys(("killed", "overspent"), "stopped"),
    "unstated": "unstated",
}

NOT_HUNTING: tuple[Ending, ...] = tuple(e for e in ENDINGS if GROUP[e] == "not_hunting")
CANNOT_ACT: frozenset[Ending] = frozenset(
    {"no_action", "malformed_action", "several_actions", "empty_answer", "context_window"}
)
"""Endings that, with no action executed, mean the model could not act at all (the audit's
finding, the breaker): the answers never became a command."""

FORMAT_ERRORS: frozenset[Ending] = frozenset(
    {"no_action", "malformed_action", "several_actions", "empty_answer"}
)
"""Endings mini-swe-agent calls a RepeatedFormatError (the kind of the last one)."""


Cause = Literal["server", "template", "model"]
"""What stood in the way of a model that could not act, where the runner could find out:
`server`: the server does not do tool calling (it refused the tools: llama.cpp without --jinja,
vLLM without --enable-auto-tool-choice); `template`: the server does, but the model's chat template
has none (llama.cpp says so in GET /props -> chat_template_caps); `model`: both do (or the text
format needs neither), and the model simply did not act. None: not known (a server that says
nothing of its template)."""
CAUSES: tuple[Cause, ...] = get_args(Cause)

SERVER_WITHOUT_TOOLS = re.compile(
    r"requires --jinja|--enable-auto-tool-choice|tool choice requires|does not support tools"
    r"|tools? (?:is|are) not supported|tool calling is not (?:enabled|supported)",
    re.I,
)
"""What servers say when they refuse a request's tools (llama.cpp: `tools param requires --jinja
flag`; vLLM: `"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser`)."""

SERVER_FIX = (
    "switch tool calling on at its server (llama.cpp: --jinja; vLLM: --enable-auto-tool-choice "
    'with a --tool-call-parser), or set action_format = "text" in the runner profile'
)


def cause_of(
    ending: Ending, action_format: str | None, template_caps: Mapping[str, Any] | None
) -> Cause | None:
    """Why answers carried no action, from what the server said of its chat template (`None`:
    it said nothing). Only `no_action` is told apart: the server accepted the tools (a server
    without tool calling refuses them: SERVER_WITHOUT_TOOLS, before any answer)."""
    if ending != "no_action":
        return None
    if action_format == "text":
        return "model"  # asked for a fenced block in plain text: no tool calling involved
    if template_caps is None or "supports_tool_calls" not in template_caps:
        return None
    return "model" if template_caps.get("supports_tool_calls") else "template"


def fix(ending: Ending, action_format: str | None, cause: Cause | None = None) -> str:
    """What to change when a model's sessions keep ending so (its cause, in a user's words);
    with `cause`, advice for that obstacle only (never a server flag the server already runs with)."""
    if cause == "server":
        return f"its server does not do tool calling: {SERVER_FIX}"
    if ending == "no_action" and cause == "template":
        return (
            "the server does tool calling, but this model's chat template has none (the server's "
            "chat_template_caps: supports_tool_calls false), so no server flag helps: give the server a "
            'template with tool calling (llama.cpp: --chat-template-file), use another model, or set action_format = "text"'
        )
    if ending == "no_action" and cause == "model" and action_format == "text":
        return (
            "asked for one ```mswea_bash_command block, the model wrote none: it does not follow the "
            'format; use a more capable model (or action_format = "tool_call" if its template does tool calling)'
        )
    if ending == "no_action" and cause == "model":
        return (
            "the server and the model's chat template both do tool calling; the model did not call the "
            'tool: use a more capable model, or try action_format = "text"'
        )
    if ending == "no_action" and action_format == "text":
        return (
            "its answers carry no ```mswea_bash_command block: check the model's chat template, or use "
            'action_format = "tool_call" if its server does tool calling'
        )
    if ending == "no_action":
        return (
            "its answers carry no tool call: check that its server does tool calling and the model's chat "
            "template has it (vLLM: --enable-auto-tool-choice with a --tool-call-parser; llama.cpp: "
            'GET /props shows chat_template_caps), or set action_format = "text" in the runner profile '
            "(one fenced bash block per answer)"
        )
    return {
        "malformed_action": "its tool calls cannot be read: check the server's tool-call parser "
        '(vLLM: --tool-call-parser for this model), or use action_format = "text"',
        "several_actions": 'it writes several bash blocks per answer: action_format = "text" takes '
        'exactly one; try action_format = "tool_call"',
        "empty_answer": "its answers are empty or refused: check the model name, its chat template "
        "and the server's content filter, and that max_output_tokens leaves room to answer",
        "context_window": "the prompt does not fit its context window: raise the server's context "
        "length (vLLM: --max-model-len) or use a model with a larger one",
    }.get(ending, MEANING[ending])


CAUSE_WORDS: dict[Cause, str] = {
    "server": "the server does not do tool calling",
    "template": "the model's chat template has no tool calling",
    "model": "the model did not act",
}
"""The obstacle, in the few words the breaker, the ping and the audit put first."""


@dataclass(frozen=True, slots=True)
class SessionEnding:
    """The journal end line's `ending`: why the attempt ended, and the actions it ran."""

    name: Ending
    actions: int | None = None
    """Shell commands the model's answers ran (None: its runner cannot count them)."""
    derived: bool = field(default=False, compare=False)
    """Not on the line: read from an older line's state and reason (never written back)."""
    cause: Cause | None = None
    """What stood in the way, where the runner found out (`Cause`); None: not known."""

    @property
    def could_not_act(self) -> bool:
        """Ended without a single executed action, for a reason that says the model could not act."""
        return self.name in CANNOT_ACT and self.actions == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            **({"actions": self.actions} if self.actions is not None else {}),
            **({"cause": self.cause} if self.cause is not None else {}),
        }

    @classmethod
    def from_json(cls, data: Any) -> SessionEnding | None:
        """The recorded ending; None when absent or not one of the closed set (an edited line)."""
        if not isinstance(data, Mapping) or data.get("name") not in ENDINGS:
            return None
        actions = data.get("actions")
        ok = isinstance(actions, int) and not isinstance(actions, bool) and actions >= 0
        cause = data.get("cause")
        return cls(data["name"], actions if ok else None, cause=cause if cause in CAUSES else None)


#: Reasons older releases wrote for what is now an ending (their end lines carry no `ending`).
_OLD_REASONS: tuple[tuple[str, Ending], ...] = (
    ("interrupted", "interrupted"),
    ("killed: charges exceeded", "overspent"),
    ("killed by the user", "killed"),
    ("wall-clock limit", "wall_time"),
    ("budget_exhausted", "budget_exhausted"),
    ("model_calls:", "step_limit"),
    ("step_limit", "step_limit"),
    ("context_window_exceeded", "context_window"),
    ("resource_limit", "resource_limit"),
    ("submitted without a certificate", "model_done"),
    ("model API failed", "provider_error"),
    ("runner failed", "runner_error"),
    ("runner returned garbage", "runner_error"),
    ("worker failed", "runner_error"),
    ("the worker ended without a report", "runner_error"),
    ("API key variable", "setup_error"),
    ("pred not found", "setup_error"),
    ("cannot verify", "setup_error"),
)


def recorded_or_derived(
    ending: SessionEnding | None, *, state: str, result: str | None, reason: str
) -> SessionEnding | None:
    """An end line's ending: as recorded, or, on a line an older release wrote, what its state,
    result and reason say (`unstated` where they say nothing); None for a session that did not end
    after running (pending, running, skipped)."""
    if ending is not None or state not in ("done", "error", "killed"):
        return ending
    if state == "killed":
        return SessionEnding("killed", derived=True)
    if result == "bug_found":
        return SessionEnding("found", derived=True)
    said: Ending = next((e for words, e in _OLD_REASONS if reason.startswith(words)), "unstated")
    return SessionEnding(said, derived=True)


GROUP_WORDS: dict[Group, str] = {
    "hunted": "it hunted",
    "not_hunting": "it did not hunt",
    "infrastructure": "retried on --resume",
    "stopped": "stopped from outside",
    "unstated": "the runner did not say",
}


def by_group() -> str:
    """The closed set in one line, by group (the TUI's `?` overlay)."""
    return "; ".join(
        f"{', '.join(e for e in ENDINGS if GROUP[e] == group)} ({words})"
        for group, words in GROUP_WORDS.items()
    )
