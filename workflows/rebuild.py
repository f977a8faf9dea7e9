"""The Nova image-rebuild protocol as pure decisions (../shared/spec/rebuild.md).

No I/O and no Temporal calls: the Server workflow feeds these a fresh read of the server, the marker it
holds in workflow state and the desired image, and acts on what they return. Step labels (M1…M6,
P1…P7e) match the spec page's tables, the workflow's set_step texts and the table-driven tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from osprov.api.nova import RebuildMarker, RebuildState

ERROR = "ERROR"
# Pre-boot re-check interval of the seed ("re-checking every 10s until first boot").
PREBOOT_RECHECK_SECONDS = 10.0


@dataclass(frozen=True)
class Observation:
    """What one fresh GET /servers/{id} says (only the fields the protocol reads)."""

    status: str  # Nova status, e.g. ACTIVE, BUILD, REBUILD, ERROR, SHUTOFF
    image_id: str | None  # image.id; None/empty = unreadable
    task_state: str | None  # OS-EXT-STS:task_state
    launched_at: str | None  # OS-SRV-USG:launched_at

    @property
    def ref(self) -> str | None:
        return self.image_id or None

    @property
    def task_active(self) -> bool:
        return bool(self.task_state) or self.status == "REBUILD"

    @property
    def launched(self) -> bool:
        return bool(self.launched_at)

    @property
    def errored(self) -> bool:
        return self.status == ERROR


def advance(marker: RebuildMarker, to: RebuildState) -> RebuildMarker:
    """Forward-only: a lower or equal rank never replaces a state, and a terminal never flips."""
    if marker.with_state(to).rank <= marker.rank:
        return marker
    return marker.with_state(to)


# --- monitor rules -----------------------------------------------------------------------------------


def monitor(marker: RebuildMarker | None, obs: Observation) -> tuple[RebuildMarker | None, str]:
    """Advance the marker from a fresh read (M1–M6). Returns the marker and the rule that applied."""
    if marker is None:
        return None, "M1"
    ref = obs.ref
    if ref == marker.target_image_id:
        if obs.errored:
            return advance(marker, RebuildState.FAILED), "M2"
        if obs.task_active:
            return advance(marker, RebuildState.REBUILDING), "M3"
        return advance(marker, RebuildState.SUCCEEDED), "M4"
    if ref is not None:
        if marker.accepted and (obs.errored or not obs.task_active):
            return advance(marker, RebuildState.FAILED), "M5"
        return marker, "-"
    if marker.accepted and obs.errored:
        return advance(marker, RebuildState.FAILED), "M6"
    # An unattributed advance would wedge the rebuild or drive a second Nova accept.
    return marker, "-"


# --- reconcile pass ----------------------------------------------------------------------------------


class Action(StrEnum):
    DONE = "done"  # nothing to do for the image (health is the monitor's business)
    WAIT = "wait"  # re-check later, write nothing about it (pre-acceptance waits are silent)
    WAIT_ACCEPTED = "wait_accepted"  # an accepted rebuild is in flight: write the accepted stamp, wait
    ARM = "arm"  # the marker was (re)armed: make it durable, submit in a later pass
    PARK = "park"  # Available=False/Errored until a new image or a replacement
    FAIL = "fail"  # the marker was set Failed: the next pass parks
    SUBMIT = "submit"  # send the rebuild (imageRef only), exactly once per durable Initiated marker


@dataclass(frozen=True)
class Decision:
    rule: str  # step label of the spec page, e.g. "P7e"
    action: Action
    marker: RebuildMarker | None  # the marker after this decision (None = cleared)
    why: str  # short human text for set_step and logs
    recheck_seconds: float | None = None  # a specific re-check interval (P7a)

    @property
    def step(self) -> str:
        return f"{self.rule}: {self.why}"


def reconcile_pass(  # noqa: C901 - rebuild.md's P-table, one branch per row
    marker: RebuildMarker | None, obs: Observation, desired: str | None, resize_busy: bool = False
) -> Decision:
    """One pass of the reconciler over a fresh read, checked in the spec's order (P1…P7e).

    `resize_busy`: a resize marker is neither Confirmed nor Failed (docs/resize.md); no rebuild is armed then."""
    if not desired:
        return Decision("P1", Action.DONE, None, "no image in the spec")
    if resize_busy and obs.ref != desired and (marker is None or marker.target_image_id != desired):
        return Decision("P2", Action.WAIT, marker, "waiting for the resize to settle before rebuilding")
    if marker is not None and marker.target_image_id != desired:
        # Allowed even over a parked Failed: a different image is the designed recovery.
        return Decision(
            "P3",
            Action.ARM,
            RebuildMarker(target_image_id=desired, state=RebuildState.INITIATED),
            "re-armed for a new image",
        )
    ref = obs.ref
    if marker is not None:
        if marker.state is RebuildState.FAILED:
            return Decision("P4a", Action.PARK, marker, "server rebuild failed; waiting for a new image")
        if obs.errored and (marker.accepted or ref == desired):
            return Decision(
                "P4b",
                Action.FAIL,
                marker.with_state(RebuildState.FAILED),
                "server in ERROR during rebuild",
            )
        if marker.accepted and ref is not None and ref != desired and not obs.task_active:
            return Decision("P4c", Action.FAIL, marker.with_state(RebuildState.FAILED), "rebuild superseded")
    if ref is None:
        return Decision("P5", Action.WAIT, marker, "image of the server unreadable; waiting")
    if ref == desired:
        if obs.errored or marker is None:
            return Decision("P6", Action.DONE, marker, "image is the desired one")
        if not obs.task_active:
            return Decision("P6a", Action.DONE, None, "rebuild settled")
        if marker.state is not RebuildState.SUCCEEDED:
            return Decision(
                "P6b",
                Action.WAIT_ACCEPTED,
                advance(marker, RebuildState.REBUILDING),
                "rebuild accepted; waiting for it to settle",
            )
        return Decision("P6c", Action.WAIT, marker, "waiting for the task to finish")
    if not obs.launched:
        return Decision(
            "P7a", Action.WAIT, marker, "waiting for first boot", recheck_seconds=PREBOOT_RECHECK_SECONDS
        )
    if marker is None:
        return Decision(
            "P7b",
            Action.ARM,
            RebuildMarker(target_image_id=desired, state=RebuildState.INITIATED),
            "rebuild armed",
        )
    if marker.state is RebuildState.REBUILDING:
        return Decision("P7c", Action.WAIT_ACCEPTED, marker, "rebuild accepted; waiting for Nova")
    if marker.state is RebuildState.SUCCEEDED:
        return Decision("P7c'", Action.WAIT, marker, "waiting for the task to finish")
    if obs.task_active:
        return Decision("P7d", Action.WAIT, marker, f"waiting for task {obs.task_state or obs.status} to end")
    return Decision("P7e", Action.SUBMIT, marker, "submitting the rebuild")
