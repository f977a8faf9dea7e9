"""Identity (identity.osh.openstack.org/v1alpha1): the seed's OpenstackIdentity — a project, a user and an
application credential a namespace's cloud resources act with.

Its own API group, not keystone.osh.openstack.org: the Keystone kinds act with the controller's admin
authority and are the operator's (docs/security.md: creating a RoleAssignment must be guarded like the admin
secret), while an Identity is what a tenant may create in its own namespace — it gets a fresh project in the
domain the operator mapped to that namespace, with only the managed roles. Separate groups let cluster RBAC
grant tenants `identity`, `cinder`, `octavia` and `nova` without ever granting them `keystone`. Contract:
docs/identity.md; the lifecycle table: workflows/identity_decisions.py.
"""

from __future__ import annotations

from datetime import timedelta
from enum import StrEnum
from typing import Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from osprov.api.common import (
    DNS_SUBDOMAIN_PATTERN,
    DURATION_PATTERN,
    CamelModel,
    CommonSpec,
    Condition,
    DeletionPolicy,
    K8sTime,
    ManagementPolicy,
    StatusModel,
    parse_duration,
)
from osprov.api.limits import immutable_if_set

IDENTITY_GROUP = "identity.osh.openstack.org"

MIN_LIFETIME = timedelta(minutes=1)
LIFETIME_RULE = "duration(self) >= duration('1m')"
LIFETIME_MESSAGE = "credential.lifetime must be a Go duration of at least 1m, such as 720h"
ROTATE_RULE = "!has(self.rotateBefore) || duration(self.rotateBefore) < duration(self.lifetime)"
ROTATE_MESSAGE = "credential.rotateBefore must be shorter than credential.lifetime"
SSH_KEY_IMMUTABLE_MESSAGE = (
    "spec.sshPublicKey cannot change once set: servers made with it keep it (Nova injects a key at create "
    "only); create a new Identity"
)
# OpenSSH public key line: type, base64 blob, optional comment (Nova parses the blob itself).
SSH_PUBLIC_KEY_PATTERN = (
    r"^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp256|ecdsa-sha2-nistp384|ecdsa-sha2-nistp521) "
    r"[A-Za-z0-9+/]+={0,2}( [^\x00-\x1f\x7f]*)?$"
)


def keypair_name(uid: str) -> str:
    """The Nova keypair of the Identity with this UID (its user's; found again by name)."""
    return f"identity-{uid}"


SECRET_NAME_IMMUTABLE_MESSAGE = (
    "spec.secretName cannot change: the credential Secret keeps its name; create a new Identity"
)


def object_name(uid: str) -> str:
    """The Keystone project and user of the Identity with this UID (deterministic: found again by name)."""
    return f"osprov-{uid}"


def credential_name(uid: str, serial: int) -> str:
    """The application credential number `serial` of that user (a rotation makes the next one)."""
    return f"{object_name(uid)}-{serial}"


def default_secret_name(name: str) -> str:
    return f"{name}-openstack"


class IdentityReason(StrEnum):
    """Reasons of an Identity's Ready condition."""

    PROVISIONED = "Provisioned"  # project, user, grants and a current credential in the Secret
    PROVISIONING = "Provisioning"
    FORBIDDEN = "Forbidden"  # the operator's tenancy mapping gives this namespace no managed domain
    CONFLICT = "Conflict"  # an object it needs exists but osprov did not make it
    IN_USE = "InUse"  # deleting: waits until no resource uses it
    DEPROVISIONING = "Deprovisioning"


class CredentialSpec(CamelModel):
    """The application credential: how long one lives and when the next one replaces it."""

    lifetime: str = Field(
        default="720h",
        pattern=DURATION_PATTERN,
        description="How long each application credential is valid, as a Go duration (at least 1m). "
        "Default 720h (30 days).",
        json_schema_extra={
            "x-kubernetes-validations": [{"rule": LIFETIME_RULE, "message": LIFETIME_MESSAGE}]
        },
    )
    rotate_before: str | None = Field(
        default=None,
        pattern=DURATION_PATTERN,
        description="Make and publish the next credential this long before the current one expires. "
        "Unset: a third of the lifetime.",
    )
    overlap: str = Field(
        default="5m",
        pattern=DURATION_PATTERN,
        description="How long the previous credential stays valid after the next one is in the Secret, so "
        "consumers (mounted Secrets are refreshed by the kubelet) pick it up first. Default 5m.",
    )

    model_config = ConfigDict(
        json_schema_extra={"x-kubernetes-validations": [{"rule": ROTATE_RULE, "message": ROTATE_MESSAGE}]}
    )

    @field_validator("lifetime")
    @classmethod
    def _lifetime(cls, value: str) -> str:
        if parse_duration(value) < MIN_LIFETIME:
            raise ValueError(LIFETIME_MESSAGE)
        return value

    @model_validator(mode="after")
    def _rotate_before_lifetime(self) -> CredentialSpec:
        if self.rotate_before is not None and parse_duration(self.rotate_before) >= self.lifetime_delta():
            raise ValueError(ROTATE_MESSAGE)
        return self

    def lifetime_delta(self) -> timedelta:
        return parse_duration(self.lifetime)

    def rotate_before_delta(self) -> timedelta:
        if self.rotate_before is not None:
            return parse_duration(self.rotate_before)
        return self.lifetime_delta() / 3

    def overlap_delta(self) -> timedelta:
        return parse_duration(self.overlap)


class IdentitySpec(CommonSpec):
    """A project and a user (osprov-{metadata.uid}) in the managed domain the operator maps to this namespace,
    the managed roles on that project, and an application credential in a Secret of this namespace."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                immutable_if_set("secretName", SECRET_NAME_IMMUTABLE_MESSAGE),
                # May be added to an Identity made without one; never changed or removed.
                {
                    "rule": "!has(oldSelf.sshPublicKey) || (has(self.sshPublicKey) && "
                    "self.sshPublicKey == oldSelf.sshPublicKey)",
                    "message": SSH_KEY_IMMUTABLE_MESSAGE,
                    "fieldPath": ".sshPublicKey",
                },
            ]
        }
    )

    management_policy: Literal[ManagementPolicy.MANAGED] = Field(
        default=ManagementPolicy.MANAGED,
        description="Always managed: an Identity creates its own project, user and application credential, "
        "so there is nothing existing to observe (unmanaged is refused at admission).",
    )
    deletion_policy: Literal[DeletionPolicy.DELETE] = Field(
        default=DeletionPolicy.DELETE,
        description="Always delete: deleting the Identity (once no resource uses it) revokes its credentials "
        "and deletes its user and project.",
    )
    secret_name: str | None = Field(
        default=None,
        min_length=1,
        max_length=253,
        pattern=DNS_SUBDOMAIN_PATTERN,
        description="The Secret (in this namespace) the application credential is published in: clouds.yaml "
        "and OS_* keys. Unset: <metadata.name>-openstack. Immutable.",
    )
    credential: CredentialSpec = Field(
        default_factory=CredentialSpec, description="Lifetime and rotation of the application credential."
    )

    ssh_public_key: str | None = Field(
        default=None,
        max_length=16384,
        pattern=SSH_PUBLIC_KEY_PATTERN,
        description="OpenSSH public key (one line) of the Nova keypair identity-{metadata.uid} that Servers "
        "with spec.ssh.mode identityKeypair boot with; made with the Identity's own credential (a keypair "
        "of its user). Only the public half: osprov never makes or keeps a private key. Immutable.",
    )

    def secret(self, name: str) -> str:
        return self.secret_name or default_secret_name(name)


class IdentityStatus(StatusModel):
    observed_generation: int | None = Field(
        default=None, ge=0, description="metadata.generation last reconciled."
    )
    conditions: list[Condition] = Field(
        default_factory=list,
        description="Ready (Provisioned | Provisioning | Forbidden | Conflict | InUse | Deprovisioning | "
        "ReconcileError) with a user-safe message.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    domain: str | None = Field(default=None, description="The managed Keystone domain it lives in.")
    project_id: str | None = Field(default=None, alias="projectID", description="ID of its Keystone project.")
    user_id: str | None = Field(default=None, alias="userID", description="ID of its Keystone user.")
    secret_name: str | None = Field(
        default=None, description="The Secret holding the application credential."
    )
    credential_id: str | None = Field(
        default=None,
        alias="credentialID",
        description="ID of the current application credential (not secret).",
    )
    credential_expires_at: K8sTime | None = Field(
        default=None, description="When the current application credential expires."
    )
    users: list[str] | None = Field(
        default=None, description="Resources (Kind/name, this namespace) that use this Identity."
    )
