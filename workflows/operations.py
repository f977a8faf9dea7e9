"""The entity loop's Kubernetes-native operations, kept out of the loop itself: pause, reconcile-now, the
per-object resync period, and recording Events (workflows/event_recorder.py decides which).

The loop calls these hooks (workflows/entity.py): `observe` at the start of a pass, `hold` instead of a
pass while the pause annotation is set, `resumed`/`requested` to force a full pass, `resync_seconds` for the
resync timer, and `record` after every status publish. A kind reports what it did with `Entity.event`.
"""

from __future__ import annotations

import contextlib
from typing import Any, Protocol

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from osprov.api import kube_io
    from osprov.api.common import CommonSpec
    from osprov.api.kube_io import ObjectRef, RecordEvent
    from osprov.api.messages import ConditionState, EntityState, ResourceChange
    from osprov.api.operations import (
        PAUSED,
        PAUSED_REASON,
        RECONCILE_REQUESTED,
        EventNote,
        OpsState,
        is_paused,
    )
    from osprov.api.registry import KindInfo
    from osprov.workflows import patches
    from osprov.workflows.calls import call_local
    from osprov.workflows.event_recorder import decide, note, transition


class Loop(Protocol):
    """What these hooks use of the entity loop (workflows/entity.py)."""

    @property
    def st(self) -> EntityState[Any]: ...
    @property
    def info(self) -> KindInfo: ...
    @property
    def obj(self) -> ObjectRef: ...
    def set_step(self, step: str) -> None: ...
    async def _publish(
        self, change: ResourceChange, conditions: list[ConditionState], *, generation: int | None = None
    ) -> None: ...


# Runs begun before Events switch to recording them at their first live pass (the per-pass patch ID is new
# to every pass, as in workflows/keystone/common.py).
EVENTS_PATCH = "k8s-events"
PAUSED_NOTE = (
    f"reconciliation is paused by the annotation {PAUSED}=true: changes are recorded and nothing is "
    "called; remove the annotation to resume"
)


class Ops:
    def __init__(self, entity: Loop) -> None:
        self.e = entity
        self.notes: list[EventNote] = []  # what the kind reported doing in this pass

    @property
    def s(self) -> OpsState:
        return self.e.st.ops

    # ----- at the start of a pass ----------------------------------------------------------------
    def observe(self, spec: CommonSpec) -> None:
        period = spec.resync_period_delta()
        self.s.resync_seconds = period.total_seconds() if period else None

    def resync_seconds(self) -> float:
        """spec.resyncPeriod when set (bounded below by the CRD), else the controller's default."""
        return self.s.resync_seconds or self.e.st.config.resync_seconds

    def paused(self, change: ResourceChange) -> bool:
        return is_paused(change.annotations)

    def resumed(self) -> bool:
        """True once: the first pass after the pause annotation went away (it converges in full)."""
        was, self.s.paused, self.s.paused_generation = self.s.paused, False, None
        return was

    def requested(self, change: ResourceChange) -> bool:
        """A reconcile-requested-at value not acted on yet: one full pass now."""
        value = change.annotations.get(RECONCILE_REQUESTED)
        if value is None or value == self.s.reconcile_handled:
            return False
        self.s.reconcile_handled = value
        return True

    async def hold(self, change: ResourceChange) -> None:
        """A paused pass: no cloud call, no finalizer work; the ready condition (status kept) and an Event
        say Paused, once. Pending retries are dropped: resuming runs a full pass anyway."""
        e = self.e
        e.st.retry_at = None
        waiting = "deletion waits until it is removed" if change.deleting else "changes are applied then"
        e.set_step(f"paused by the annotation {PAUSED}: nothing is called; {waiting}")
        if self.s.paused and self.s.paused_generation == change.generation:
            return
        # Paused, or a new generation arrived while paused: the condition says which one waits (the
        # annotation and a spec change often come as two changes, in either order).
        first = not self.s.paused
        self.s.paused, self.s.paused_generation = True, change.generation
        written = e.st.written_status or {}
        reconciled = int(written.get("observedGeneration") or 0)
        ready = self.ready(e.st.conditions)
        ok = None if ready is None or ready.status == "Unknown" else ready.status == "True"
        pending = (
            f" (generation {change.generation} is not applied yet)"
            if change.generation > reconciled and not change.deleting
            else ""
        )
        condition = ConditionState.of(e.info.ready_condition, ok, PAUSED_REASON, PAUSED_NOTE + pending)
        self.notes = [note(PAUSED_REASON, PAUSED_NOTE, action="Pause")] if first else []
        await e._publish(change, [condition], generation=reconciled)

    # ----- Events ----------------------------------------------------------------------------------
    def ready(self, conditions: list[ConditionState]) -> ConditionState | None:
        return next((c for c in conditions if c.type == self.e.info.ready_condition), None)

    def enabled(self) -> bool:
        s = self.s
        if not s.events and (
            patches.patched(EVENTS_PATCH) or workflow.patched(f"{EVENTS_PATCH}@{self.e.st.passes}")
        ):
            s.events = True
        return s.events

    async def record(self, before: ConditionState | None, after: ConditionState | None) -> None:
        """After a status publish: the kind's own notes, and the ready condition's transition unless a
        note already tells this pass's story (an error is always recorded)."""
        notes, self.notes = self.notes, []
        if not self.enabled():
            return
        moved = transition(before, after) if after is not None else None
        told = {n.note for n in notes}
        if moved is not None and (not notes or (moved.type == "Warning" and moved.note not in told)):
            notes.append(moved)
        for n in notes:
            await self.emit(n)

    async def announce(self, n: EventNote) -> None:
        """Record `n` now (outside a status publish: deletion)."""
        if self.enabled():
            await self.emit(n)

    async def flush(self, default: EventNote) -> None:
        """Record what the kind reported (or `default`) now: the last word before the resource goes."""
        notes, self.notes = self.notes or [default], []
        if self.enabled():
            for n in notes:
                await self.emit(n)

    async def emit(self, n: EventNote) -> None:
        ref, now = self.e.st.ref, workflow.now()
        d = decide(self.s.recorder, n, now, ref.name, ref.uid)
        if d is None:
            return
        request = RecordEvent(
            obj=self.e.obj,
            kind=ref.kind,
            name=d.name,
            event=n,
            event_time=d.first,
            count=d.count,
            last_observed=d.last if d.count > 1 else None,
        )
        summary = f"event {n.reason}{f' (x{d.count})' if d.count > 1 else ''}: {_short(n.note)}"
        with contextlib.suppress(ActivityError, ApplicationError):  # best effort: never fails a pass
            await call_local(kube_io.RECORD_EVENT, request, summary=summary)


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
