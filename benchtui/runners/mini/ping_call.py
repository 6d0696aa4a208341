"""The child process of a ping: one litellm call, with the arguments a session would send.

Reads {prompt, model, timeout, api_key} as JSON on stdin; prints one JSON line: the usage the
provider returned and the reply, or {"error", "timeout"}. Run as `python -m`, never imported by
the engine (it imports litellm).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any


def main() -> int:
    request = json.loads(sys.stdin.read())
    # mini-swe-agent's import side effects go to a private dir (model_kwargs lives beside
    # MeteredModel), removed when the call is done.
    with tempfile.TemporaryDirectory(prefix="benchtui-ping-") as config:
        os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
        os.environ.setdefault("MSWEA_GLOBAL_CONFIG_DIR", config)
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        answer = _call(request)
    print(json.dumps(answer), flush=True)
    return 0


def _call(request: dict[str, Any]) -> dict[str, Any]:
    import litellm
    import openai

    from benchtui.runners.mini.model import model_kwargs

    kwargs = model_kwargs(request["model"], request["timeout"])
    if request.get("api_key"):
        kwargs["api_key"] = request["api_key"]
    try:
        response = litellm.completion(
            model=request["model"]["name"],
            messages=[{"role": "user", "content": request["prompt"]}],
            **kwargs,
        )
    except Exception as exc:  # any failure is the answer: one line, the key never in it
        timeout = isinstance(exc, openai.APITimeoutError | litellm.exceptions.Timeout)
        answer = {
            "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}",
            "timeout": timeout,
        }
    else:
        usage = getattr(response, "usage", None)
        reply = response.choices[0].message.content or ""
        answer = {
            "input_tokens": getattr(usage, "prompt_tokens", None),  # None: unknown
            "output_tokens": getattr(usage, "completion_tokens", None) or 0,
            "reply": reply.strip(),
        }
    return answer


if __name__ == "__main__":
    sys.exit(main())
