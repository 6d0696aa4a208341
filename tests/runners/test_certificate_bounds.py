"""What an agent prints as certificates is bounded: parsing is linear, shallow and size-limited.

Each of these used to crash or hang on a hostile agent's output, ending its session as a
retryable error (re-run, and re-paid, on every --resume) or running it to its wall-clock limit.
"""

from __future__ import annotations

import random
import time

from benchtui.targets.problem_reductions.certificate import BLOCK, find_blocks, parse_block


def test_blocks_are_found_in_linear_time():
    for text in ("CERTIFICATE_START\n" * 100_000, "CERTIFICATE_START\n" + "x\n" * 1_000_000):
        started = time.perf_counter()
        assert find_blocks(text) == []
        assert time.perf_counter() - started < 5  # the lazy regex took about half an hour


def test_blocks_are_found_exactly_as_the_block_pattern_finds_them():
    pieces = [
        "CERTIFICATE_START\n",
        "  CERTIFICATE_START \r\n",
        "CERTIFICATE_END\n",
        " CERTIFICATE_END",
        "{}\n",
        "x CERTIFICATE_END\n",
        "CERTIFICATE_START",
        "text\n",
        "\n",
        "CERTIFICATE_END\r\n",
    ]
    rng = random.Random(15)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(12)))
        assert find_blocks(text) == [m.group(1) for m in BLOCK.finditer(text)], repr(text)


def test_deep_or_huge_certificates_are_malformed_not_a_crash():
    assert parse_block("[" * 100_000 + "]" * 100_000) == (None, "nested deeper than 64 levels")
    assert parse_block('{"a": ' * 70 + "1" + "}" * 70)[1] == "nested deeper than 64 levels"
    assert parse_block('{"a": "' + "[{" * 1000 + '"}')[0] == {"a": "[{" * 1000}  # brackets in strings
    assert parse_block('{"a": ' * 60 + "1" + "}" * 60)[0] is not None
    assert parse_block('{"pad": "' + "x" * 1_000_001 + '"}') == (None, "larger than 1,000,000 characters")
    assert parse_block('{"n": ' + "9" * 5000 + "}")[1].startswith("not JSON")  # int digit limit
