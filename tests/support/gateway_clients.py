"""Real clients no one here wrote, called the way agents call them: the official `openai` and
`anthropic` SDKs and litellm, each through the gateway, streaming or not (blocking: run in a thread)."""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm would fetch a price map

CLIENTS = ["openai-chat", "openai-responses", "anthropic", "litellm-openai", "litellm-anthropic"]
PROMPT = [{"role": "user", "content": "Say something."}]


def call(client: str, base: str, token: str, *, stream: bool, max_tokens: int | None = 500) -> str:
    """One call; returns the answer's text. Raises the client's own errors."""
    if client == "openai-chat":
        import openai

        c = openai.OpenAI(base_url=f"{base}/v1", api_key=token, max_retries=2)
        kw: dict[str, Any] = {"max_tokens": max_tokens} if max_tokens else {}
        if not stream:
            return (
                c.chat.completions.create(model="gpt-any", messages=PROMPT, **kw).choices[0].message.content
            )
        chunks = c.chat.completions.create(model="gpt-any", messages=PROMPT, stream=True, **kw)
        return "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    if client == "openai-responses":
        import openai

        c = openai.OpenAI(base_url=f"{base}/v1", api_key=token, max_retries=2)
        kw = {"max_output_tokens": max_tokens} if max_tokens else {}
        if not stream:
            return c.responses.create(model="gpt-any", input="Say something.", **kw).output_text
        with c.responses.stream(model="gpt-any", input="Say something.", **kw) as events:
            return events.get_final_response().output_text
    if client == "anthropic":
        import anthropic

        c = anthropic.Anthropic(base_url=base, api_key=token, max_retries=2)
        if not stream:
            return (
                c.messages.create(model="claude-any", max_tokens=max_tokens or 1000, messages=PROMPT)
                .content[0]
                .text
            )
        with c.messages.stream(model="claude-any", max_tokens=max_tokens or 1000, messages=PROMPT) as s:
            return s.get_final_text()
    import litellm

    provider = client.removeprefix("litellm-")
    api_base = f"{base}/v1" if provider == "openai" else base
    kw = {"max_tokens": max_tokens} if max_tokens else {}
    answer = litellm.completion(
        model=f"{provider}/any",
        messages=PROMPT,
        api_base=api_base,
        api_key=token,
        stream=stream,
        num_retries=0,
        **kw,
    )
    if not stream:
        return answer.choices[0].message.content
    return "".join(ch.choices[0].delta.content or "" for ch in answer if ch.choices)


def rate_limit_errors() -> tuple[type[BaseException], ...]:
    """What each client raises for a refusal: its own rate-limit error."""
    import anthropic
    import litellm
    import openai

    return (openai.RateLimitError, anthropic.RateLimitError, litellm.RateLimitError)
