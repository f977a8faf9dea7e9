"""Which Events a resource's workflow records, as pure decisions (no I/O, no Temporal).

When: a pass yields at most one Event — what the kind reported doing (Created, Updated, …) or else a
transition of the ready condition (its status or reason moved, or the error message changed while it stays
False). The same state announced twice is not a new Event (`last`), so a resync or a retry that changes
nothing records nothing.

How (client-go's recorder, per object and durable because it lives in the workflow's state):
  - series: an Event isomorphic to one recorded within SERIES_WINDOW (same type, reason, action and note)
    is not created again; its series count and lastObservedTime are patched (`kubectl describe` shows
    "(x3 over 10m)");
  - rate limit: a token bucket per object, BURST tokens refilled one per REFILL_SECONDS (client-go's spam
    filter: 25, one per 5 minutes); an Event without a token is dropped (counted in the state).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from osprov.api.messages import ConditionState
from osprov.api.operations import NOTE_LIMIT, EventAction, EventNote, RecorderState, SeriesEntry

BURST = 25
REFILL_SECONDS = 300.0
SERIES_WINDOW = timedelta(minutes=30)
MAX_SERIES = 8  # isomorphic-event records kept per object (the most recent)
# Reasons of a ready condition that are errors (Warning); every other reason is Normal (progress, waits).
WARNING_REASONS = frozenset({"ReconcileError", "Errored", "Conflict", "ImportNotAllowed"})
NAME_LIMIT = 253


@dataclass(frozen=True)
class Emission:
    """Record this Event: create it (count 1) or patch its series (count >= 2)."""

    name: str
    note: EventNote
    count: int
    first: datetime
    last: datetime


def note(reason: str, message: str, *, warning: bool = False, action: EventAction = "Reconcile") -> EventNote:
    """An Event note from a reason and a user-safe message, cut to what the apiserver accepts."""
    text = message if len(message) <= NOTE_LIMIT else message[: NOTE_LIMIT - 1] + "…"
    return EventNote(type="Warning" if warning else "Normal", reason=reason, action=action, note=text)


def transition(before: ConditionState | None, after: ConditionState) -> EventNote | None:
    """The Event a ready-condition change deserves, if any: status or reason moved, or a failure's message
    changed. A success whose wording changes (e.g. "created" then "up to date") is not news."""
    moved = before is None or (before.status, before.reason) != (after.status, after.reason)
    new_failure = after.status == "False" and before is not None and before.message != after.message
    if not (moved or new_failure):
        return None
    return note(after.reason, after.message or after.reason, warning=after.reason in WARNING_REASONS)


def decide(state: RecorderState, event: EventNote, now: datetime, resource: str, uid: str) -> Emission | None:
    """Update `state` for `event` and say what to record (None: nothing — the same state again, or the
    rate limit dropped it)."""
    if event.key == state.last:
        return None
    state.last = event.key
    tokens = BURST if state.tokens is None else state.tokens
    if state.refilled_at is not None:
        tokens = min(BURST, tokens + (now - state.refilled_at).total_seconds() / REFILL_SECONDS)
    state.refilled_at = now
    if tokens < 1:
        state.tokens = tokens
        state.dropped += 1
        return None
    state.tokens = tokens - 1
    state.series = [s for s in state.series if now - s.last <= SERIES_WINDOW]
    entry = next((s for s in state.series if s.key == event.key), None)
    if entry is not None:
        entry.count += 1
        entry.last = now
        state.series.remove(entry)
        state.series.append(entry)
        return Emission(entry.name, event, entry.count, entry.first, now)
    state.made += 1
    entry = SeriesEntry(key=event.key, name=event_name(resource, uid, state.made), first=now, last=now)
    state.series = [*state.series, entry][-MAX_SERIES:]
    return Emission(entry.name, event, 1, now, now)


def event_name(resource: str, uid: str, made: int) -> str:
    """`<resource>.<uid prefix><n>`: unique per resource incarnation and deterministic (a retried create
    finds its own Event instead of making a second one)."""
    suffix = f".{uid.replace('-', '')[:12]}{made:x}"
    return resource[: NAME_LIMIT - len(suffix)].rstrip(".-") + suffix
