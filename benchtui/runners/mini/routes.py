"""Which provider litellm routes each model name to, asked before a campaign starts.

A name no provider routes (`qwen3-8b` for a model behind an OpenAI-compatible server, where
litellm wants `openai/qwen3-8b`) fails every call before it is sent: refused when the campaign
loads instead, one line per model, never a session charged or retried for it. litellm knows
(`litellm.get_llm_provider`), but importing it takes seconds (a minute on a loaded machine) and
the engine's process must not: a name whose prefix is a provider litellm has always had is taken
as it is; only the others are asked, in a child process (`python -m`, run only then).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from benchtui.core.checks import Check
from benchtui.core.contract import ModelSpec
from benchtui.runners.mini.ask import ask_litellm

COMMON_PROVIDERS = frozenset(
    {
        "openai", "anthropic", "gemini", "vertex_ai", "azure", "azure_ai", "bedrock", "openrouter",
        "hosted_vllm", "vllm", "ollama", "ollama_chat", "lm_studio", "llamafile", "deepseek", "groq",
        "mistral", "together_ai", "fireworks_ai", "xai", "cohere", "perplexity", "cerebras",
        "deepinfra", "litellm_proxy", "huggingface", "custom_openai", "text-completion-openai",
    }
)  # fmt: skip
"""Provider prefixes litellm has routed for years: no need to ask it about these."""
HINT = (
    "for an OpenAI-compatible server (llama.cpp, vLLM, a proxy) name it openai/{name} "
    "with its api_base; else use the provider's prefix (anthropic/…, gemini/…)"
)


def _surely_routed(model: ModelSpec) -> bool:
    prefix, slash, _ = model.name.partition("/")
    return bool(slash and prefix in COMMON_PROVIDERS) or bool(model.litellm.get("custom_llm_provider"))


def model_checks(models: Sequence[ModelSpec]) -> list[Check]:
    """A problem for each model litellm routes to no provider; nothing for the others (and
    nothing at all where litellm is not installed: the runner's own preflight says so)."""
    unsure = [m for m in models if not _surely_routed(m)]
    if not unsure:
        return []
    asked = [{"name": m.name, "api_base": m.api_base, "litellm": m.litellm} for m in unsure]
    problems = ask_litellm("benchtui.runners.mini.routes", asked)
    if not isinstance(problems, list):
        return []  # litellm could not be asked: the sessions' own errors will say it
    return [
        Check(f"model {name}", f"litellm routes {name!r} to no provider; {HINT.format(name=name)}")
        for name in problems
        if isinstance(name, str)
    ]


def _unroutable(asked: list[dict[str, Any]]) -> list[str]:
    import litellm

    names = []
    for model in asked:
        try:
            litellm.get_llm_provider(
                model=model["name"],
                api_base=model.get("api_base"),
                custom_llm_provider=(model.get("litellm") or {}).get("custom_llm_provider"),
            )
        except Exception:  # litellm's BadRequestError: "LLM Provider NOT provided"
            names.append(model["name"])
    return names


if __name__ == "__main__":
    print(json.dumps(_unroutable(json.loads(sys.stdin.read()))), flush=True)
