"""Kubernetes-native operations on a resource: annotations that pause it or ask for a resync now, the
Events the workflow records about it, and the loop's bookkeeping of both (carried with its state).

Pure pydantic (workflows import it inside Temporal's sandbox). Nothing here holds a secret: an Event's note
is the same user-safe text as the condition's message.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

ANNOTATION_PREFIX = "osprov.osh.openstack.org/"
# "true": the workflow records every change but calls nothing (no cloud call, no finalizer work, no status
# beyond saying Paused); removing it (or any other value) resumes and converges at once.
PAUSED = ANNOTATION_PREFIX + "paused"
# Any value that differs from the last one handled asks for one full pass now (e.g. `date +%s`), like
# Flux's reconcile.fluxcd.io/requestedAt.
RECONCILE_REQUESTED = ANNOTATION_PREFIX + "reconcile-requested-at"
# Approves one change an approval gate holds (workflows/approval.py): the value names the action and the
# generation it belongs to, exactly as the status asks for it (e.g. `rebuild:5`, `delete:7`). A value for
# another action or an older generation approves nothing.
APPROVE = ANNOTATION_PREFIX + "approve"
# Any new value: record the plan of the current spec as an Event (api/plan.py; kept here with the others).
PLAN = ANNOTATION_PREFIX + "plan"
ANNOTATIONS = (PAUSED, RECONCILE_REQUESTED, APPROVE, PLAN)

# The reason of the ready condition while a resource is paused (its status stays what it was).
PAUSED_REASON = "Paused"
# The reason of the ready condition while a destructive step waits for its approval.
AWAITING_APPROVAL_REASON = "AwaitingApproval"
# `osprov approve`: the Temporal Update that approves the change a gate holds (argument: its token).
UPDATE_APPROVE = "approve"


def ours(annotations: dict[str, str] | None) -> dict[str, str]:
    """The osprov annotations of an object (the only ones the bridge signals)."""
    return {k: str(v) for k, v in (annotations or {}).items() if k in ANNOTATIONS}


def is_paused(annotations: dict[str, str]) -> bool:
    return annotations.get(PAUSED, "").strip().lower() == "true"


# --- Events ---------------------------------------------------------------------------------------------

EventType = Literal["Normal", "Warning"]
# What the controller did, as events.k8s.io/v1 `action` (machine-readable, like the reason).
EventAction = Literal["Reconcile", "Delete", "Pause"]
REPORTING_CONTROLLER = "osprov.osh.openstack.org/worker"
NOTE_LIMIT = 1000  # the apiserver refuses notes longer than 1 KiB


class EventNote(BaseModel):
    """One Event as a workflow decides it: about the resource the workflow reconciles."""

    type: EventType = "Normal"
    reason: str  # CamelCase, e.g. Created, ReconcileError, Paused
    action: EventAction = "Reconcile"
    note: str

    @property
    def key(self) -> str:
        """Isomorphic events (client-go: type, reason, action; here with the note too) form one series."""
        return f"{self.type}|{self.reason}|{self.action}|{self.note}"


class SeriesEntry(BaseModel):
    """An Event already in the API, and how often it was seen: a repeat patches it (series.count)."""

    key: str
    name: str
    count: int = 1
    first: datetime
    last: datetime


class RecorderState(BaseModel):
    """Per-object deduplication and rate limit (client-go's recorder, kept in the workflow's state so it
    survives worker restarts and continue-as-new)."""

    last: str | None = None  # key of the event last recorded: the same state twice is not a new event
    tokens: float | None = None  # token bucket (None: full)
    refilled_at: datetime | None = None
    series: list[SeriesEntry] = Field(default_factory=list)  # most recent last, bounded
    made: int = 0  # events created (part of their names)
    dropped: int = 0  # events the rate limit dropped


class PendingApproval(BaseModel):
    """A destructive step an approval gate holds: which action, for which generation, in words."""

    action: str  # rebuild, resize, delete
    generation: int
    what: str  # user-safe, e.g. "rebuild server … to image …"

    @property
    def token(self) -> str:
        """What approves exactly this change (the annotation's value, the Update's argument)."""
        return approval_token(self.action, self.generation)


def approval_token(action: str, generation: int) -> str:
    return f"{action}:{generation}"


class OpsState(BaseModel):
    """The loop's bookkeeping for pause, reconcile-now, the per-object resync period and Events."""

    paused: bool = False  # the last pass found the pause annotation
    paused_generation: int | None = None  # the generation the Paused condition names as not applied
    reconcile_handled: str | None = None  # the reconcile-requested-at value last acted on
    resync_seconds: float | None = None  # spec.resyncPeriod of the last parsed spec (None: the default)
    pending_approval: PendingApproval | None = None  # what an approval gate holds now
    approved: str | None = None  # the token `osprov approve` approved (the annotation needs no record)
    plan_handled: str | None = None  # the plan annotation's value last acted on
    events: bool = False  # this run records Events (runs begun before them switch at a live pass)
    recorder: RecorderState = Field(default_factory=RecorderState)
