"""The scripted OpenAI-compatible server ships with benchtui (`benchtui demo` runs on it)."""

from benchtui.runners.mini.scripted import SUBMIT, Reply, Request, ScriptedLLM, completion, usage_block

__all__ = ["SUBMIT", "Reply", "Request", "ScriptedLLM", "completion", "usage_block"]
