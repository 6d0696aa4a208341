"""How long a provider's 429 (too many requests) asks its clients to wait.

Both runners that call providers read it (the mini-swe-agent worker from litellm's exception,
the gateway from the upstream answer) and hand it to the meter (`Meter.throttled`), whose
provider-wide backoff every session of that provider then waits out.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime

TOO_MANY_REQUESTS = 429


def retry_after_s(headers: Mapping[str, str] | None, *, now: float | None = None) -> float | None:
    """The wait a response's headers ask for, in seconds: `retry-after-ms` (OpenAI's), else
    `retry-after` as seconds or as an HTTP date; None when there is none or it is unreadable."""
    if not headers:
        return None
    found = {k.lower(): v for k, v in headers.items()}
    for key, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = found.get(key)
        if value is None:
            continue
        seconds: float | None
        try:
            seconds = float(value) * scale
        except (TypeError, ValueError):
            seconds = _date(str(value), now)
        if seconds is not None and math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None


def _date(value: str, now: float | None) -> float | None:
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP date is GMT
        return None
    return max(when.timestamp() - (time.time() if now is None else now), 0.0)
