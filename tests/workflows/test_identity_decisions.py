"""The Identity decision tables (workflows/identity_decisions.py's docstring), one row per rule by label.

Pure functions, no Temporal; test_identity.py proves the workflow executes these decisions.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from osprov.api.identity import IdentityReason
from osprov.api.identity_io import IdentityUser, SecretCheck
from osprov.api.ownership import ObjectKey, ObjectResult
from osprov.api.state import IssuedRecord
from osprov.workflows.identity_decisions import (
    DeleteKeypair,
    Facts,
    Gone,
    InUse,
    Issue,
    ReadSecret,
    ReadUsers,
    Ready,
    Refuse,
    Release,
    Revoke,
    Teardown,
    converge,
    revoke_time,
    teardown,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)
LIFETIME, ROTATE_BEFORE = timedelta(hours=720), timedelta(hours=240)
ROLES = ("member", "load-balancer_member")


def result(kind: str, origin: str = "created") -> ObjectResult:
    key = ObjectKey(kind=kind, domain="tenants", name="osprov-u1")
    return ObjectResult(key=key, seq=1, outcome="ready", message="", id=f"{kind}-id", origin=origin)  # type: ignore[arg-type]


def record(serial: int = 1, expires: datetime = NOW + LIFETIME, **extra: object) -> IssuedRecord:
    fields = {"roles": list(ROLES), "secret_version": "7"} | extra
    return IssuedRecord(
        id=f"ac-{serial}", name=f"osprov-u1-{serial}", serial=serial, expires_at=expires, **fields
    )  # type: ignore[arg-type]


BASE = Facts(
    now=NOW,
    full=False,
    project=result("project"),
    user=result("user"),
    roles=ROLES,
    current=record(),
    retiring=(),
    lifetime=LIFETIME,
    rotate_before=ROTATE_BEFORE,
)


def test_i1_an_object_osprov_did_not_make_is_never_taken_over() -> None:
    for facts in (
        replace(BASE, project=result("project", "found")),
        replace(BASE, user=result("user", "found")),
    ):
        d = converge(facts)
        assert d.rule == "I1" and isinstance(d.action, Refuse)
        assert d.action.reason == IdentityReason.CONFLICT and "did not make it" in d.action.message


def test_i2_no_credential_yet_issues_the_first() -> None:
    d = converge(replace(BASE, current=None))
    assert d.rule == "I2" and d.action == Issue(serial=1, expires_at=NOW + LIFETIME)


def test_i2_serial_follows_retiring_ones() -> None:
    d = converge(replace(BASE, current=None, retiring=(record(4, revoke_at=NOW + timedelta(hours=1)),)))
    assert d.rule == "I2" and isinstance(d.action, Issue) and d.action.serial == 5


def test_i3_a_full_pass_reads_the_secret() -> None:
    d = converge(replace(BASE, full=True))
    assert d.rule == "I3" and isinstance(d.action, ReadSecret)


def test_i4_a_secret_that_lost_the_credential_gets_the_next_one() -> None:
    d = converge(replace(BASE, full=True, secret=SecretCheck(holds=False)))
    assert d.rule == "I4" and d.action == Issue(serial=2, expires_at=NOW + LIFETIME)


def test_i5_changed_roles_issue_the_next_credential() -> None:
    d = converge(replace(BASE, roles=("member",)))
    assert d.rule == "I5" and isinstance(d.action, Issue) and d.action.serial == 2


def test_i6_a_due_credential_is_rotated() -> None:
    due = replace(BASE, now=NOW + LIFETIME - ROTATE_BEFORE)
    d = converge(due)
    assert d.rule == "I6" and d.action == Issue(serial=2, expires_at=due.now + LIFETIME)
    assert converge(replace(due, now=due.now - timedelta(seconds=1))).rule == "I8"


def test_i7_a_retired_credential_is_revoked_when_its_time_comes() -> None:
    retired = record(0, revoke_at=NOW)
    d = converge(replace(BASE, retiring=(retired,)))
    assert d.rule == "I7" and d.action == Revoke(retired)
    later = replace(BASE, retiring=(record(0, revoke_at=NOW + timedelta(minutes=5)),))
    assert converge(later).rule == "I8"


def test_i8_ready_wakes_at_the_next_rotation_or_revocation() -> None:
    d = converge(BASE)
    assert d.rule == "I8" and isinstance(d.action, Ready)
    assert d.action.wake_at == NOW + LIFETIME - ROTATE_BEFORE and "#1" in d.action.message
    soon = NOW + timedelta(minutes=5)
    d = converge(replace(BASE, retiring=(record(0, revoke_at=soon),)))
    assert isinstance(d.action, Ready) and d.action.wake_at == soon


def test_i8_a_full_pass_whose_secret_holds_the_credential_is_ready() -> None:
    d = converge(replace(BASE, full=True, secret=SecretCheck(holds=True, version="7")))
    assert d.rule == "I8"


def test_revoke_time_is_overlap_after_publishing_at_most_the_expiry() -> None:
    overlap = timedelta(minutes=5)
    assert revoke_time(record(), NOW, overlap) == NOW + overlap
    assert revoke_time(record(expires=NOW + timedelta(minutes=1)), NOW, overlap) == NOW + timedelta(minutes=1)


USER = IdentityUser(workflow_id="Volume/ns/data/u2", kind="Volume", name="data", uid="u2")
DOWN = Teardown(users=(), users_read=False, current=record(), retiring=(), claimed=True)


def test_x1_recorded_users_are_read_first() -> None:
    d = teardown(replace(DOWN, users=(USER,)))
    assert d.rule == "X1" and d.action == ReadUsers((USER,))


def test_x2_living_users_hold_the_deletion() -> None:
    d = teardown(replace(DOWN, users=(USER,), users_read=True))
    assert d.rule == "X2" and isinstance(d.action, InUse) and "Volume/data" in d.action.message


def test_x6_the_keypair_goes_first_while_the_current_credential_still_works() -> None:
    d = teardown(replace(DOWN, keypair=True, retiring=(record(0, revoke_at=NOW),)))
    assert d.rule == "X6" and isinstance(d.action, DeleteKeypair)
    assert teardown(replace(DOWN, keypair=True, users=(USER,), users_read=True)).rule == "X2"  # users first
    # No credential left: no token of its user could delete it (none could have made it either).
    assert teardown(replace(DOWN, keypair=True, current=None)).rule == "X4"


def test_x3_credentials_are_revoked_retired_first() -> None:
    retired = record(0, revoke_at=NOW)
    d = teardown(replace(DOWN, retiring=(retired,)))
    assert d.rule == "X3" and d.action == Revoke(retired)
    d = teardown(DOWN)
    assert d.rule == "X3" and d.action == Revoke(record())


def test_x4_claims_are_released_with_delete() -> None:
    d = teardown(replace(DOWN, current=None))
    assert d.rule == "X4" and isinstance(d.action, Release)


def test_x5_nothing_left_is_done() -> None:
    d = teardown(replace(DOWN, current=None, claimed=False))
    assert d.rule == "X5" and isinstance(d.action, Gone)
