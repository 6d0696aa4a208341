"""Where the certificates are in a file: a certificate JSON, any file benchtui writes, an agent's log.

Agents print certificates between CERTIFICATE_START and CERTIFICATE_END lines; benchtui then keeps
them inside JSON (a trajectory's message strings, `attempt-N.certificates.json`, the outcome and
results rows), where those lines are escaped and a plain text search cannot find them.
"""

from __future__ import annotations

import json
from typing import Any

from .certificate import find_blocks, parse_block

Found = dict[str, Any] | str
"""A certificate already parsed from JSON, or the raw text of a block (parsed when checked)."""


class NoCertificate(ValueError):
    """The file holds no certificate at all (bad input, unlike a malformed certificate)."""


def blocks_in_messages(messages: list[Any]) -> list[str]:
    """Blocks in what the model wrote and what its commands printed, skipping the system and task
    prompts (messages 0 and 1: the prompt shows an example block)."""
    blocks: list[str] = []
    for message in messages[2:]:
        if not isinstance(message, dict):
            continue
        role, content = message.get("role"), message.get("content")
        if role == "assistant" and isinstance(content, list):
            content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
        extra = message.get("extra")
        raw_output = extra.get("raw_output") if isinstance(extra, dict) else None
        text = raw_output if role in ("tool", "user") else content
        for block in find_blocks(text) if isinstance(text, str) else ():
            if block not in blocks:
                blocks.append(block)
    return blocks


def _is_certificate(value: Any) -> bool:
    """A rule name with an instance: a certificate, perhaps malformed (a results row names a rule alone)."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("rule"), str)
        and (isinstance(value.get("source"), dict) or isinstance(value.get("bundle"), dict))
    )


def _walk(value: Any, found: list[Found]) -> None:
    if _is_certificate(value):
        found.append(value)
    elif isinstance(value, dict):
        if isinstance(value.get("messages"), list):  # a mini-swe-agent trajectory
            found.extend(blocks_in_messages(value["messages"]))
            return
        for item in value.values():
            _walk(item, found)
    elif isinstance(value, list):
        for item in value:
            _walk(item, found)
    elif isinstance(value, str) and "CERTIFICATE_START" in value:
        found.extend(find_blocks(value))


def _json_documents(text: str) -> list[Any] | None:
    """The file as JSON, or as JSON lines (a torn last line is skipped); None when it is neither."""
    try:
        return [json.loads(text)]
    except ValueError:
        pass
    lines = [line for line in text.splitlines() if line.strip()]
    docs = []
    for number, line in enumerate(lines):
        try:
            docs.append(json.loads(line))
        except ValueError:
            if number < len(lines) - 1 or not docs:
                return None
    return docs or None


def certificates_in(text: str) -> list[Found]:
    """Every distinct certificate in `text`; NoCertificate when there is none."""
    docs = _json_documents(text)
    if docs is None:
        found: list[Found] = list(find_blocks(text))
    elif len(docs) == 1 and isinstance(docs[0], dict) and isinstance(docs[0].get("rule"), str):
        found = [docs[0]]  # a certificate file, even a malformed one (it is then rejected)
    else:
        found = []
        for doc in docs:
            _walk(doc, found)
    unique: dict[str, Found] = {}
    for item in found:  # the same certificate as a block and as JSON counts once
        cert = item if isinstance(item, dict) else parse_block(item)[0]
        key = json.dumps(cert, sort_keys=True) if cert is not None else str(item).strip()
        unique.setdefault(key, item)
    if not unique:
        raise NoCertificate("no certificate found (no certificate JSON, no CERTIFICATE_START block)")
    return list(unique.values())
