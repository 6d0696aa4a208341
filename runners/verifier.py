"""The one place runners import the certificate verifier from (it is moving next to its runner)."""

from benchtui.verify import find_blocks, resolve_pred, verify_async

__all__ = ["find_blocks", "resolve_pred", "verify_async"]
