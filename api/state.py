"""Each kind's own workflow state: typed, carried across continue-as-new, shown by the `state` query.

Pure pydantic (workflows import it inside Temporal's sandbox). Runs started before typed state kept these
values in two dicts (`ids`, `extra`) under the keys named in each field's `validation_alias`; the entity
loop folds those dicts into the kind's model, so a running workflow continues with the same values.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from osprov.api.identity_io import IdentityAnswer, IdentityUser
from osprov.api.keystone_io import Grant
from osprov.api.nova import RebuildMarker, ResizeMarker, ServerPhase, ServerVolumeStatus
from osprov.api.ownership import ObjectKey, ObjectResult
from osprov.api.vlan_io import Grant as VlanGrant


class KindState(BaseModel):
    """Base of every kind's state: field names in Python, the legacy dict keys accepted too."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")


# --- Keystone kinds ------------------------------------------------------------------------------------


class ClaimsState(KindState):
    """What a Keystone kind's resource claimed from the objects' workflows (api/ownership.py)."""

    claimed: dict[str, ObjectKey] = Field(default_factory=dict)  # object path -> key
    results: dict[str, ObjectResult] = Field(default_factory=dict)  # object path -> its latest answer
    seq: int = 0  # of the latest claim sent
    upgraded: bool = False  # this run took the ownership path (runs started before it keep the old one)
    held: bool = False  # paused: its objects were told (the sweep does not wake them for it)
    # The claims (digest) whose answer timed out, and since when: a retry waits for that answer instead
    # of claiming again (workflows/keystone/common.py _claim).
    late: str | None = None
    late_since: datetime | None = None
    # The claims (digest) sent with `seq` and the desired state (fingerprint) they were sent for: answers
    # to those very claims that come later on their own answer a pass too (common.py _claim).
    sent: str | None = None


class KeystoneState(ClaimsState):
    """Domain, Project, Role, Group, User, Service: the Keystone ID the resource resolved to."""

    id: str | None = Field(
        default=None,
        validation_alias=AliasChoices(
            "id", "domainID", "projectID", "roleID", "groupID", "userID", "serviceID"
        ),
    )


class EndpointState(ClaimsState):
    endpoint_ids: dict[str, str] = Field(
        default_factory=dict, validation_alias=AliasChoices("endpoint_ids", "endpointIDs")
    )


class RoleAssignmentState(ClaimsState):
    grant: Grant | None = None  # runs before ownership: the grant this workflow made


# --- Identity --------------------------------------------------------------------------------------------


class IssuedRecord(BaseModel):
    """An application credential the Identity made (its ID and dates: never its secret)."""

    id: str
    name: str
    serial: int
    roles: list[str] = Field(default_factory=list)  # what it may do (fixed when it is made)
    expires_at: datetime
    secret_version: str  # resourceVersion of the Secret that published it
    revoke_at: datetime | None = None  # retiring (a newer one is published): revoked at this time


class IdentityState(ClaimsState):
    domain: str | None = None  # the managed domain the operator's mapping gave its namespace (kept once used)
    secret_name: str | None = None
    roles: list[str] = Field(default_factory=list)  # the managed roles its user gets on its project
    project_id: str | None = None
    user_id: str | None = None
    current: IssuedRecord | None = None  # the credential in the Secret
    retiring: list[IssuedRecord] = Field(default_factory=list)  # replaced, revoked at their revoke_at
    serial: int = 0  # of the latest credential made
    secret_checked: bool = False  # this pass confirmed the Secret holds the current credential
    users: dict[str, IdentityUser] = Field(default_factory=dict)  # workflow ID -> resource using it
    answered: dict[str, IdentityAnswer] = Field(default_factory=dict)  # workflow ID -> last answer sent
    asked: dict[str, int] = Field(default_factory=dict)  # workflow ID -> seq of its latest use to answer
    keypair_deleted: bool = False  # X6 ran (its Nova keypair is gone)


# --- cloud kinds: where their objects live --------------------------------------------------------------


class TenancyState(BaseModel):
    """A cloud resource's Identity (its latest answer) and whether this run checks the tenancy mapping."""

    enforced: bool = False  # this run checks the mapping before any cloud call (runs from before replay)
    identity_uid: str | None = None  # the Identity the answer is from
    seq: int = 0  # of the latest use sent
    answer: IdentityAnswer | None = None
    asked_at: datetime | None = None  # when the latest use was sent (re-sent once per resync interval)


class CloudKindState(KindState):
    """Base of the cloud kinds' state."""

    tenancy: TenancyState = Field(default_factory=TenancyState)


# --- Cinder ---------------------------------------------------------------------------------------------


class VolumeState(CloudKindState):
    volume_id: str | None = Field(default=None, validation_alias=AliasChoices("volume_id", "volumeID"))
    size: int | None = None
    polls: int = Field(
        default=0, validation_alias=AliasChoices("polls", "cinder_polls")
    )  # waiting passes in a row


# --- Octavia --------------------------------------------------------------------------------------------


class LoadBalancerState(CloudKindState):
    load_balancer_id: str | None = Field(
        default=None, validation_alias=AliasChoices("load_balancer_id", "loadBalancerID")
    )
    vip_address: str | None = Field(default=None, validation_alias=AliasChoices("vip_address", "vipAddress"))
    public_ip: str | None = Field(default=None, validation_alias=AliasChoices("public_ip", "publicIP"))
    realised: bool = False  # something may exist in the cloud: deletion must look
    waits: int = 0  # passes in a row spent waiting on Octavia (the wait backoff exponent)


# --- Nova -----------------------------------------------------------------------------------------------


class ServerState(CloudKindState):
    server_id: str | None = Field(default=None, validation_alias=AliasChoices("server_id", "serverID"))
    rebuild: RebuildMarker | None = None  # the write-ahead rebuild intent (rebuild.md: "the marker")
    phase: ServerPhase | None = None
    launched_at: str | None = Field(default=None, validation_alias=AliasChoices("launched_at", "launchedAt"))
    mac_address: str | None = Field(default=None, validation_alias=AliasChoices("mac_address", "macAddress"))
    volumes: list[ServerVolumeStatus] | None = None  # status.volumes rows, once attachments were reconciled
    attached: list[str] = Field(default_factory=list)  # Volume names this server holds (what may be detached)
    creates: int = 0  # servers created for `creates_generation` (bounded recreate of a pre-boot failure)
    creates_generation: int | None = None
    deleting: str | None = None  # ID of a failed pre-boot server being deleted before the recreate
    parked: bool = False  # P4a: the rebuild failed; waiting for a new image
    step: str | None = None  # the decision a requeued pass waits on (shown instead of "idle")
    waits: int = 0  # re-checks in a row while waiting on Nova (the wait backoff exponent)
    delete_sent: list[str] = Field(default_factory=list)  # IDs finalize asked Nova to delete (sent once)
    offered_image: str | None = None  # the last spec.imageID found offered by the region inventory
    resize: ResizeMarker | None = None  # the write-ahead resize intent (resize.md: "the marker")
    flavor: str | None = None  # flavor name of the latest read (status.flavor)
    flavor_ref: str | None = None  # the spec.flavor last resolved to a name (an ID or a name) ...
    flavor_name: str | None = None  # ... and that name (resolved once per spec.flavor value)
    resize_parked: bool = False  # Z1: the resize failed; waiting for a new flavor


# --- Neutron --------------------------------------------------------------------------------------------


class NetworkState(CloudKindState):
    network_id: str | None = None
    subnet_id: str | None = None
    router_id: str | None = None
    segmentation_id: int | None = None  # a provider network's VLAN ID, once the allocator granted it
    vlan_seq: int = 0  # of the latest allocation request sent
    grant: VlanGrant | None = None  # the allocator's latest answer


# --- Neutron security groups ------------------------------------------------------------------------------


class SecurityGroupState(CloudKindState):
    security_group_id: str | None = None
    rule_count: int | None = None
    waits: int = 0  # passes in a row spent waiting (a delete refused while ports use the group)
