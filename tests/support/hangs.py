"""Not a test file of the suite (`test_hang_guard` runs it on its own): a test that hangs."""

import time


def test_hangs():
    time.sleep(60)
