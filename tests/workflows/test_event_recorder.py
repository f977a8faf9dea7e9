"""Which Events a workflow records (workflows/event_recorder.py), decision by decision: transitions only,
series for repeats, a per-object token bucket."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from osprov.api.messages import ConditionState
from osprov.api.operations import RecorderState
from osprov.workflows.event_recorder import (
    BURST,
    REFILL_SECONDS,
    SERIES_WINDOW,
    decide,
    event_name,
    note,
    transition,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
UID = "0f6a5d3e-1111-2222-3333-444455556666"


def ready(status: str, reason: str, message: str = "m") -> ConditionState:
    return ConditionState(type="Ready", status=status, reason=reason, message=message)  # type: ignore[arg-type]


def test_a_condition_transition_is_an_event_and_rewording_a_success_is_not() -> None:
    first = transition(None, ready("True", "Reconciled", "created project p"))
    assert first is not None and (first.type, first.reason) == ("Normal", "Reconciled")
    assert (
        transition(ready("True", "Reconciled", "created"), ready("True", "Reconciled", "up to date")) is None
    )
    failed = transition(ready("True", "Reconciled"), ready("False", "ReconcileError", "Keystone said no"))
    assert failed is not None and (failed.type, failed.note) == ("Warning", "Keystone said no")
    # The same failure again: nothing; another failure: an event.
    assert transition(ready("False", "ReconcileError", "a"), ready("False", "ReconcileError", "a")) is None
    assert (
        transition(ready("False", "ReconcileError", "a"), ready("False", "ReconcileError", "b")) is not None
    )
    waiting = transition(None, ready("False", "Provisioning", "waiting for Cinder"))
    assert waiting is not None and waiting.type == "Normal"


def test_the_same_state_twice_records_nothing() -> None:
    state = RecorderState()
    e = note("Created", "created project p")
    assert decide(state, e, T0, "p", UID) is not None
    assert decide(state, e, T0 + timedelta(minutes=1), "p", UID) is None
    assert state.made == 1


def test_a_repeat_within_the_window_patches_the_series_and_later_starts_a_new_event() -> None:
    state = RecorderState()
    paused, resumed = note("Paused", "paused", action="Pause"), note("Reconciled", "up to date")
    first = decide(state, paused, T0, "p", UID)
    decide(state, resumed, T0 + timedelta(minutes=1), "p", UID)
    again = decide(state, paused, T0 + timedelta(minutes=2), "p", UID)
    assert first is not None and again is not None
    assert (again.name, again.count, again.first, again.last) == (
        first.name,
        2,
        T0,
        T0 + timedelta(minutes=2),
    )
    decide(state, resumed, T0 + timedelta(minutes=3), "p", UID)
    late = T0 + timedelta(minutes=2) + SERIES_WINDOW + timedelta(seconds=1)
    fresh = decide(state, paused, late, "p", UID)
    assert fresh is not None and fresh.count == 1 and fresh.name != first.name


def test_the_token_bucket_drops_a_flood_and_refills_one_event_per_period() -> None:
    state = RecorderState()
    recorded = [
        decide(state, note("E", f"failure {i}", warning=True), T0, "p", UID) for i in range(BURST + 5)
    ]
    assert sum(r is not None for r in recorded) == BURST and state.dropped == 5
    assert decide(state, note("E", "one more", warning=True), T0 + timedelta(seconds=1), "p", UID) is None
    refilled = T0 + timedelta(seconds=REFILL_SECONDS + 1)
    assert decide(state, note("E", "after a while", warning=True), refilled, "p", UID) is not None


def test_event_names_are_deterministic_unique_per_incarnation_and_fit_the_api() -> None:
    assert event_name("p", UID, 1) == event_name("p", UID, 1) != event_name("p", UID, 2)
    assert event_name("p", UID, 1) != event_name("p", "9" + UID[1:], 1)
    assert len(event_name("x" * 253, UID, 300)) <= 253
