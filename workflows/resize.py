"""The Nova resize protocol as pure decisions (docs/resize.md).

No I/O and no Temporal calls: the Server workflow (workflows/server_resize.py) feeds this a fresh read of
the server, Nova's resize/confirmResize action counts, the marker it holds in workflow state and the
desired flavor name, and acts on what it returns. Step labels (Z1…Z17) match the spec page's table, the
workflow's set_step texts and the table-driven tests.

Attribution without a blind resend: the marker holds how many resize (and, once a confirm is armed,
confirmResize) instance actions Nova listed before the call; a count above it means the call was accepted,
even when its answer was lost. A VERIFY_RESIZE is confirmed only when this marker's accepted resize made it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from osprov.api.nova import ResizeMarker, ResizeState

ERROR, VERIFY_RESIZE = "ERROR", "VERIFY_RESIZE"
RESIZABLE = ("ACTIVE", "SHUTOFF")  # Nova accepts a resize from vm_state active or stopped only
PREBOOT_RECHECK_SECONDS = 10.0  # as the rebuild's P7a


@dataclass(frozen=True)
class ResizeRead:
    """One fresh GET /servers/{id} (the fields the protocol reads) and the action counts of this pass."""

    status: str
    task_state: str | None
    launched_at: str | None
    flavor: str | None  # flavor.original_name; None = unreadable
    resizes: int | None = None  # resize instance actions; None = not counted this pass
    confirms: int | None = None  # confirmResize instance actions

    @property
    def task_active(self) -> bool:
        return bool(self.task_state) or self.status == "RESIZE"

    @property
    def verifying(self) -> bool:
        return self.status == VERIFY_RESIZE


def resize_accepted(marker: ResizeMarker | None, read: ResizeRead) -> bool:
    """Nova accepted this marker's resize: it was seen accepted, or the count grew since it was armed."""
    if marker is None:
        return False
    if marker.rank >= 2:
        return True
    return (
        marker.resize_actions is not None
        and read.resizes is not None
        and read.resizes > marker.resize_actions
    )


def confirm_accepted(marker: ResizeMarker, read: ResizeRead) -> bool:
    return (
        marker.confirm_actions is not None
        and read.confirms is not None
        and read.confirms > marker.confirm_actions
    )


def in_flight(marker: ResizeMarker | None, read: ResizeRead) -> bool:
    """An accepted resize that is neither Confirmed nor Failed: it is finished before anything else."""
    return marker is not None and not marker.settled and resize_accepted(marker, read)


def unsettled(marker: ResizeMarker | None) -> bool:
    """What blocks arming a rebuild: a resize marker that is neither Confirmed nor Failed."""
    return marker is not None and not marker.settled


class Action(StrEnum):
    GO_ON = "go_on"  # nothing to do for the flavor: the rest of the pass (rebuild, volumes) runs
    WAIT = "wait"  # re-check later; the pass ends here
    FOREIGN = "foreign"  # a VERIFY_RESIZE osprov did not submit: report it, wait, never confirm it
    ARM = "arm"  # arm {target, Initiated, count}; the submit is decided from the armed marker, same pass
    SUBMIT = "submit"  # send the resize once
    WAIT_ACCEPTED = "wait_accepted"  # our resize runs: wait (in one activity) for VERIFY_RESIZE
    CONFIRM = "confirm"  # confirm armed (with the confirm count) in the task that schedules the confirm
    WAIT_CONFIRMED = "wait_confirmed"  # our confirm was accepted: wait for the server to leave VERIFY_RESIZE
    FAIL = "fail"  # the marker was set Failed: the next pass parks
    PARK = "park"  # Available=False/Errored until a new flavor


@dataclass(frozen=True)
class Decision:
    rule: str
    action: Action
    marker: ResizeMarker | None
    why: str
    recheck_seconds: float | None = None

    @property
    def step(self) -> str:
        return f"{self.rule}: {self.why}"


def resize_pass(  # noqa: C901 - resize.md's Z-table, one branch per row
    marker: ResizeMarker | None, read: ResizeRead, desired: str, rebuild_busy: bool = False
) -> Decision:
    """One pass over a fresh read, checked in the spec's order (Z1…Z17)."""
    if marker is not None and (read.resizes is None or read.confirms is None):
        # Attribution needs the counts of this pass: never decide a marker's fate without them.
        return Decision("Z10", Action.WAIT, marker, "instance actions not counted; waiting")
    if in_flight(marker, read):
        assert marker is not None
        m = marker if marker.rank >= 2 else marker.with_state(ResizeState.RESIZING)
        target = m.target_flavor
        if read.status == ERROR:
            return Decision(
                "Z2", Action.FAIL, m.with_state(ResizeState.FAILED), "server in ERROR during resize"
            )
        if read.task_active:
            return Decision("Z4", Action.WAIT_ACCEPTED, m, f"resize to {target} accepted; waiting for Nova")
        if read.verifying:
            if read.flavor != target:
                return Decision(
                    "Z3",
                    Action.FOREIGN,
                    m,
                    f"VERIFY_RESIZE of flavor {read.flavor}, not {target}: not confirmed",
                )
            if m.state is ResizeState.RESIZING:
                armed = m.with_state(ResizeState.CONFIRMING, confirm_actions=read.confirms)
                return Decision("Z5", Action.CONFIRM, armed, f"resized to {target}; confirming")
            if confirm_accepted(m, read):
                return Decision("Z7", Action.WAIT_CONFIRMED, m, "confirm accepted; waiting for Nova")
            return Decision(
                "Z6", Action.CONFIRM, m, f"confirm not accepted by Nova; confirming {target} again"
            )
        if read.flavor == target:
            return Decision("Z8", Action.GO_ON, m.with_state(ResizeState.CONFIRMED), f"resized to {target}")
        return Decision(
            "Z9", Action.FAIL, m.with_state(ResizeState.FAILED), f"resize to {target} reverted or failed"
        )
    if marker is not None and marker.state is ResizeState.FAILED and marker.target_flavor == desired:
        return Decision("Z1", Action.PARK, marker, "server resize failed; waiting for a new flavor")
    if read.verifying:
        return Decision("Z3", Action.FOREIGN, marker, "a resize osprov did not submit waits in VERIFY_RESIZE")
    if read.flavor is None:
        return Decision("Z10", Action.WAIT, marker, "flavor of the server unreadable; waiting")
    if read.flavor == desired:
        kept = marker if marker is not None and marker.target_flavor == desired and marker.settled else None
        return Decision("Z11", Action.GO_ON, kept, "flavor is the desired one")
    if not read.launched_at:
        return Decision(
            "Z12", Action.WAIT, marker, "waiting for first boot", recheck_seconds=PREBOOT_RECHECK_SECONDS
        )
    if rebuild_busy:
        # The rebuild's own pass runs on (GO_ON): the resize is armed once its marker has settled.
        return Decision("Z13", Action.GO_ON, marker, "waiting for the rebuild to settle before resizing")
    if read.task_active:
        return Decision(
            "Z14", Action.WAIT, marker, f"waiting for task {read.task_state or read.status} to end"
        )
    if read.status not in RESIZABLE:
        return Decision(
            "Z15", Action.WAIT, marker, f"a resize needs the server ACTIVE or SHUTOFF, it is {read.status}"
        )
    if read.resizes is None:
        return Decision("Z10", Action.WAIT, marker, "instance actions not counted; waiting")
    if (
        marker is not None
        and marker.state is ResizeState.INITIATED
        and marker.target_flavor == desired
        and marker.resize_actions is not None
    ):
        return Decision("Z17", Action.SUBMIT, marker, f"submitting the resize to {desired}")
    armed = ResizeMarker(target_flavor=desired, state=ResizeState.INITIATED, resize_actions=read.resizes)
    return Decision("Z16", Action.ARM, armed, f"resize to {desired} armed")
