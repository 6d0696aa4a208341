"""The guard of the public board, on the bytes that are written, not only on how they were built.

A public file passes when (1) none of the answer key's field names appears anywhere in it, (2) it
parses as the board's schema, which admits no free text but model names (every other string is a
date, a version, a commit, a kind or a counter, by pattern), (3) with its runs at hand, none of
their rules, tasks, certificate texts, hypotheses or prompt hashes appears in any of its strings,
and (4) a page is exactly what its embedded board renders (a hand edit anywhere is refused).
`benchtui report --public` runs it before writing; `--check-public FILE` runs it on a file.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, get_args

from pydantic import BaseModel, ValidationError

from benchtui.core import inputs
from benchtui.engine.phases import Triage
from benchtui.engine.shortlist import INVENTORY
from benchtui.report.public import Board
from benchtui.report.public_html import embedded, render
from benchtui.report.runs import RecordedRun

FORBIDDEN = (
    "certificate",
    "trajectory",
    "observation",
    "hypothes",
    "prompt",
    "bundle",
    "target_config",
    "claimed_source_solution",
    "verify_details",
    "reject_reason",
    "evidence",
    "instance",
    '"source"',
    '"rule"',
    '"rules"',
)
"""Words of the answer key's fields (lower case), refused anywhere in a public file."""
SUBSTRING_MIN = 8
"""A secret this long or longer is refused inside any string; a shorter one only as a whole string
(a task named `r1` must not refuse every board that mentions `r1` in a model name's version)."""
MAX_SECRETS = 1_000_000


@dataclass(frozen=True, slots=True)
class Secrets:
    """What the runs know that no public file may hold."""

    words: frozenset[str]

    def found_in(self, value: str) -> str | None:
        if value in self.words:
            return value
        return next((w for w in self.words if len(w) >= SUBSTRING_MIN and w in value), None)


def secrets_of(runs: list[RecordedRun]) -> Secrets:
    """Every task and rule the runs name (their tasks, certificates, shortlists, rule inventory),
    every text of their certificates and hypotheses, every prompt hash."""
    words: set[str] = set()
    for run in runs:
        words.update(run.campaign.tasks or [])
        for view in run.sessions:
            words.update(_strings(view.certificate))
            if view.planned.task:
                words.add(view.planned.task)
            if view.prompt_sha256:
                words.update({view.prompt_sha256, view.prompt_sha256[:8], view.prompt_sha256[:12]})
        for triage in run.triages.values():
            if isinstance(triage.phase, Triage):
                for entry in triage.phase.shortlist or ():
                    words.update({entry.rule.strip(), entry.hypothesis.strip()})
                words.update(r.rule.strip() for r in triage.phase.refused if r.rule)
        try:
            inventory = inputs.loads_json(inputs.read_text(run.path / INVENTORY, None, "the rule inventory"))
            words.update(_strings(inventory))
        except (OSError, ValueError):
            pass
    words -= {"", *_vocabulary()}
    return Secrets(frozenset(list(words)[:MAX_SECRETS]))


def _strings(value: Any, *, keys: bool = False) -> Iterator[str]:
    """Every string value in a JSON value (`keys`: its keys too)."""
    if isinstance(value, str):
        yield value.strip()
    elif isinstance(value, dict):
        for key, item in value.items():
            if keys:
                yield str(key)
            yield from _strings(item, keys=keys)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, keys=keys)


def _vocabulary() -> frozenset[str]:
    """The board's own words (its keys and fixed values): a certificate that happens to hold one is
    no secret, and must not keep every board from being published."""
    words: set[str] = set()
    models: list[Any] = [Board]
    while models:
        model = models.pop()
        for name, info in model.model_fields.items():
            words.add(name)
            for arg in _flatten(info.annotation):
                if isinstance(arg, type) and issubclass(arg, BaseModel):
                    models.append(arg)
                elif isinstance(arg, str):
                    words.add(arg)
    return frozenset(words)


def _flatten(annotation: Any) -> Iterator[Any]:
    yield annotation
    for arg in get_args(annotation):
        yield from _flatten(arg)


def check_json(text: str, secrets: Secrets | None = None) -> list[str]:
    """What a public board's JSON holds that it must not (empty: it may be published)."""
    problems = _forbidden(text)
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        return [*problems, f"not a board: not JSON ({exc})"]
    try:
        Board.model_validate(data, strict=False)
    except ValidationError as exc:
        for err in exc.errors()[:3]:
            where = ".".join(str(p) for p in err["loc"])
            problems.append(f"not the board's schema at {where}: {err['msg']}")
    if secrets is not None:
        values = dict.fromkeys(_strings(data, keys=True))
        for value in dict.fromkeys([*values, *(html.unescape(v) for v in values)]):
            word = secrets.found_in(value)
            if word is not None:
                problems.append(
                    f"names what its runs know (a rule, a task or a text of theirs): {word[:80]!r}"
                )
    return problems


def _forbidden(text: str) -> list[str]:
    """The answer key's words in the text as written and as a reader decodes it (JSON escapes,
    HTML entities, each other inside: `\\u0063ertificate`, `&#99;ertificate`, `&amp;#99;…`)."""
    views = decoded(text)
    return [
        f"holds {token!r}: a field of the answer key"
        for token in FORBIDDEN
        if any(token in view for view in views)
    ]


DECODING_ROUNDS = 4
"""Encodings undone one inside the other, at most (an entity of an entity of an escape...)."""
_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


def decoded(text: str) -> list[str]:
    """The text, lower case, and every form of it a reader may see: HTML entities unescaped,
    JSON (and JavaScript) `\\uXXXX` escapes decoded, a JSON document re-written with its strings
    decoded (its keys keep their quotes), each applied to the others' results."""
    seen: dict[str, None] = {text.lower(): None}
    frontier = [text]
    for _ in range(DECODING_ROUNDS):
        found = []
        for view in frontier:
            for form in (html.unescape(view), _unescape_u(view), _json_view(view)):
                if form is not None and form.lower() not in seen:
                    seen[form.lower()] = None
                    found.append(form)
        if not found:
            break
        frontier = found
    return list(seen)


def _unescape_u(text: str) -> str:
    """`\\u0063` -> `c` (a surrogate pair's halves joined; a lone half reads as U+FFFD)."""
    joined = _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)
    return joined.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _json_view(text: str) -> str | None:
    """A JSON document with its strings decoded, written back (None: not JSON)."""
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return None
    return json.dumps(data, ensure_ascii=False)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a board holds")


def check_html(page: str, secrets: Secrets | None = None) -> list[str]:
    """What a public board's page holds that it must not: `check_json` of the board it embeds, the
    answer key's words anywhere in it, and any byte that board does not render."""
    problems = _forbidden(page)
    data = embedded(page)
    if data is None:
        return [*problems, "not a board page: it embeds no board"]
    found = check_json(data, secrets)
    problems += [p for p in found if p not in problems]
    schema_holds = not any(p.startswith(("not a board", "not the board's schema")) for p in found)
    if schema_holds and render(Board.model_validate_json(data)) != page:
        problems.append("the page is not what its embedded board renders (edited by hand?)")
    return problems


def check(text: str, secrets: Secrets | None = None) -> list[str]:
    """A public file, page or JSON."""
    return check_html(text, secrets) if text.lstrip().startswith("<") else check_json(text, secrets)
