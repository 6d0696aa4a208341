"""Agents as shell scripts behind the command runner: a campaign whose `command` runs a script
(`bash -c`), for attacks no real CLI would try."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tomli_w

from support.mini import PRICES, RULE, make_target

# curl a chat completion through the gateway with a token ($1, default: this session's own).
CALL = """
call() {
  curl -s -m 20 "$OPENAI_BASE_URL/chat/completions" -H "Authorization: Bearer ${1:-$OPENAI_API_KEY}" \\
    -H 'Content-Type: application/json' \\
    -d '{"model": "m", "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]}'
  echo
}
"""


def script_campaign(
    tmp_path: Path,
    api_base: str,
    script: str,
    *,
    models: tuple[str, ...] = ("openai/scripted-a",),
    runner: dict[str, Any] | None = None,
    **top: Any,
) -> Path:
    """A campaign of one session per model whose agent is `bash -c SCRIPT agent MODEL` (`script`
    after the `call` helper)."""
    target = tmp_path / "target" if (tmp_path / "target").exists() else make_target(tmp_path)
    doc = {
        "name": "script",
        "tasks": [RULE],
        "parallelism": len(models),
        "runner": "script",
        "budget": {"total_usd": 1.0},
        **top,
        "runners": {
            "script": {
                "kind": "command",
                "command": ["bash", "-c", CALL + script, "agent", "{model}"],
                "environment": "bubblewrap",
                "wall_time_s": 60,
                "verify_timeout_s": 10,
                **(runner or {}),
            }
        },
        "models": [
            {
                "name": name,
                **PRICES,
                "max_output_tokens": 1000,
                "api_base": api_base,
                "api_key_env": "SCRIPTED_API_KEY",
            }
            for name in models
        ],
        "environment": {"path": str(target), "tools": ["pred"]},
    }
    path = tmp_path / "campaign.toml"
    path.write_text(tomli_w.dumps(doc))
    return path


def agent_log(run_dir: Path, session: str) -> str:
    return (run_dir / "sessions" / session / "attempt-1.agent.log").read_text(errors="replace")
