"""The resize decision table (docs/resize.md), one row per rule, named by step label."""

from __future__ import annotations

import pytest

from osprov.api.nova import ResizeMarker
from osprov.api.nova import ResizeState as S
from osprov.workflows.resize import Action, ResizeRead, resize_pass

TINY, SMALL, MEDIUM = "m1.tiny", "m1.small", "m1.medium"
BOOTED = "2026-01-01T00:00:00.000000"


def rd(
    status: str = "ACTIVE",
    flavor: str | None = TINY,
    task: str | None = None,
    resizes: int | None = 0,
    confirms: int | None = 0,
    launched: str | None = BOOTED,
) -> ResizeRead:
    return ResizeRead(
        status=status,
        task_state=task,
        launched_at=launched,
        flavor=flavor,
        resizes=resizes,
        confirms=confirms,
    )


def m(state: S, target: str = SMALL, resizes: int | None = 0, confirms: int | None = None) -> ResizeMarker:
    return ResizeMarker(target_flavor=target, state=state, resize_actions=resizes, confirm_actions=confirms)


ROWS = [
    # rule, marker, fresh read, desired, rebuild busy, action, marker after
    ("Z10", m(S.INITIATED), rd(resizes=None, confirms=None), SMALL, False, Action.WAIT, m(S.INITIATED)),
    # In flight: our resize was accepted (seen, or the count grew since arming: a lost answer attributed).
    ("Z2", m(S.RESIZING), rd("ERROR", resizes=1), SMALL, False, Action.FAIL, m(S.FAILED)),
    ("Z2", m(S.INITIATED), rd("ERROR", resizes=1), SMALL, False, Action.FAIL, m(S.FAILED)),
    (
        "Z4",
        m(S.INITIATED),
        rd("RESIZE", task="resize_prep", resizes=1),
        SMALL,
        False,
        Action.WAIT_ACCEPTED,
        m(S.RESIZING),
    ),
    (
        "Z4",
        m(S.RESIZING),
        rd("RESIZE", task="resize_finish", resizes=1),
        SMALL,
        False,
        Action.WAIT_ACCEPTED,
        m(S.RESIZING),
    ),
    # A VERIFY_RESIZE of another flavor is not ours to confirm, even with a resize in flight.
    (
        "Z3",
        m(S.RESIZING),
        rd("VERIFY_RESIZE", MEDIUM, resizes=1),
        SMALL,
        False,
        Action.FOREIGN,
        m(S.RESIZING),
    ),
    (
        "Z5",
        m(S.RESIZING),
        rd("VERIFY_RESIZE", SMALL, resizes=1, confirms=2),
        SMALL,
        False,
        Action.CONFIRM,
        m(S.CONFIRMING, confirms=2),
    ),
    (
        "Z5",
        m(S.INITIATED),
        rd("VERIFY_RESIZE", SMALL, resizes=1),
        SMALL,
        False,
        Action.CONFIRM,
        m(S.CONFIRMING, confirms=0),
    ),  # the resize answer was lost, the count attributes it
    (
        "Z6",
        m(S.CONFIRMING, confirms=0),
        rd("VERIFY_RESIZE", SMALL, resizes=1, confirms=0),
        SMALL,
        False,
        Action.CONFIRM,
        m(S.CONFIRMING, confirms=0),
    ),  # the confirm never reached Nova: send it again
    (
        "Z7",
        m(S.CONFIRMING, confirms=0),
        rd("VERIFY_RESIZE", SMALL, resizes=1, confirms=1),
        SMALL,
        False,
        Action.WAIT_CONFIRMED,
        m(S.CONFIRMING, confirms=0),
    ),  # accepted, answer lost: never a second confirm
    (
        "Z8",
        m(S.CONFIRMING, confirms=0),
        rd("ACTIVE", SMALL, resizes=1, confirms=1),
        SMALL,
        False,
        Action.GO_ON,
        m(S.CONFIRMED, confirms=0),
    ),
    (
        "Z8",
        m(S.CONFIRMING, confirms=0),
        rd("SHUTOFF", SMALL, resizes=1, confirms=1),
        SMALL,
        False,
        Action.GO_ON,
        m(S.CONFIRMED, confirms=0),
    ),
    ("Z9", m(S.RESIZING), rd("ACTIVE", TINY, resizes=1), SMALL, False, Action.FAIL, m(S.FAILED)),  # reverted
    # An in-flight resize is finished before a new flavor is armed.
    (
        "Z4",
        m(S.RESIZING),
        rd("RESIZE", task="resize_migrating", resizes=1),
        MEDIUM,
        False,
        Action.WAIT_ACCEPTED,
        m(S.RESIZING),
    ),
    # Not in flight.
    ("Z1", m(S.FAILED), rd("ERROR", resizes=1), SMALL, False, Action.PARK, m(S.FAILED)),
    ("Z1", m(S.FAILED), rd("ACTIVE", resizes=1), SMALL, False, Action.PARK, m(S.FAILED)),
    ("Z3", None, rd("VERIFY_RESIZE", SMALL), SMALL, False, Action.FOREIGN, None),  # never confirmed
    (
        "Z3",
        m(S.INITIATED),
        rd("VERIFY_RESIZE", SMALL, resizes=0),
        SMALL,
        False,
        Action.FOREIGN,
        m(S.INITIATED),
    ),
    (
        "Z3",
        m(S.CONFIRMED),
        rd("VERIFY_RESIZE", SMALL, resizes=2),
        SMALL,
        False,
        Action.FOREIGN,
        m(S.CONFIRMED),
    ),
    ("Z10", None, rd(flavor=None), SMALL, False, Action.WAIT, None),
    ("Z11", None, rd(flavor=SMALL), SMALL, False, Action.GO_ON, None),
    ("Z11", m(S.CONFIRMED), rd(flavor=SMALL), SMALL, False, Action.GO_ON, m(S.CONFIRMED)),
    ("Z11", m(S.FAILED), rd(flavor=TINY, resizes=1), TINY, False, Action.GO_ON, None),  # set back: cleared
    ("Z12", None, rd("BUILD", task="spawning", launched=None), SMALL, False, Action.WAIT, None),
    ("Z13", None, rd(), SMALL, True, Action.GO_ON, None),
    ("Z13", m(S.CONFIRMED, MEDIUM), rd(resizes=1), SMALL, True, Action.GO_ON, m(S.CONFIRMED, MEDIUM)),
    ("Z14", None, rd(task="rebooting"), SMALL, False, Action.WAIT, None),
    ("Z15", None, rd("ERROR"), SMALL, False, Action.WAIT, None),
    (
        "Z15",
        m(S.FAILED, MEDIUM, resizes=1),
        rd("ERROR", resizes=1),
        SMALL,
        False,
        Action.WAIT,
        m(S.FAILED, MEDIUM, resizes=1),
    ),  # a new flavor re-arms once the server is ACTIVE or SHUTOFF
    ("Z16", None, rd(resizes=3), SMALL, False, Action.ARM, m(S.INITIATED, resizes=3)),
    ("Z16", None, rd("SHUTOFF", resizes=0), SMALL, False, Action.ARM, m(S.INITIATED)),
    (
        "Z16",
        m(S.FAILED, MEDIUM, resizes=1),
        rd(resizes=1),
        SMALL,
        False,
        Action.ARM,
        m(S.INITIATED, resizes=1),
    ),
    (
        "Z16",
        m(S.CONFIRMED, MEDIUM),
        rd(flavor=MEDIUM, resizes=1),
        SMALL,
        False,
        Action.ARM,
        m(S.INITIATED, resizes=1),
    ),
    (
        "Z16",
        m(S.INITIATED, MEDIUM),
        rd(resizes=0),
        SMALL,
        False,
        Action.ARM,
        m(S.INITIATED),
    ),  # never accepted
    ("Z16", m(S.INITIATED, resizes=None), rd(resizes=2), SMALL, False, Action.ARM, m(S.INITIATED, resizes=2)),
    ("Z17", m(S.INITIATED), rd(resizes=0), SMALL, False, Action.SUBMIT, m(S.INITIATED)),
]


@pytest.mark.parametrize(
    ("rule", "marker", "read", "desired", "rebuild_busy", "action", "after"),
    ROWS,
    ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)],
)
def test_resize_rule(
    rule: str,
    marker: ResizeMarker | None,
    read: ResizeRead,
    desired: str,
    rebuild_busy: bool,
    action: Action,
    after: ResizeMarker | None,
) -> None:
    decision = resize_pass(marker, read, desired, rebuild_busy)
    assert (decision.rule, decision.action, decision.marker) == (rule, action, after)


def test_a_marker_armed_and_decided_again_submits_exactly_then() -> None:
    """Z16 then Z17 in one pass: the submit is derived from the armed marker and the same read."""
    read = rd(resizes=4)
    armed = resize_pass(None, read, SMALL)
    assert armed.action is Action.ARM
    then = resize_pass(armed.marker, read, SMALL)
    assert (then.rule, then.action, then.marker) == ("Z17", Action.SUBMIT, armed.marker)
