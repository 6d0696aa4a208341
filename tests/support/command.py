"""Helpers for the command runner's end-to-end tests: the shipped agent profiles, a scripted
provider that has any of them run a command and print a certificate, and a campaign around them."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import tomli_w

from benchtui.engine.campaign import shipped
from benchtui.runners.command import sandbox
from benchtui.targets.problem_reductions import find_blocks
from support.mini import PRICES, RULE, make_target
from support.scripted_upstream import Answer, Call

AGENTS_FILE = Path(__file__).resolve().parents[2] / "campaigns" / "agents.toml"
AGENTS = tomllib.loads(AGENTS_FILE.read_text())
# Its profiles name shipped ones (`use = "codex"`): their tables as a campaign gets them.
AGENTS["runners"] = {
    name: shipped.resolve(name, table, AGENTS_FILE.parent) if "use" in table else table
    for name, table in AGENTS["runners"].items()
}
# Which tool each CLI runs shell commands with, and how it names the command.
SHELL_TOOLS = {"exec_command": "cmd", "Bash": "command", "bash": "command", "shell": "command"}
MAKE_CERTIFICATE = (
    "pred create MIS --graph 0-1,1-2 -o source.json && "
    "pred reduce source.json --to MinimumVertexCover --json > bundle.json && "
    'printf \'CERTIFICATE_START\\n{"rule": "' + RULE + '", "violation": "suboptimal_extraction", '
    '"source": %s, "bundle": %s, "target_config": "0,1,0", "note": "vertex 0 is copied"}'
    '\\nCERTIFICATE_END\\n\' "$(cat source.json)" "$(cat bundle.json)"'
)


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def had_tool_result(call: Call) -> bool:
    text = call.text
    return '"function_call_output"' in text or '"tool_result"' in text or '"role": "tool"' in text


def hunt(call: Call, command: str = MAKE_CERTIFICATE) -> Answer:
    """First turn: run `command` with the CLI's shell tool; then print the certificate it made."""
    if not had_tool_result(call):
        tool = next((t for t in call.tool_names if t in SHELL_TOOLS), None)
        assert tool, f"no shell tool among {call.tool_names}"
        arguments = {SHELL_TOOLS[tool]: command}
        if tool == "Bash":
            arguments["description"] = "Make a certificate"
        return Answer(tool=tool, arguments=arguments, input_tokens=3000, output_tokens=80)
    blocks = [b for s in strings(call.body) for b in find_blocks(s)]
    text = f"Found one.\nCERTIFICATE_START\n{blocks[-1]}\nCERTIFICATE_END\n" if blocks else "No luck."
    return Answer(text=text, input_tokens=4000, output_tokens=300)


def agent_available(profile: str) -> bool:
    return sandbox.resolve(AGENTS["runners"][profile]["command"][0]) is not None


def write_campaign(
    tmp_path: Path, api_base: str, profile: str, *, runner: dict[str, Any] | None = None, **top: Any
) -> Path:
    target = tmp_path / "target" if (tmp_path / "target").exists() else make_target(tmp_path)
    doc = {
        "name": f"cli-{profile}",
        "tasks": [RULE],
        "parallelism": 2,
        "runner": profile,
        "budget": {"total_usd": 1.0},
        **top,
        "runners": {profile: {**AGENTS["runners"][profile], "verify_timeout_s": 20, **(runner or {})}},
        "models": [
            {
                "name": "openai/scripted-a",
                **PRICES,
                "max_output_tokens": 1000,
                "api_base": api_base,
                "api_key_env": "SCRIPTED_API_KEY",
            }
        ],  # fmt: skip
        "environment": {"path": str(target), "tools": ["pred"]},
    }
    path = tmp_path / "campaign.toml"
    path.write_text(tomli_w.dumps(doc))
    return path


def dump(path: Path) -> str:
    return json.dumps(json.loads(path.read_text()), indent=1) if path.exists() else "(none)"
