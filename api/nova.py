"""Server (nova.osh.openstack.org/v1alpha1): a Nova server, its health, volume attachments and image rebuilds.

Contracts: ../shared/spec/rebuild.md and volumes.md ("Server attachments"). Changing spec.imageID on a booted
server rebuilds it (at most once per target image); keypair and userData are create-time parameters that Nova
keeps on rebuild, so the CRD rejects changes to them rather than accepting and ignoring them. Resizing is not
supported, so the flavor is immutable.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Self

from pydantic import ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from osprov.api.common import (
    CLOUD_SPEC_RULES,
    DNS_SUBDOMAIN_PATTERN,
    CamelModel,
    CloudSpec,
    CloudStatus,
    Condition,
    K8sTime,
    StatusModel,
)
from osprov.api.limits import KeypairName, Tags, UserData, immutable_if_set

NOVA_GROUP = "nova.osh.openstack.org"
HEALTHY = "Healthy"  # the Server's second condition type, next to Available
DEVICE_PATTERN = r"^/dev/[a-z0-9]+$"
# A SecurityGroup resource's name (neutron.osh.openstack.org) in the Server's namespace.
SecurityGroupName = Annotated[str, Field(min_length=1, max_length=253, pattern=DNS_SUBDOMAIN_PATTERN)]
# Spec level, so adding networks to a server created without them is caught too (absent = []).
NETWORKS_IMMUTABLE_RULE = (
    "(has(self.networks) ? self.networks : []) == (has(oldSelf.networks) ? oldSelf.networks : [])"
)
NETWORKS_IMMUTABLE_MESSAGE = (
    "spec.networks cannot change: ports are made at create time (a rebuild keeps them); replace the Server"
)
SECURITY_GROUPS_IMMUTABLE_RULE = (
    "(has(self.securityGroups) ? self.securityGroups : [])"
    " == (has(oldSelf.securityGroups) ? oldSelf.securityGroups : [])"
)
SECURITY_GROUPS_IMMUTABLE_MESSAGE = (
    "spec.securityGroups cannot change: they are given to the ports at create time; replace the Server "
    "(or change the SecurityGroups' rules, which apply at once)"
)
KEYPAIR_IMMUTABLE_MESSAGE = (
    "spec.keypair cannot change: Nova injects the key at create time only (a rebuild keeps it); "
    "create a new Server"
)
USER_DATA_IMMUTABLE_MESSAGE = (
    "spec.userData cannot change: Nova passes it to the server at create time only (a rebuild keeps it); "
    "create a new Server"
)


class HealthyReason(StrEnum):
    """Reasons of the Healthy condition (rebuild.md, health mapping)."""

    HEALTHY = "Healthy"  # ACTIVE
    ERRORED = "Errored"  # ERROR
    PROVISIONING = "Provisioning"  # BUILD, REBUILD
    UNKNOWN = "Unknown"  # UNKNOWN
    DEGRADED = "Degraded"  # any other Nova status


class ServerPhase(StrEnum):
    PENDING = "Pending"  # not created yet
    BUILDING = "Building"  # BUILD, REBUILD, or a rebuild just accepted
    RUNNING = "Running"  # ACTIVE
    STOPPED = "Stopped"  # SHUTOFF
    ERROR = "Error"  # ERROR
    DELETING = "Deleting"
    UNKNOWN = "Unknown"  # any other Nova status


class RebuildState(StrEnum):
    """Forward-only: Initiated < Rebuilding < Succeeded = Failed."""

    INITIATED = "Initiated"
    REBUILDING = "Rebuilding"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


class ResizeState(StrEnum):
    """Forward-only: Initiated < Resizing < Confirming < Confirmed = Failed (docs/resize.md)."""

    INITIATED = "Initiated"
    RESIZING = "Resizing"
    CONFIRMING = "Confirming"
    CONFIRMED = "Confirmed"
    FAILED = "Failed"


NETWORK_CHOICE_MESSAGE = (
    "give exactly one of networkID (a Neutron network ID) or network (the name of a Network resource)"
)


class ServerNetwork(CamelModel):
    """One NIC: a Neutron network by ID, or a Network resource of this namespace by name."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {"rule": "has(self.networkID) != has(self.network)", "message": NETWORK_CHOICE_MESSAGE}
            ]
        }
    )

    network_id: str | None = Field(
        default=None, alias="networkID", min_length=1, max_length=255, description="Neutron network ID."
    )
    network: str | None = Field(
        default=None,
        min_length=1,
        max_length=253,
        pattern=DNS_SUBDOMAIN_PATTERN,
        description="Name of a Network resource in this namespace that lives where the Server does (the "
        "same identityRef, or the same spec.project); the create waits until its Neutron network exists.",
    )

    @model_validator(mode="after")
    def _one_choice(self) -> Self:
        if (self.network_id is None) == (self.network is None):
            raise ValueError(NETWORK_CHOICE_MESSAGE)
        return self


class ServerVolume(CamelModel):
    volume: str = Field(
        min_length=1,
        max_length=253,
        pattern=DNS_SUBDOMAIN_PATTERN,
        description="Name of a Volume resource in this namespace to attach; it must live where the Server does "
        "(the same identityRef, or the same spec.project).",
    )
    device: str | None = Field(
        default=None,
        pattern=DEVICE_PATTERN,
        description="Requested guest device, e.g. /dev/vdb; unset: Nova picks.",
    )


class ServerSpec(CloudSpec):
    """A Nova server named server-{metadata.uid} in its Identity's project (or spec.project)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                *CLOUD_SPEC_RULES,
                {"rule": NETWORKS_IMMUTABLE_RULE, "message": NETWORKS_IMMUTABLE_MESSAGE},
                {"rule": SECURITY_GROUPS_IMMUTABLE_RULE, "message": SECURITY_GROUPS_IMMUTABLE_MESSAGE},
                immutable_if_set("keypair", KEYPAIR_IMMUTABLE_MESSAGE),
                immutable_if_set("userData", USER_DATA_IMMUTABLE_MESSAGE),
            ]
        }
    )

    flavor: str = Field(
        min_length=1,
        max_length=255,
        description="Nova flavor name or ID. Changing it on a server that has booted resizes the server in "
        "place (same UUID, ports and volumes; resized, then confirmed).",
    )
    image_id: str = Field(
        alias="imageID",
        min_length=1,
        max_length=255,
        description="Glance image ID. Changing it on a server that has booted rebuilds the server in place "
        "(same UUID, ports and volumes; the root disk is recreated).",
    )
    networks: list[ServerNetwork] = Field(
        default_factory=list,
        max_length=16,
        description="Networks to attach, in order; empty: no network interface (Nova networks=none). "
        "Immutable.",
    )
    security_groups: list[SecurityGroupName] = Field(
        default_factory=list,
        alias="securityGroups",
        max_length=16,
        description="SecurityGroup resources (names in this namespace, living where the Server does) its ports "
        "get; empty: Nova's default group of the project. Immutable (ports are made at create time).",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    keypair: KeypairName | None = Field(
        default=None,
        description="Nova keypair name (letters, digits, spaces, - _ @ .); create-time only: immutable.",
    )
    user_data: UserData | None = Field(
        default=None,
        description="cloud-init user data, at most 49149 bytes in UTF-8 (65535 characters once base64-encoded, "
        "Nova's limit); create-time only: immutable.",
    )
    tags: Tags = Field(
        default_factory=dict,
        description="User tags (at most 32; keys of at most 244 letters, digits, spaces or - _ : .; values of at "
        "most 255 characters), written to Nova metadata under a namespaced prefix; the controller's own "
        "linkage keys are written last, so a tag can never override them.",
    )
    volumes: list[ServerVolume] = Field(
        default_factory=list,
        max_length=16,
        description="Volume resources to attach (no multi-attach: a volume attached elsewhere is a conflict).",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["volume"]},
    )


_REBUILD_RANK = {
    RebuildState.INITIATED: 1,
    RebuildState.REBUILDING: 2,
    RebuildState.SUCCEEDED: 3,
    RebuildState.FAILED: 3,
}


class RebuildMarker(StatusModel):
    """The write-ahead rebuild intent: workflow state (the store), mirrored to status.rebuild for users (the
    workflow never reads the mirror back). One type for both, and for the decisions in workflows/rebuild.py."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True)

    target_image_id: str = Field(alias="targetImageID", description="Image the rebuild converges toward.")
    state: RebuildState = Field(description="Initiated | Rebuilding | Succeeded | Failed.")

    @property
    def rank(self) -> int:
        return _REBUILD_RANK[self.state]

    @property
    def accepted(self) -> bool:
        """Nova accepted the rebuild (state >= Rebuilding)."""
        return self.rank >= _REBUILD_RANK[RebuildState.REBUILDING]

    def with_state(self, state: RebuildState) -> RebuildMarker:
        return self.model_copy(update={"state": state})


_RESIZE_RANK = {
    ResizeState.INITIATED: 1,
    ResizeState.RESIZING: 2,
    ResizeState.CONFIRMING: 3,
    ResizeState.CONFIRMED: 4,
    ResizeState.FAILED: 4,
}


class ResizeMarker(StatusModel):
    """The write-ahead resize intent (docs/resize.md, "the marker"): workflow state, mirrored to status.resize.

    The action counts attribute an unknown outcome without a resend: Nova records every accepted resize and
    confirmResize as an instance action, so a count above the one taken before the call means it was accepted.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True)

    target_flavor: str = Field(description="Flavor name the resize converges toward.")
    state: ResizeState = Field(description="Initiated | Resizing | Confirming | Confirmed | Failed.")
    resize_actions: int | None = Field(
        default=None,
        description="Nova's resize instance actions on the server when the resize was armed (None: recount).",
    )
    confirm_actions: int | None = Field(
        default=None, description="Nova's confirmResize instance actions when the confirm was armed."
    )

    @property
    def rank(self) -> int:
        return _RESIZE_RANK[self.state]

    @property
    def settled(self) -> bool:
        """Confirmed or Failed: nothing of this resize is in flight (a rebuild may be armed)."""
        return self.rank == _RESIZE_RANK[ResizeState.CONFIRMED]

    def with_state(self, state: ResizeState, **counts: int | None) -> ResizeMarker:
        return self.model_copy(update={"state": state, **counts})


class ServerVolumeStatus(StatusModel):
    name: str = Field(description="Name of the Volume resource.")
    device: str | None = Field(default=None, description="Guest device Nova reports for the attachment.")
    message: str | None = Field(default=None, description="Why the volume is not attached (user-safe).")


class ServerStatus(CloudStatus):
    conditions: list[Condition] = Field(
        default_factory=list,
        description="Available (Provisioning | Provisioned | Errored | Deprovisioning | Forbidden) and Healthy "
        "(Healthy | Errored | Provisioning | Unknown | Degraded), with user-safe messages.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    phase: ServerPhase | None = Field(
        default=None, description="Pending | Building | Running | Stopped | Error | Deleting | Unknown."
    )
    launched_at: K8sTime | None = Field(
        default=None, description="When Nova first booted the server (write-once latch of launched_at)."
    )
    mac_address: str | None = Field(default=None, description="MAC address of the first port, once ACTIVE.")
    rebuild: RebuildMarker | None = Field(default=None, description="Pending image rebuild, if any.")
    flavor: str | None = Field(default=None, description="Flavor name Nova reports for the server.")
    resize: ResizeMarker | None = Field(
        default=None, description="The latest resize (spec.flavor change): pending, Confirmed or Failed."
    )
    volumes: list[ServerVolumeStatus] | None = Field(
        default=None,
        description="Attachment status per Volume resource.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    server_id: str | None = Field(default=None, alias="serverID", description="ID of the Nova server.")
