"""The child process of a ping: one litellm call, with the arguments a session would send.

Reads {prompt, model, timeout, api_key, action_format} as JSON on stdin; prints one JSON line:
the usage the provider returned (by bucket: core/usage.py), the reply, and the action it holds in that format (`tool_call`:
the request offers the bash tool; `text`: none) or why it holds none, as a session would parse it
(runners/mini/actions.py); or {"error", "timeout", "status"} (the HTTP status, where one came), or
{"error", "refused": true} when the client refused to send it (nothing left the machine). Run as `python -m`, never imported by the
engine (it imports litellm).
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
    from minisweagent.exceptions import FormatError
    from minisweagent.models.utils.actions_toolcall import BASH_TOOL

    from benchtui.runners.mini import actions, billing
    from benchtui.runners.mini.model import model_kwargs, root_cause

    billing.observe_http()  # did the request leave the client? (a refusal before it is no 5xx)

    kwargs = model_kwargs(request["model"], request["timeout"])
    if request.get("api_key"):
        kwargs["api_key"] = request["api_key"]
    action_format = request.get("action_format", "tool_call")
    if action_format == "tool_call":
        kwargs["tools"] = [BASH_TOOL]
    try:
        response = litellm.completion(
            model=request["model"]["name"],
            messages=[{"role": "user", "content": request["prompt"]}],
            **kwargs,
        )
    except Exception as exc:  # any failure is the answer: one line, the key never in it
        timeout = isinstance(exc, openai.APITimeoutError | litellm.exceptions.Timeout)
        refused = billing.client_refusal(exc, billing.OBSERVED.sent)
        if refused is not None:
            return {"error": refused, "refused": True, "timeout": False}
        said = str(exc).splitlines()[0][:300] if str(exc) else ""
        status = billing.OBSERVED.status
        answer = {"error": f"{type(exc).__name__}: {said}{root_cause(exc)}", "timeout": timeout}
        if status is not None:
            answer["status"] = status
    else:
        usage = billing.billable_usage(response)
        reply = response.choices[0].message.content or ""
        answer = {  # no usage that can be trusted: "usage" says why (the worst case is charged)
            "usage": usage if isinstance(usage, str) else usage.buckets(),
            "reply": reply.strip(),
        }
        try:
            found = actions.parse(response, action_format, "{{ error }}")
            answer["action"] = str(found[0]["command"]) if found else ""
        except FormatError as exc:
            unusable = actions.unusable(response, action_format, exc)
            answer["unusable"] = {"kind": unusable.kind, "detail": unusable.detail}
    return answer


if __name__ == "__main__":
    sys.exit(main())
