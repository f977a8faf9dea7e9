"""What the bridge's /healthz and /readyz answer (served by osprov.runtime.health).

Alive: the election loop made an attempt within the window and, when leading, every watch of the current
term made progress (an event, a bookmark, a completed list or watch request) within the window and none
of their threads died. A dead or stalled watch fails liveness so Kubernetes restarts the bridge (and its
Lease lapses to the standby). A standby is alive and ready; it just does not lead. Ready: alive and, when
leading, every watch has delivered its first list.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from osprov.runtime.health import Report


@dataclass
class WatchState:
    progress_at: float
    listed: bool = False
    died: str | None = None


class BridgeHealth:
    def __init__(self, identity: str, window_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.identity, self.window_s, self.clock = identity, window_s, clock
        self.leading = False
        self.election_at: float | None = None  # the election loop's last attempt (None: not started)
        self.watches: dict[str, WatchState] = {}
        self._lock = threading.Lock()  # watch threads report here

    # ----- reports (election: loop thread; watches: their own threads) ---------------------------
    def election_attempt(self) -> None:
        self.election_at = self.clock()

    def term_started(self, targets: list[str]) -> None:
        with self._lock:
            self.leading = True
            self.watches = {t: WatchState(progress_at=self.clock()) for t in targets}

    def term_ended(self) -> None:
        with self._lock:
            self.leading = False
            self.watches = {}

    def progress(self, target: str, listed: bool = False) -> None:
        with self._lock:
            state = self.watches.get(target)
            if state is not None:  # a fenced term's thread may still report: ignored
                state.progress_at = self.clock()
                state.listed = state.listed or listed

    def died(self, target: str, error: str) -> None:
        with self._lock:
            state = self.watches.get(target)
            if state is not None:
                state.died = error

    # ----- probes --------------------------------------------------------------------------------
    def _problems(self) -> list[str]:
        now = self.clock()
        problems = []
        if self.election_at is not None and now - self.election_at > self.window_s:
            problems.append(f"leader election made no attempt for {now - self.election_at:.0f}s")
        with self._lock:
            for target, w in self.watches.items():
                if w.died is not None:
                    problems.append(f"watch of {target} died: {w.died}")
                elif now - w.progress_at > self.window_s:
                    problems.append(f"watch of {target} made no progress for {now - w.progress_at:.0f}s")
        return problems

    def _details(self, problems: list[str]) -> dict[str, object]:
        return {
            "role": "leader" if self.leading else "standby",
            "identity": self.identity,
            "watches": len(self.watches),
            "problems": problems,
        }

    def live(self) -> Report:
        problems = self._problems()
        return Report(ok=not problems, details=self._details(problems))

    def ready(self) -> Report:
        problems = self._problems()
        with self._lock:
            unlisted = sorted(t for t, w in self.watches.items() if not w.listed)
        if unlisted:
            problems.append(f"first list pending: {', '.join(unlisted)}")
        return Report(ok=not problems, details=self._details(problems))
