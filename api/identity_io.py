"""The Identity's messages and activities: how cloud resources use an Identity, and how it issues credentials.

Pure pydantic: workflows import it inside Temporal's sandbox. No secret value ever appears here: a credential
travels as a `Credential` — the Secret's name and resourceVersion and the project its token must be scoped
to — and only activities read the Secret (activities/identity.py writes it, activities/cloud.py reads it).

The use protocol (docs/identity.md): a Volume, LoadBalancer or Server that names an Identity signals `use` to
the Identity's workflow before any cloud call and waits for its `answer`; the Identity records it as a user
(the deletion guard) and answers with the current credential, and again unasked whenever that changes (a
rotation, the Identity being deleted). Deleting the resource signals `release`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from osprov.api.activity import Activity

SIGNAL_USE = "identity_use"
SIGNAL_RELEASE = "identity_release"
SIGNAL_ANSWER = "identity_answer"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Credential(_Model):
    """Where an Identity's current application credential is, never what it is."""

    identity: str  # the Identity's name (same namespace as its users)
    namespace: str
    secret: str  # the Secret's name
    version: str  # the Secret's resourceVersion as the Identity wrote it (the connection cache key)
    project_id: str  # tokens must be scoped to this project, or the activity refuses the credential


class ProjectInfo(_Model):
    id: str
    name: str
    domain: str


class IdentityUser(_Model):
    """A resource that uses an Identity (same namespace), and where its answers go."""

    workflow_id: str
    kind: str
    name: str
    uid: str

    @property
    def label(self) -> str:
        return f"{self.kind}/{self.name}"


class IdentityUse(_Model):
    user: IdentityUser
    seq: int  # echoed in the answer: the user waits for the answer to its latest use


class IdentityRelease(_Model):
    user: IdentityUser


AnswerOutcome = Literal["ready", "pending", "refused"]


class IdentityAnswer(_Model):
    """ready: act with `credential` in `project`; pending: not yet (message says why); refused: never (the
    Identity is being deleted and this resource is not one of its users)."""

    identity_uid: str
    seq: int
    outcome: AnswerOutcome
    message: str
    backed: bool  # the Identity's project exists: cloud objects may have been made in it
    project: ProjectInfo | None = None
    credential: Credential | None = None


# --- activities ---------------------------------------------------------------------------------------------
class FindIdentity(_Model):
    namespace: str
    name: str


class IdentityFound(_Model):
    exists: bool
    uid: str | None = None
    deleting: bool = False


class SecretTarget(_Model):
    """The credential Secret: owned by the Identity (ownerReference), so it goes when the Identity goes."""

    namespace: str
    name: str
    owner_name: str  # the Identity
    owner_uid: str


class IssueCredential(_Model):
    """Create-if-absent by name an application credential of the user, limited to `roles` on the project,
    and publish it in the Secret. Only the activity ever sees the credential's secret."""

    user_id: str
    project_id: str
    name: str
    roles: list[str]
    expires_at: datetime
    secret: SecretTarget
    description: str = ""


class IssuedCredential(_Model):
    id: str
    name: str
    expires_at: datetime
    secret_version: str  # resourceVersion of the Secret that holds it


class CheckSecret(_Model):
    secret: SecretTarget
    credential_id: str


class SecretCheck(_Model):
    """holds: the Secret exists, is this Identity's and holds that credential; version: its resourceVersion."""

    holds: bool
    version: str | None = None


class RevokeCredential(_Model):
    user_id: str
    credential_id: str


class DeleteKeypair(_Model):
    """The Identity's Nova keypair identity-{uid} (made by a Server's identityKeypair create), deleted as its own
    user: `credential` is the Identity's current one, still valid (teardown revokes it after this)."""

    credential: Credential
    identity_uid: str


class CheckUsers(_Model):
    namespace: str
    users: list[IdentityUser]


FIND_IDENTITY: Activity[FindIdentity, IdentityFound] = Activity(
    "identity.find_identity", FindIdentity, IdentityFound
)
ISSUE_CREDENTIAL: Activity[IssueCredential, IssuedCredential] = Activity(
    "identity.issue_credential", IssueCredential, IssuedCredential
)
CHECK_SECRET: Activity[CheckSecret, SecretCheck] = Activity("identity.check_secret", CheckSecret, SecretCheck)
REVOKE_CREDENTIAL: Activity[RevokeCredential, bool] = Activity(
    "identity.revoke_credential", RevokeCredential, bool
)
DELETE_KEYPAIR: Activity[DeleteKeypair, bool] = Activity("identity.delete_keypair", DeleteKeypair, bool)
# The users that still exist (a resource deleted without its workflow releasing the Identity is dropped).
LIVING_USERS: Activity[CheckUsers, list[IdentityUser]] = Activity(
    "identity.living_users", CheckUsers, list[IdentityUser]
)
