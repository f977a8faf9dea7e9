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
SSH_IMMUTABLE_MESSAGE = (
    "spec.ssh cannot change: how SSH access is injected is decided at create time (a rebuild keeps it); "
    "create a new Server"
)
SSH_KEYPAIR_RULE = "!has(self.keypair) || !has(self.ssh) || self.ssh.mode == 'keypair'"
SSH_KEYPAIR_MESSAGE = (
    "spec.keypair is only used with spec.ssh.mode keypair: remove it, or remove spec.ssh (identityKeypair "
    "uses the Identity's keypair, ca and none send no key)"
)
SSH_IDENTITY_RULE = "!has(self.ssh) || self.ssh.mode != 'identityKeypair' || has(self.identityRef)"
SSH_IDENTITY_MESSAGE = (
    "spec.ssh.mode identityKeypair needs spec.identityRef (the keypair is the Identity's); with spec.project "
    "name a keypair in spec.keypair, or use mode ca or none"
)
PLACEMENT_IMMUTABLE_MESSAGE = (
    "spec.placement cannot change: a server is pinned at create time only (Nova keeps it on its host); "
    "create a new Server"
)
PLACEMENT_TARGET_RULE = "has(self.host) || has(self.hypervisorHostname)"
PLACEMENT_TARGET_MESSAGE = "spec.placement names a compute host, a hypervisorHostname, or both"
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
    QUEUED = (
        "Queued"  # BUILD of a baremetal flavor that Ironic has not started deploying (waiting on hardware)
    )
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


class SshMode(StrEnum):
    """How SSH access reaches a new server (the seed: a create-time decision, kept by a rebuild)."""

    KEYPAIR = "keypair"  # spec.keypair as Nova key_name (unset: none); what every Server did before modes
    IDENTITY_KEYPAIR = "identityKeypair"  # key_name of the Identity's keypair identity-{uid}
    CA = "ca"  # cloud-init trusting the operator's SSH certificate authority; no key_name
    NONE = "none"  # neither


class SshSpec(CamelModel):
    mode: SshMode = Field(
        default=SshMode.KEYPAIR,
        description="keypair: spec.keypair (if set) as Nova key_name; identityKeypair: the keypair its Identity "
        "owns (Identity spec.sshPublicKey, Nova keypair identity-{uid}); ca: no key_name, osprov adds "
        "cloud-init user data that trusts the operator's SSH certificate authority (TrustedUserCAKeys) before "
        "spec.userData; none: no key_name and nothing added.",
    )


class ServerPlacement(CamelModel):
    """Pinned creation (Nova microversion 2.74 host / hypervisor_hostname; admin policy): only where the
    operator's tenancy mapping allows pinning for the namespace; then the create runs on the controller's
    credentials scoped to the Server's project (the seed: region-level credentials, the identity's project)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [{"rule": PLACEMENT_TARGET_RULE, "message": PLACEMENT_TARGET_MESSAGE}]
        }
    )

    host: str | None = Field(default=None, min_length=1, max_length=255, description="Nova compute host.")
    hypervisor_hostname: str | None = Field(
        default=None,
        alias="hypervisorHostname",
        min_length=1,
        max_length=255,
        description="Hypervisor (compute node) name; also the Placement resource provider the preflight asks "
        "about (unset: the host's name).",
    )

    @model_validator(mode="after")
    def _a_target(self) -> ServerPlacement:
        if self.host is None and self.hypervisor_hostname is None:
            raise ValueError(PLACEMENT_TARGET_MESSAGE)
        return self

    @property
    def provider(self) -> str:
        """The Placement resource provider of the pinned compute node (named by its hypervisor hostname)."""
        name = self.hypervisor_hostname or self.host
        assert name is not None
        return name


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
                immutable_if_set("ssh", SSH_IMMUTABLE_MESSAGE),
                immutable_if_set("placement", PLACEMENT_IMMUTABLE_MESSAGE),
                {"rule": SSH_KEYPAIR_RULE, "message": SSH_KEYPAIR_MESSAGE, "fieldPath": ".keypair"},
                {"rule": SSH_IDENTITY_RULE, "message": SSH_IDENTITY_MESSAGE, "fieldPath": ".ssh"},
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
    ssh: SshSpec | None = Field(
        default=None,
        description="SSH access injected at create (Nova keeps it on a rebuild): unset means mode keypair. "
        "Immutable.",
    )
    placement: ServerPlacement | None = Field(
        default=None,
        description="Pin the server to a compute host or hypervisor at create (only where the operator allows "
        "it; with the operator's placement preflight on, the create waits until Placement says the node has "
        "the flavor's resources:* and trait:* extra specs). Immutable.",
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

    @property
    def ssh_mode(self) -> SshMode:
        return self.ssh.mode if self.ssh is not None else SshMode.KEYPAIR

    @model_validator(mode="after")
    def _ssh_mode_fits(self) -> ServerSpec:
        # The CEL rules' twins: a spec that bypassed admission still gets the same clear answer.
        if self.keypair is not None and self.ssh_mode is not SshMode.KEYPAIR:
            raise ValueError(SSH_KEYPAIR_MESSAGE)
        if self.ssh_mode is SshMode.IDENTITY_KEYPAIR and self.identity_ref is None:
            raise ValueError(SSH_IDENTITY_MESSAGE)
        return self


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
        default=None,
        description="Pending | Queued (baremetal: Ironic has not started deploying) | Building | Running | "
        "Stopped | Error | Deleting | Unknown.",
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
