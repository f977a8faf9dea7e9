"""The Identity's lifecycle as pure decision tables (docs/identity.md; one test row each in
tests/workflows/test_identity_decisions.py).

No I/O and no Temporal: workflows/identity.py asks `converge` or `teardown` for the next step, executes it,
folds the result into the facts and asks again until a decision ends the pass. The project, the user and
the grants are claimed before `converge` is asked (the ownership path, workflows/keystone/common.py): a
namespace the operator's mapping gives no managed domain is refused before anything is claimed (I0,
reason Forbidden), and an object still being made or waiting for a dependency ends the pass there.

Converge (reconcile), once every claim is answered:
  I1 the project or the user existed before (osprov did not make it) -> Conflict: never taken over
  I2 no credential yet                        -> issue #1: create it as the user, publish it in the Secret
  I3 full pass, Secret not read this pass     -> read whether the Secret still holds the current credential
  I4 the Secret lost or changed it            -> issue the next one (the current one retires)
  I5 the managed roles changed                -> issue the next one (a credential's roles are fixed)
  I6 the current one is due (expiry - rotateBefore) -> issue the next one (the current one retires)
  I7 a retired one's revoke time has come     -> revoke it (it was replaced `overlap` ago, or expires now)
  I8 otherwise                                -> Ready; the loop wakes at the next rotation or revocation
A retiring credential is revoked `overlap` after its successor was published (never later than its own
expiry): the new one is in the Secret, and the users were told, before the old one stops working.

Teardown (finalize):
  X1 users recorded, not read this pass       -> read which of them still exist (drop the others)
  X2 users remain                             -> InUse, listed in the status; re-checked (and woken by a release)
  X6 spec.sshPublicKey, keypair not deleted    -> delete the Nova keypair identity-{uid} as the Identity's user, with
                                                 its current credential (so before X3; Nova keeps a deleted user's
                                                 keypairs, and no other token can delete it)
  X3 a credential not revoked                 -> revoke it (retired ones first)
  X4 claims held                              -> release them with delete: grants, user, project go
  X5                                          -> done: the finalizer goes, the Secret with the Identity
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from osprov.api.identity import IdentityReason
from osprov.api.identity_io import IdentityUser, SecretCheck
from osprov.api.ownership import ObjectResult
from osprov.api.state import IssuedRecord


# --- converge ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Facts:
    now: datetime
    full: bool  # the spec changed or the resync is due: the Secret is read
    project: ObjectResult
    user: ObjectResult
    roles: tuple[str, ...]  # the managed roles now (the operator's mapping)
    current: IssuedRecord | None
    retiring: tuple[IssuedRecord, ...]
    lifetime: timedelta
    rotate_before: timedelta
    secret: SecretCheck | None = None  # this pass's read of the Secret (None: not read)


@dataclass(frozen=True)
class Issue:
    """Make credential number `serial`, valid until `expires_at`, and publish it."""

    serial: int
    expires_at: datetime


@dataclass(frozen=True)
class ReadSecret:
    """Does the Secret still hold the current credential?"""


@dataclass(frozen=True)
class Revoke:
    record: IssuedRecord


@dataclass(frozen=True)
class Ready:
    message: str
    wake_at: datetime | None  # the next rotation or revocation


@dataclass(frozen=True)
class Refuse:
    message: str
    reason: IdentityReason


@dataclass(frozen=True)
class Decision:
    rule: str
    action: Issue | ReadSecret | Revoke | Ready | Refuse
    what: str  # a sentence: the step and the call's summary

    @property
    def step(self) -> str:
        return f"{self.rule}: {self.what}"


def rotation_due(record: IssuedRecord, rotate_before: timedelta) -> datetime:
    return record.expires_at - rotate_before


def revoke_time(retired: IssuedRecord, published: datetime, overlap: timedelta) -> datetime:
    """When a replaced credential is revoked: `overlap` after its successor was published, at the latest
    when it expires anyway."""
    return min(published + overlap, retired.expires_at)


def converge(f: Facts) -> Decision:
    for result in (f.project, f.user):
        if result.origin != "created":
            message = (
                f"{result.key} existed before this Identity and osprov did not make it: it never takes over an "
                "object it did not create; an operator must remove it"
            )
            return Decision("I1", Refuse(message, IdentityReason.CONFLICT), f"{result.key} is not osprov's")
    serial = max([f.current.serial if f.current else 0, *(r.serial for r in f.retiring)]) + 1
    issue = Issue(serial, f.now + f.lifetime)
    if f.current is None:
        return Decision("I2", issue, f"issue application credential #{serial} and publish it in the Secret")
    if f.full and f.secret is None:
        return Decision("I3", ReadSecret(), "check that the Secret still holds the current credential")
    if f.secret is not None and not f.secret.holds:
        return Decision("I4", issue, f"the Secret lost the current credential: issue #{serial}")
    if sorted(f.roles) != sorted(f.current.roles):
        return Decision("I5", issue, f"the managed roles changed: issue #{serial} with them")
    due = rotation_due(f.current, f.rotate_before)
    if f.now >= due:
        return Decision("I6", issue, f"credential #{f.current.serial} is due for rotation: issue #{serial}")
    for retired in f.retiring:
        if retired.revoke_at is not None and f.now >= retired.revoke_at:
            return Decision("I7", Revoke(retired), f"revoke the replaced credential #{retired.serial}")
    wakes = [due, *(r.revoke_at for r in f.retiring if r.revoke_at is not None)]
    message = (
        f"project, user, roles and application credential #{f.current.serial} (expires "
        f"{f.current.expires_at:%Y-%m-%d %H:%M}Z) are ready"
    )
    return Decision("I8", Ready(message, min(wakes)), "ready")


# --- teardown ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Teardown:
    users: tuple[IdentityUser, ...]
    users_read: bool  # this pass read which users still exist
    current: IssuedRecord | None
    retiring: tuple[IssuedRecord, ...]
    claimed: bool  # claims on the project, user or grants are still held
    keypair: bool = False  # X6 applies: the Identity has spec.sshPublicKey and its keypair is not deleted yet


@dataclass(frozen=True)
class ReadUsers:
    users: tuple[IdentityUser, ...]


@dataclass(frozen=True)
class InUse:
    message: str


@dataclass(frozen=True)
class DeleteKeypair:
    """X6: the Identity's Nova keypair, deleted with its current credential."""


@dataclass(frozen=True)
class Release:
    """Release every claim with deletionPolicy delete (the objects' workflows delete what osprov made)."""


@dataclass(frozen=True)
class Gone:
    """Nothing left: the finalizer goes."""


@dataclass(frozen=True)
class TeardownDecision:
    rule: str
    action: ReadUsers | InUse | DeleteKeypair | Revoke | Release | Gone
    what: str

    @property
    def step(self) -> str:
        return f"{self.rule}: {self.what}"


def teardown(t: Teardown) -> TeardownDecision:
    if t.users and not t.users_read:
        return TeardownDecision(
            "X1", ReadUsers(t.users), "check which resources using the Identity still exist"
        )
    if t.users:
        labels = ", ".join(sorted(u.label for u in t.users))
        message = (
            f"deletion waits for {len(t.users)} resource(s) that use this Identity: {labels}; delete them "
            "(or point them elsewhere) and the Identity goes"
        )
        return TeardownDecision("X2", InUse(message), f"in use by {labels}")
    if t.keypair and t.current is not None:
        return TeardownDecision("X6", DeleteKeypair(), "delete the Identity's Nova keypair (as its user)")
    for record in (*t.retiring, *([t.current] if t.current else [])):
        return TeardownDecision("X3", Revoke(record), f"revoke application credential #{record.serial}")
    if t.claimed:
        return TeardownDecision("X4", Release(), "release the project, user and grants (osprov deletes them)")
    return TeardownDecision("X5", Gone(), "the project, user and credentials are gone")
