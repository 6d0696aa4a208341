"""Independent certificate verification with `pred` (docs/guide/verify.md): re-derive, never trust the claim.

The checks are written once, as a generator that yields `PredCall`s and is sent `PredResult`s,
so the same logic runs synchronously (`benchtui verify CERT.json`) and under Trio (a runner,
cancellable at any call). Every call has a timeout; a timeout is *inconclusive*, never a bug.

A certificate is accepted only when pred itself shows the round trip failing on the certified
instance: the bundle must be what `pred reduce` produces, and then either solving the bundle and
extracting, or extracting the certificate's own (optimal) target configuration, gives a source
solution that is invalid or worse than the source's brute-force optimum. A certificate of a rule
that fails on a valid instance (`RULE_FAILURES`: no bundle) is accepted only when pred solves the
instance on its own and reducing it by that rule panics in the rule's own source file.
"""

from .certificate import (
    BLOCK,
    FENCE,
    KINDS,
    RULE_FAILURES,
    VIOLATIONS,
    Finding,
    PredCall,
    PredResult,
    Value,
    find_blocks,
    parse_block,
    parse_value,
)
from .checks import check
from .drivers import INSTALL_PRED, resolve_pred, verify, verify_async
from .kind import ProblemReductions

__all__ = [
    "BLOCK",
    "FENCE",
    "INSTALL_PRED",
    "KINDS",
    "RULE_FAILURES",
    "VIOLATIONS",
    "PredCall",
    "ProblemReductions",
    "PredResult",
    "Value",
    "Finding",
    "check",
    "find_blocks",
    "parse_block",
    "parse_value",
    "resolve_pred",
    "verify",
    "verify_async",
]
