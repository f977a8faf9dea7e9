"""Waiting on a condition with a deadline — the only way tests synchronise (never a bare sleep)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(check: Callable[[], T | None], what: str, timeout_s: float = 60.0, interval_s: float = 0.2) -> T:
    """Poll `check` until it returns something truthy; fail with `what` and the last value at the deadline."""
    deadline = time.monotonic() + timeout_s
    last: object = None
    while True:
        try:
            last = check()
        except Exception as err:  # a transient read error is just "not yet"
            last = err
        else:
            if last:
                return last  # type: ignore[return-value] # truthy: not None
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}; last: {last!r}")
        time.sleep(interval_s)
