"""The rebuild decision tables (rebuild.md), one row per rule, named by step label."""

from __future__ import annotations

import pytest

from osprov.api.nova import RebuildMarker
from osprov.api.nova import RebuildState as S
from osprov.workflows.rebuild import Action, Observation, advance, monitor, reconcile_pass

OLD, NEW, OTHER = "img-old", "img-new", "img-other"
BOOTED = "2026-01-01T00:00:00.000000"


def obs(
    status: str = "ACTIVE", ref: str | None = OLD, task: str | None = None, launched: str | None = BOOTED
) -> Observation:
    return Observation(status=status, image_id=ref, task_state=task, launched_at=launched)


def m(state: S, target: str = NEW) -> RebuildMarker:
    return RebuildMarker(target_image_id=target, state=state)


MONITOR_ROWS = [
    ("M1", None, obs(), None),
    ("M2", m(S.REBUILDING), obs("ERROR", NEW), m(S.FAILED)),
    ("M2", m(S.INITIATED), obs("ERROR", NEW), m(S.FAILED)),
    ("M3", m(S.INITIATED), obs("REBUILD", NEW, "rebuilding"), m(S.REBUILDING)),
    ("M3", m(S.INITIATED), obs("SHUTOFF", NEW, "rebuild_spawning"), m(S.REBUILDING)),
    ("M4", m(S.REBUILDING), obs("ACTIVE", NEW), m(S.SUCCEEDED)),
    ("M4", m(S.REBUILDING), obs("SHUTOFF", NEW), m(S.SUCCEEDED)),
    ("M5", m(S.REBUILDING), obs("ERROR", OTHER), m(S.FAILED)),
    ("M5", m(S.SUCCEEDED), obs("ACTIVE", OTHER), m(S.SUCCEEDED)),  # terminals never flip
    ("M5", m(S.REBUILDING), obs("ACTIVE", OTHER), m(S.FAILED)),
    ("M6", m(S.REBUILDING), obs("ERROR", None), m(S.FAILED)),
    ("-", m(S.INITIATED), obs("ACTIVE", OLD), m(S.INITIATED)),  # unattributed: nothing
    ("-", m(S.INITIATED), obs("ERROR", OLD), m(S.INITIATED)),
    ("-", m(S.INITIATED), obs("ERROR", None), m(S.INITIATED)),
    ("-", m(S.REBUILDING), obs("REBUILD", OTHER, "rebuilding"), m(S.REBUILDING)),
    ("M2", m(S.SUCCEEDED), obs("ERROR", NEW), m(S.SUCCEEDED)),  # terminal → terminal never
    ("M3", m(S.SUCCEEDED), obs("ACTIVE", NEW, "rebuilding"), m(S.SUCCEEDED)),  # never retreats
]


@pytest.mark.parametrize(
    ("rule", "marker", "read", "expected"),
    MONITOR_ROWS,
    ids=[f"{r[0]}-{i}" for i, r in enumerate(MONITOR_ROWS)],
)
def test_monitor_rule(
    rule: str, marker: RebuildMarker | None, read: Observation, expected: RebuildMarker | None
) -> None:
    after, applied = monitor(marker, read)
    assert (applied, after) == (rule, expected)


def test_advance_is_forward_only() -> None:
    assert advance(m(S.REBUILDING), S.INITIATED) == m(S.REBUILDING)
    assert advance(m(S.FAILED), S.SUCCEEDED) == m(S.FAILED)
    assert advance(m(S.INITIATED), S.SUCCEEDED) == m(S.SUCCEEDED)


PASS_ROWS = [
    # rule, marker, fresh read, desired, action, marker after
    ("P1", m(S.INITIATED), obs(), None, Action.DONE, None),
    ("P3", m(S.INITIATED, OTHER), obs(), NEW, Action.ARM, m(S.INITIATED)),
    ("P3", m(S.FAILED, OTHER), obs("ERROR"), NEW, Action.ARM, m(S.INITIATED)),  # re-arm over a park
    ("P4a", m(S.FAILED), obs("ERROR", NEW), NEW, Action.PARK, m(S.FAILED)),
    ("P4a", m(S.FAILED), obs("ACTIVE", NEW), NEW, Action.PARK, m(S.FAILED)),
    ("P4b", m(S.REBUILDING), obs("ERROR", OLD), NEW, Action.FAIL, m(S.FAILED)),
    ("P4b", m(S.SUCCEEDED), obs("ERROR", NEW), NEW, Action.FAIL, m(S.FAILED)),  # park overwrites Succeeded
    ("P4b", m(S.INITIATED), obs("ERROR", NEW), NEW, Action.FAIL, m(S.FAILED)),
    ("P4b", m(S.REBUILDING), obs("ERROR", None), NEW, Action.FAIL, m(S.FAILED)),  # parks before P5
    ("P4c", m(S.REBUILDING), obs("ACTIVE", OTHER), NEW, Action.FAIL, m(S.FAILED)),
    ("P5", m(S.INITIATED), obs("ACTIVE", None), NEW, Action.WAIT, m(S.INITIATED)),
    ("P5", None, obs("ACTIVE", ""), NEW, Action.WAIT, None),
    ("P6", None, obs("ACTIVE", NEW), NEW, Action.DONE, None),
    ("P6", None, obs("ERROR", NEW), NEW, Action.DONE, None),
    ("P6a", m(S.REBUILDING), obs("ACTIVE", NEW), NEW, Action.DONE, None),
    ("P6a", m(S.SUCCEEDED), obs("SHUTOFF", NEW), NEW, Action.DONE, None),
    ("P6b", m(S.INITIATED), obs("REBUILD", NEW, "rebuilding"), NEW, Action.WAIT_ACCEPTED, m(S.REBUILDING)),
    (
        "P6b",
        m(S.REBUILDING),
        obs("SHUTOFF", NEW, "rebuild_spawning"),
        NEW,
        Action.WAIT_ACCEPTED,
        m(S.REBUILDING),
    ),
    ("P6c", m(S.SUCCEEDED), obs("ACTIVE", NEW, "rebuilding"), NEW, Action.WAIT, m(S.SUCCEEDED)),
    ("P7a", None, obs("BUILD", OLD, "spawning", launched=None), NEW, Action.WAIT, None),
    ("P7a", None, obs("ERROR", OLD, launched=None), NEW, Action.WAIT, None),  # create-retry owns it
    ("P7b", None, obs("ACTIVE", OLD), NEW, Action.ARM, m(S.INITIATED)),
    ("P7c", m(S.REBUILDING), obs("REBUILD", OLD, "rebuilding"), NEW, Action.WAIT_ACCEPTED, m(S.REBUILDING)),
    ("P7c'", m(S.SUCCEEDED), obs("ACTIVE", OLD, "rebuilding"), NEW, Action.WAIT, m(S.SUCCEEDED)),
    ("P7d", m(S.INITIATED), obs("ACTIVE", OLD, "rebooting"), NEW, Action.WAIT, m(S.INITIATED)),
    ("P7e", m(S.INITIATED), obs("ACTIVE", OLD), NEW, Action.SUBMIT, m(S.INITIATED)),
    ("P7e", m(S.INITIATED), obs("SHUTOFF", OLD), NEW, Action.SUBMIT, m(S.INITIATED)),
    ("P7e", m(S.INITIATED), obs("ERROR", OLD), NEW, Action.SUBMIT, m(S.INITIATED)),  # intent, not a park
]

# P2 (docs/resize.md): an un-settled resize marker blocks arming a rebuild, never one already armed.
RESIZE_BUSY_ROWS = [
    ("P2", None, obs("ACTIVE", OLD), NEW, Action.WAIT, None),
    ("P2", m(S.SUCCEEDED, OTHER), obs("ACTIVE", OTHER), NEW, Action.WAIT, m(S.SUCCEEDED, OTHER)),
    ("P6", None, obs("ACTIVE", NEW), NEW, Action.DONE, None),
    ("P7e", m(S.INITIATED), obs("ACTIVE", OLD), NEW, Action.SUBMIT, m(S.INITIATED)),
]


@pytest.mark.parametrize(
    ("rule", "marker", "read", "desired", "action", "after"),
    RESIZE_BUSY_ROWS,
    ids=[f"{r[0]}-resize-busy-{i}" for i, r in enumerate(RESIZE_BUSY_ROWS)],
)
def test_reconcile_rule_while_a_resize_is_unsettled(
    rule: str,
    marker: RebuildMarker | None,
    read: Observation,
    desired: str | None,
    action: Action,
    after: RebuildMarker | None,
) -> None:
    decision = reconcile_pass(marker, read, desired, resize_busy=True)
    assert (decision.rule, decision.action, decision.marker) == (rule, action, after)


@pytest.mark.parametrize(
    ("rule", "marker", "read", "desired", "action", "after"),
    PASS_ROWS,
    ids=[f"{r[0]}-{i}" for i, r in enumerate(PASS_ROWS)],
)
def test_reconcile_rule(
    rule: str,
    marker: RebuildMarker | None,
    read: Observation,
    desired: str | None,
    action: Action,
    after: RebuildMarker | None,
) -> None:
    decision = reconcile_pass(marker, read, desired)
    assert (decision.rule, decision.action, decision.marker) == (rule, action, after)


def test_preboot_wait_rechecks_every_ten_seconds() -> None:
    decision = reconcile_pass(None, obs("BUILD", OLD, "spawning", launched=None), NEW)
    assert decision.recheck_seconds == 10.0 and decision.step == "P7a: waiting for first boot"


def test_submit_never_when_the_ref_already_equals_the_target() -> None:
    # Whatever the marker and status, a read showing the target never yields a submit.
    for marker in (None, m(S.INITIATED), m(S.REBUILDING), m(S.SUCCEEDED)):
        for status, task in (("ACTIVE", None), ("REBUILD", "rebuilding"), ("SHUTOFF", None)):
            assert reconcile_pass(marker, obs(status, NEW, task), NEW).action is not Action.SUBMIT
