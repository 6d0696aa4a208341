"""Certificates as agents hand them over, whatever the target: blocks in their output, JSON lines.

An agent prints a finding between `CERTIFICATE_START` and `CERTIFICATE_END` lines (JSON), writes
it as a JSON line of `certificates.jsonl`, or submits it with `submit FILE`. This is benchtui's
protocol, the same for every target; what a certificate must contain is the target's business
(`TargetKind.certificate_schema`). Parsing is bounded: past the bounds a block is malformed (the
model's outcome, final), never a crash (deep nesting raised RecursionError) or an unbounded message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

START_LINE = re.compile(r"^[ \t]*CERTIFICATE_START[ \t]*\r?\n", re.M)
END_LINE = re.compile(r"^[ \t]*CERTIFICATE_END[ \t]*$", re.M)
FENCE = re.compile(r"^```[\w-]*\s*\n(.*)\n```\s*$", re.S)
MAX_CERTIFICATE_CHARS = 1_000_000
MAX_CERTIFICATE_DEPTH = 64


def find_blocks(text: str) -> list[str]:
    """The raw text of every CERTIFICATE_START … CERTIFICATE_END block (lines of their own).

    Linear time: a lazy regex over the whole text rescans the rest from every START line without
    an END after it (100,000 of them, 1.8 MB, took about half an hour)."""
    blocks, pos = [], 0
    while (start := START_LINE.search(text, pos)) and (end := END_LINE.search(text, start.end())):
        blocks.append(text[start.end() : end.start()])
        pos = end.end()
    return blocks


def parse_block(raw: str) -> tuple[dict[str, Any] | None, str]:
    """(certificate, "") or (None, why it is malformed): a bounded JSON object, fenced or not."""
    body = raw.strip()
    fenced = FENCE.match(body)
    body = fenced.group(1) if fenced else body
    if len(body) > MAX_CERTIFICATE_CHARS:
        return None, f"larger than {MAX_CERTIFICATE_CHARS:,} characters"
    if _nesting(body) > MAX_CERTIFICATE_DEPTH:
        return None, f"nested deeper than {MAX_CERTIFICATE_DEPTH} levels"
    try:
        cert = json.loads(body)
    except (ValueError, RecursionError) as exc:
        return None, f"not JSON: {str(exc)[:200]}"
    if not isinstance(cert, dict):
        return None, "not a JSON object"
    return cert, ""


_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_BRACKETS = re.compile(r"[\[\]{}]")


def _nesting(text: str) -> int:
    """The bracket nesting outside JSON strings, counted up to one past the limit (no recursion)."""
    depth = deepest = 0
    for match in _BRACKETS.finditer(_STRINGS.sub("", text)):
        depth += 1 if match.group() in "[{" else -1
        deepest = max(deepest, depth)
        if deepest > MAX_CERTIFICATE_DEPTH:
            break
    return deepest


def blocks_in_messages(messages: list[Any]) -> list[str]:
    """Blocks in what the model wrote and what its commands printed (a mini-swe-agent trajectory's
    messages), skipping the system and task prompts (messages 0 and 1: the prompt shows an example)."""
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


def identity_key(cert: dict[str, Any]) -> str:
    """One spelling of a certificate, to tell repeats (the same finding printed and submitted)."""
    return json.dumps(cert, sort_keys=True)


# -- certificates in any file benchtui wrote (`benchtui verify FILE`) -----------------------------
Found = dict[str, Any] | str
"""A certificate already parsed from JSON, or the raw text of a block (parsed when checked)."""


class NoCertificate(ValueError):
    """The file holds no certificate at all (bad input, unlike a malformed certificate)."""


def _walk(value: Any, found: list[Found], looks_like: Callable[[Any], bool]) -> None:
    if looks_like(value):
        found.append(value)
    elif isinstance(value, dict):
        if isinstance(value.get("messages"), list):  # a mini-swe-agent trajectory
            found.extend(blocks_in_messages(value["messages"]))
            return
        for item in value.values():
            _walk(item, found, looks_like)
    elif isinstance(value, list):
        for item in value:
            _walk(item, found, looks_like)
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


def certificates_in(text: str, looks_like: Callable[[Any], bool]) -> list[Found]:
    """Every distinct certificate in `text`: a certificate JSON, any file benchtui wrote (a
    trajectory, attempt-N.certificates.json, outcomes, results), or a log with blocks;
    `looks_like` tells a certificate in JSON (the target's shape). NoCertificate when there is none."""
    docs = _json_documents(text)
    if docs is None:
        found: list[Found] = list(find_blocks(text))
    elif len(docs) == 1 and isinstance(docs[0], dict) and isinstance(docs[0].get("rule"), str):
        found = [docs[0]]  # a certificate file, even a malformed one (it is then rejected)
    else:
        found = []
        for doc in docs:
            _walk(doc, found, looks_like)
    unique: dict[str, Found] = {}
    for item in found:  # the same certificate as a block and as JSON counts once
        cert = item if isinstance(item, dict) else parse_block(item)[0]
        key = identity_key(cert) if cert is not None else str(item).strip()
        unique.setdefault(key, item)
    if not unique:
        raise NoCertificate("no certificate found (no certificate JSON, no CERTIFICATE_START block)")
    return list(unique.values())
