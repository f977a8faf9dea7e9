"""Server resize: executes the decisions of workflows/resize.py (docs/resize.md) inside a Server pass.

The marker lives in workflow state (ServerState.resize) and is mirrored to status.resize. It is durable
before Nova is asked: the resize (and the confirm) activity starts only after the workflow task that armed
the marker and scheduled it has completed. Both calls are single-attempt; an unknown outcome is attributed by
the next pass from Nova's instance-action counts, never resent blindly. Runs that started before
PATCH_RESIZE never reach this module (their flavor could not change).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Protocol

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from osprov.api import nova_io as io
    from osprov.api.common import AvailableReason
    from osprov.api.errors import CONFLICT, NOT_FOUND, TRANSIENT, UNKNOWN_OUTCOME
    from osprov.api.messages import ConditionState
    from osprov.api.nova import HEALTHY, HealthyReason, RebuildState, ResizeState, ServerPhase, ServerSpec
    from osprov.api.operations import EventNote
    from osprov.api.registry import AVAILABLE
    from osprov.api.state import ServerState
    from osprov.workflows.approval import Gate
    from osprov.workflows.calls import call
    from osprov.workflows.entity import Outcome, PassFailed, error_type, failure_message
    from osprov.workflows.event_recorder import note
    from osprov.workflows.resize import VERIFY_RESIZE, Action, Decision, ResizeRead, resize_pass

# A changed spec.flavor on a booted server is resized and confirmed (new commands: the flavor lookup, the
# action counts, the resize, the confirm and their waits).
PATCH_RESIZE = "server-resize"
RESIZE_PARK_MESSAGE = "server resize failed; set a different spec.flavor or replace the Server"
# The calls Nova records as instance actions (rebuild, resize, confirm): one attempt only; an unknown outcome
# is resolved by a fresh read, never a resend.
SUBMIT_ONCE = RetryPolicy(maximum_attempts=1)
SUBMIT_TIMEOUT = timedelta(seconds=30)


class ServerWorkflow(Protocol):
    """What a resize step uses of the Server workflow (workflows/server.py)."""

    @property
    def k(self) -> ServerState: ...

    def set_step(self, step: str) -> None: ...

    def event(self, note: EventNote) -> None: ...

    def waiting(self, seconds: float | None = None) -> float: ...

    def provisioning(
        self, message: str, health: ConditionState | None = None, seconds: float | None = None
    ) -> Outcome: ...

    async def settle(self, project: io.Project, waiting: Outcome, busy: tuple[str, ...] = ()) -> Outcome: ...

    async def publish_now(self, conditions: list[ConditionState]) -> None: ...

    @property
    def gate(self) -> Gate: ...


def _available(ok: bool, reason: AvailableReason, message: str) -> ConditionState:
    return ConditionState.of(AVAILABLE, ok, reason, message)


async def desired_flavor(
    wf: ServerWorkflow, spec: ServerSpec, project: io.Project, read: io.ServerRead
) -> str:
    """spec.flavor as the name a read shows: no call when it is that name; else resolved once per value (an ID,
    or a different name)."""
    k = wf.k
    if spec.flavor == read.flavor:
        return spec.flavor
    if k.flavor_ref != spec.flavor or k.flavor_name is None:
        k.flavor_name = await call(
            io.FLAVOR_NAME,
            io.FlavorRef(project=project, flavor=spec.flavor),
            summary=f"find the name of flavor {spec.flavor}",
        )
        k.flavor_ref = spec.flavor
    return k.flavor_name


async def fresh_read(
    wf: ServerWorkflow, project: io.Project, read: io.ServerRead, desired: str
) -> ResizeRead:
    """The read and, while a marker exists or the flavor differs, Nova's resize/confirmResize counts."""
    counts = None
    if wf.k.resize is not None or (read.flavor is not None and read.flavor != desired):
        counts = await call(
            io.RESIZE_ACTIONS,
            io.ServerId(project=project, server_id=read.id),
            summary=f"count resize actions of server {read.id}",
        )
    return ResizeRead(
        status=read.status,
        task_state=read.task_state,
        launched_at=read.launched_at,
        flavor=read.flavor,
        resizes=counts.resizes if counts else None,
        confirms=counts.confirms if counts else None,
    )


async def resize_step(
    wf: ServerWorkflow, spec: ServerSpec, project: io.Project, read: io.ServerRead, health: ConditionState
) -> Outcome | None:
    """One pass of the resize table; None: nothing for the flavor, the rest of the pass (rebuild, volumes)
    runs."""
    k = wf.k
    k.flavor = read.flavor
    desired = await desired_flavor(wf, spec, project, read)
    rr = await fresh_read(wf, project, read, desired)
    rebuild = k.rebuild
    rebuild_busy = rebuild is not None and rebuild.state in (RebuildState.INITIATED, RebuildState.REBUILDING)
    decision = resize_pass(k.resize, rr, desired, rebuild_busy)
    if decision.action is Action.ARM and not wf.gate.passes(
        spec, "resize", f"resizing server {read.id} to flavor {desired}"
    ):  # approval gate (workflows/approval.py): nothing is armed until this flavor is approved
        wf.set_step(decision.step)
        return Outcome(conditions=[wf.gate.waiting(), health], awaiting_approval=True)
    before = k.resize
    k.resize = decision.marker
    k.resize_parked = False
    act = decision.action
    if act is Action.GO_ON:
        if decision.rule == "Z8" and before != decision.marker:
            wf.event(note("Updated", f"server {read.id} resized to flavor {rr.flavor}"))
        return None
    wf.set_step(decision.step)
    if act is Action.ARM:
        # Arm, mirror it (Initiated), then decide the submit from the armed marker as a later pass would.
        await wf.publish_now([_available(False, AvailableReason.PROVISIONING, decision.step), health])
        decision = resize_pass(k.resize, rr, desired, rebuild_busy)
        wf.set_step(decision.step)
        k.resize = decision.marker
        if decision.action is not Action.SUBMIT:
            return wf.provisioning(decision.why, health, seconds=1.0)
        return await submit(wf, project, read.id, decision, health)
    if act is Action.SUBMIT:
        return await submit(wf, project, read.id, decision, health)
    if act is Action.CONFIRM:
        return await confirm(wf, project, read.id, health)
    return await waiting(wf, project, decision, rr, health)


async def waiting(
    wf: ServerWorkflow, project: io.Project, decision: Decision, rr: ResizeRead, health: ConditionState
) -> Outcome:
    """The decisions that wait: re-check, report a foreign VERIFY_RESIZE, park, or wait out Nova's work."""
    act = decision.action
    if act is Action.FOREIGN:
        message = (
            f"server {wf.k.server_id} waits in VERIFY_RESIZE for a resize osprov did not submit (flavor "
            f"{rr.flavor}); osprov never confirms it: confirm or revert it in Nova"
        )
        return Outcome(
            conditions=[_available(False, AvailableReason.ERRORED, message), health],
            requeue_after=wf.waiting(),
        )
    if act is Action.PARK:
        wf.k.resize_parked = True
        return Outcome(conditions=[_available(False, AvailableReason.ERRORED, RESIZE_PARK_MESSAGE), health])
    if act is Action.WAIT_ACCEPTED:
        return await wf.settle(project, accepted_stamp(wf, decision.why))
    if act is Action.WAIT_CONFIRMED:
        return await wf.settle(project, accepted_stamp(wf, decision.why), busy=(VERIFY_RESIZE,))
    seconds = 1.0 if act is Action.FAIL else decision.recheck_seconds  # FAIL: the next pass parks
    return wf.provisioning(decision.why, health, seconds=seconds)


async def submit(
    wf: ServerWorkflow, project: io.Project, server_id: str, decision: Decision, health: ConditionState
) -> Outcome:
    """Z17: the resize, sent once; every outcome but 2xx is decided by the next pass's read and counts."""
    marker = wf.k.resize
    assert marker is not None
    flavor = marker.target_flavor
    try:
        await call(
            io.RESIZE,
            io.Resize(project=project, server_id=server_id, flavor=flavor),
            summary=f"resize server {server_id} to flavor {flavor}",
            retry=SUBMIT_ONCE,
            timeout=SUBMIT_TIMEOUT,
        )
        wf.event(note("Updated", f"resize of server {server_id} to flavor {flavor} submitted"))
    except ActivityError as err:
        kind = error_type(err)
        if kind == CONFLICT:
            # A definite no: nothing of ours was accepted. The next submit re-counts first, so a resize
            # someone else makes meanwhile is never taken for ours.
            wf.k.resize = marker.with_state(ResizeState.INITIATED, resize_actions=None)
            wf.set_step("Z17: Nova answered 409 (another action is running); waiting to resubmit")
            return wf.provisioning("waiting for Nova to accept the resize", health)
        if kind in (UNKNOWN_OUTCOME, TRANSIENT, None):  # None: timed out (e.g. the worker died)
            wf.set_step("Z17: resize outcome unknown; attributing it from Nova's instance actions")
            return wf.provisioning("resize outcome unknown; re-reading the server", health, seconds=1.0)
        if kind == NOT_FOUND:
            wf.k.server_id = None
        raise PassFailed(failure_message(err)) from None
    wf.k.resize = marker.with_state(ResizeState.RESIZING)
    wf.set_step(f"Z17: resize to {flavor} accepted; waiting for VERIFY_RESIZE")
    return await wf.settle(project, accepted_stamp(wf, decision.why))


async def confirm(wf: ServerWorkflow, project: io.Project, server_id: str, health: ConditionState) -> Outcome:
    """Z5/Z6: confirmResize, sent once, scheduled in the workflow task that armed Confirming (with the
    count); an unknown outcome is attributed by the next pass from the confirmResize count."""
    try:
        await call(
            io.CONFIRM_RESIZE,
            io.ServerId(project=project, server_id=server_id),
            summary=f"confirm the resize of server {server_id}",
            retry=SUBMIT_ONCE,
            timeout=SUBMIT_TIMEOUT,
        )
        wf.event(note("Updated", f"resize of server {server_id} confirmed"))
    except ActivityError as err:
        kind = error_type(err)
        if kind in (CONFLICT, UNKNOWN_OUTCOME, TRANSIENT, None):
            wf.set_step("Z6: confirm outcome unknown or refused; re-reading the server")
            return wf.provisioning("confirm outcome unknown; re-reading the server", health, seconds=1.0)
        raise PassFailed(failure_message(err)) from None
    wf.set_step("Z7: confirm accepted; waiting for Nova")
    return await wf.settle(project, accepted_stamp(wf, "confirm accepted"), busy=(VERIFY_RESIZE,))


def accepted_stamp(wf: ServerWorkflow, message: str) -> Outcome:
    """The fixed stamp of an accepted resize (Phase Building, Healthy False/Provisioning)."""
    wf.k.phase = ServerPhase.BUILDING
    return Outcome(
        conditions=[
            _available(False, AvailableReason.PROVISIONING, f"resizing: {message}"),
            ConditionState.of(HEALTHY, False, HealthyReason.PROVISIONING, "resize in progress"),
        ],
        requeue_after=wf.waiting(),
    )
