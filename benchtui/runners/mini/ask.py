"""Ask litellm in a child process: its import takes seconds (a minute on a loaded machine) and the
engine's process must not pay it (nor import litellm at all). The child is `python -m MODULE`,
reading JSON on stdin and printing its answer as the last line of JSON on stdout, with the price
map read offline (`LITELLM_LOCAL_MODEL_COST_MAP=True`: never the network)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.util import find_spec
from typing import Any

ASK_TIMEOUT_S = 300.0
"""Room for the child's litellm import on a loaded machine (27 s measured at a load of 12)."""


def ask_litellm(module: str, question: Any) -> Any | None:
    """The answer of `python -m module` to `question`; None where litellm is not installed or could
    not be asked (a crash, a time-out, no JSON): the caller then goes on as without it."""
    if find_spec("litellm") is None:
        return None
    try:
        done = subprocess.run(
            [sys.executable, "-m", module],
            input=json.dumps(question),
            capture_output=True,
            text=True,
            timeout=ASK_TIMEOUT_S,
            env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
            check=False,
        )
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return None
