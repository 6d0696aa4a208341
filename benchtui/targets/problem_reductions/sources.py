"""Where the certificates are in a file: a certificate JSON, any file benchtui writes, an agent's log.

Agents print certificates between CERTIFICATE_START and CERTIFICATE_END lines; benchtui then keeps
them inside JSON (a trajectory's message strings, `attempt-N.certificates.json`, the outcome and
results rows), where those lines are escaped and a plain text search cannot find them. The walk is
benchtui's (core/certificates.py); what a certificate of this target looks like is `looks_like`.
"""

from __future__ import annotations

from benchtui.core.certificates import Found, NoCertificate, blocks_in_messages
from benchtui.core.certificates import certificates_in as _certificates_in

from .kind import ProblemReductions

__all__ = ["Found", "NoCertificate", "blocks_in_messages", "certificates_in"]


def certificates_in(text: str) -> list[Found]:
    """Every distinct problem-reductions certificate in `text`; NoCertificate when there is none."""
    return _certificates_in(text, ProblemReductions.looks_like)
