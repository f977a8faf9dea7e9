"""Inputs and outputs of the Nova activities (the contract between workflows/server.py and activities/nova.py).

Pure pydantic: workflows import this inside Temporal's sandbox. Every call is scoped to the Server's
project (its Identity's application credential, or the controller's credentials re-scoped to it;
never admin authority).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from osprov.api.activity import Activity
from osprov.api.identity_io import Credential

# Server metadata: user tags are namespaced; the linkage keys below are written last so a tag can never
# override them (they are also how a human finds the resource from inside the guest's metadata service).
TAG_PREFIX = "osprov.tag."
SYSTEM_KEYS = ("osprov.kind", "osprov.namespace", "osprov.name", "osprov.uid", "osprov.project")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Project(_Model):
    """Keystone project (by name and domain name) every call of a Server is scoped to: with `credential`, its
    Identity's application credential makes the calls; without, the controller's credentials re-scoped to it."""

    name: str
    domain: str
    credential: Credential | None = None


class FindServer(_Model):
    """Exact-name lookup (Nova's name filter is a regular expression: the activity post-filters)."""

    project: Project
    name: str


class FindImportedServer(_Model):
    """spec.import of an unmanaged Server: the project's server with this ID, or every one of the project
    named exactly `name` (exactly one of the two). A server of another project is not found."""

    project: Project
    server_id: str | None = None
    name: str | None = None


class ServerId(_Model):
    project: Project
    server_id: str


class Nic(_Model):
    """spec.networks[i]: a Neutron network ID, or a Network resource's name (resolved by the create)."""

    network_id: str | None = None
    network: str | None = None


class CreateServer(_Model):
    """Create-if-absent: an exact-name match is adopted instead of creating a second server."""

    project: Project
    name: str
    flavor: str  # name or ID
    image_id: str
    network_ids: list[str] = Field(default_factory=list)  # runs from before `nics`; both empty: no NIC
    namespace: str = ""  # of the Server: where the Network and SecurityGroup resources it names live
    nics: list[Nic] = Field(default_factory=list)  # spec.networks, in order
    security_groups: list[str] = Field(default_factory=list)  # SecurityGroup resource names
    key_name: str | None = None  # spec.keypair (ssh mode keypair)
    # ssh mode identityKeypair: the activity ensures the Identity's keypair identity-{uid} (from its
    # spec.sshPublicKey, with the Identity's credential) and sends its name as key_name.
    identity_keypair: bool = False
    # ssh mode ca: the activity puts a cloud-config trusting the operator's SSH CA (worker configuration,
    # never the resource's) before user_data, as multipart/mixed; no key_name.
    ssh_ca: bool = False
    user_data: str | None = None  # plain text; the activity base64-encodes it
    metadata: dict[str, str] = Field(default_factory=dict)
    # spec.placement (the tenancy mapping allowed it): microversion 2.74, on the controller's credentials
    # scoped to the project (Nova's policy for a requested destination is admin's).
    host: str | None = None
    hypervisor_hostname: str | None = None


class PlacementPreflight(_Model):
    """Does resource provider `provider` have available inventory for the flavor's positive resources:*
    extra specs, its trait:*=required traits plus `required_traits`, and none of its trait:*=forbidden ones?"""

    project: Project  # the flavor is read as the Server's project sees it
    flavor: str  # name or ID
    provider: str  # resource provider name (the compute node's hypervisor hostname)
    required_traits: list[str] = Field(default_factory=list)  # the operator's (tenancy mapping)


class PreflightResult(_Model):
    missing: list[str] = Field(default_factory=list)  # user-safe, one per unmet requirement; [] = it fits


class BaremetalQuery(_Model):
    """While Nova reports BUILD: is the flavor one the Flavor inventory marks baremetal, and if so what does
    Ironic say of the node bound to this instance (privileged credentials: Ironic nodes are the provider's)."""

    server_id: str
    flavor: str  # spec.flavor: a name or an ID


class BaremetalProgress(_Model):
    baremetal: bool = False
    queued: bool = False  # Ironic has not started deploying (no node yet, cleaning, inspecting, …)
    provision_state: str | None = None  # Ironic's, for the message; None: no node, or the lookup failed


class SetMetadata(_Model):
    """Set (merge) these metadata keys on the server; other keys are left alone."""

    project: Project
    server_id: str
    metadata: dict[str, str]


class Rebuild(_Model):
    """POST /servers/{id}/action {"rebuild": {"imageRef": image_id}} — nothing else."""

    project: Project
    server_id: str
    image_id: str


class Resize(_Model):
    """POST /servers/{id}/action {"resize": {"flavorRef": <the flavor's ID>}} — the flavor by name."""

    project: Project
    server_id: str
    flavor: str


class FlavorRef(_Model):
    """Resolve spec.flavor (a name or an ID) to the flavor's name, as a server read shows it."""

    project: Project
    flavor: str


class ResizeActions(_Model):
    """How many resize and confirmResize instance actions Nova lists for the server (GET
    /servers/{id}/os-instance-actions): every accepted call is one, never removed while the server exists."""

    resizes: int
    confirms: int


class ServerRead(_Model):
    """One fresh GET /servers/{id}: what the Server workflow decides from (nova.create_server returns the
    new server as its 202 implies instead: BUILD, with what the create sent)."""

    id: str
    name: str
    status: str  # ACTIVE, BUILD, REBUILD, ERROR, SHUTOFF, …
    image_id: str | None  # image.id; None when missing or unparseable
    task_state: str | None  # OS-EXT-STS:task_state
    launched_at: str | None  # OS-SRV-USG:launched_at
    mac_address: str | None = None  # first port's MAC (addresses[*][0] OS-EXT-IPS-MAC:mac_addr)
    metadata: dict[str, str] = Field(default_factory=dict)
    flavor: str | None = None  # flavor.original_name (microversion >= 2.47); None when unreadable


class ServerLookup(_Model):
    """Result of a read by ID: server None = Nova no longer has it (404)."""

    server: ServerRead | None = None


class AwaitServer(_Model):
    """Read the server by ID every `interval_seconds` until Nova is done with it (`settled`: no task, not
    BUILD or REBUILD; or gone) or `within_seconds` pass; the answer is the last read."""

    server: ServerId
    interval_seconds: float = 0.5
    within_seconds: float = 60.0
    # When the workflow last saw it busy (the change it just made was answered): the first read is at once,
    # the second one interval after this time (activities/cloud.py, poll). None: every interval.
    busy_seen_at: datetime | None = None
    busy_statuses: tuple[
        str, ...
    ] = ()  # also wait while the status is one of these (a confirm: VERIFY_RESIZE)


def settled(found: ServerLookup, busy_statuses: tuple[str, ...] = ()) -> bool:
    read = found.server
    return (
        read is None
        or read.status == "ERROR"
        or (not read.task_state and read.status not in ("BUILD", "REBUILD", *busy_statuses))
    )


class VolumeAttachment(_Model):
    """One spec.volumes entry: the Volume resource (by name, in the Server's namespace) and this server.

    The activity reads the Volume resource's UID and finds its Cinder volume by the deterministic name
    volume-{uid}; only the guest device crosses back (Nova/Cinder IDs stay inside the activity).
    """

    project: Project
    server_id: str
    namespace: str
    volume: str  # name of the Volume resource
    device: str | None = None  # requested guest device (attach only)


class AttachResult(_Model):
    device: str | None = None


# --- activities: the typed contracts (osprov.api.activity) -----------------------------------------
FIND_SERVER: Activity[FindServer, list[ServerRead]] = Activity(
    "nova.find_server", FindServer, list[ServerRead]
)
GET_SERVER: Activity[ServerId, ServerLookup] = Activity("nova.get_server", ServerId, ServerLookup)
AWAIT_SERVER: Activity[AwaitServer, ServerLookup] = Activity("nova.await_server", AwaitServer, ServerLookup)
FIND_IMPORTED_SERVER: Activity[FindImportedServer, list[ServerRead]] = Activity(
    "nova.find_imported_server", FindImportedServer, list[ServerRead]
)
CREATE_SERVER: Activity[CreateServer, ServerRead] = Activity("nova.create_server", CreateServer, ServerRead)
PLACEMENT_PREFLIGHT: Activity[PlacementPreflight, PreflightResult] = Activity(
    "nova.placement_preflight", PlacementPreflight, PreflightResult
)
BAREMETAL_PROGRESS: Activity[BaremetalQuery, BaremetalProgress] = Activity(
    "nova.baremetal_progress", BaremetalQuery, BaremetalProgress
)
DELETE_SERVER: Activity[ServerId, bool] = Activity("nova.delete_server", ServerId, bool)
SET_METADATA: Activity[SetMetadata, None] = Activity("nova.set_metadata", SetMetadata, type(None))
REBUILD: Activity[Rebuild, None] = Activity("nova.rebuild", Rebuild, type(None))
RESIZE: Activity[Resize, None] = Activity("nova.resize", Resize, type(None))
CONFIRM_RESIZE: Activity[ServerId, None] = Activity("nova.confirm_resize", ServerId, type(None))
RESIZE_ACTIONS: Activity[ServerId, ResizeActions] = Activity("nova.resize_actions", ServerId, ResizeActions)
FLAVOR_NAME: Activity[FlavorRef, str] = Activity("nova.flavor_name", FlavorRef, str)
ATTACH_VOLUME: Activity[VolumeAttachment, AttachResult] = Activity(
    "nova.attach_volume", VolumeAttachment, AttachResult
)
DETACH_VOLUME: Activity[VolumeAttachment, None] = Activity("nova.detach_volume", VolumeAttachment, type(None))
