"""API keys: read from the environment or ./.env, handed to a worker in memory, never written.

The pre-warmed worker process starts without any secret-looking variable; each session's worker
gets them over its private socket (so they are not in /proc/<pid>/environ either), gives them to
litellm, and blanks them in the environment of the agent's commands. Whatever the run dir holds
at the end of a session is scrubbed of secret values as a last line of defence.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from benchtui.core import inputs

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.I)
MIN_REDACT = 8  # shorter values would mangle ordinary text and are no real secret anyway
REDACTED = b"[redacted]"


def is_secret(name: str, declared: Iterable[str] = ()) -> bool:
    return name in set(declared) or bool(SECRET_NAME.search(name))


def public_environment(declared: Iterable[str] = ()) -> dict[str, str]:
    """The engine's environment without secrets and without mini-swe-agent settings."""
    declared = set(declared)
    return {k: v for k, v in os.environ.items() if not is_secret(k, declared) and not k.startswith("MSWEA_")}


def collect(declared: Iterable[str] = (), dotenv: Path = Path(".env")) -> dict[str, str]:
    """Secret-looking variables from ./.env (read within bounds: `inputs.read_dotenv`),
    overridden by the process environment."""
    declared = set(declared)
    found = {k: v for k, v in inputs.read_dotenv(dotenv).items() if v and is_secret(k, declared)}
    found.update({k: v for k, v in os.environ.items() if v and is_secret(k, declared)})
    return found


def scrub(text: str, secrets: Iterable[str]) -> str:
    for value in sorted((s for s in secrets if len(s) >= MIN_REDACT), key=len, reverse=True):
        text = text.replace(value, REDACTED.decode())
    return text


def redact(paths: Iterable[Path], secrets: Iterable[str]) -> list[Path]:
    """Replace every secret value in these files; returns the files changed."""
    values = sorted({s.encode() for s in secrets if len(s) >= MIN_REDACT}, key=len, reverse=True)
    changed = []
    for path in paths:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        clean = data
        for value in values:
            clean = clean.replace(value, REDACTED)
        if clean != data:
            path.write_bytes(clean)
            changed.append(path)
    return changed
