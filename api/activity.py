"""Typed activity contracts: the one definition both sides of the workflow → activity edge refer to.

An `Activity[In, Out]` names an activity and the types it takes and returns. Workflows run it with
`osprov.workflows.calls.call(ACT, arg)` (mypy checks `arg: In` and the result `Out`); activities implement it
with `@osprov.activities.contract.implements(ACT)` (mypy checks the function is `(In) -> Out`). Workflow code
never imports activity code, so the sandbox stays free of I/O libraries, and a reader (or a tool) finds
both ends from the contract. Pure: the api layer imports nothing from Temporal here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

# Every activity heartbeats each second while it runs (worker/interceptor.py); a step whose worker died is
# retried on another worker after this many seconds without one, not after its start-to-close timeout.
HEARTBEAT_SECONDS = 4.0

In = TypeVar("In")
Out = TypeVar("Out")


@dataclass(frozen=True)
class Activity(Generic[In, Out]):
    name: str  # the activity type Temporal records (never rename: running workflows replay by it)
    input: type[In]
    output: type[Out]  # what the result is decoded as (a generic alias such as list[X] works too)

    def __str__(self) -> str:
        return self.name
