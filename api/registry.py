"""One entry per kind: everything the bridge, the workflows, the activities and the CRD generator need to know.

Pure data (pydantic models and dataclasses, no I/O): workflows import it inside Temporal's sandbox.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from osprov.api import cinder, identity, keystone, network, nova, octavia, region, security_group
from osprov.api.common import CamelModel, StatusModel
from osprov.api.inventory_config import InventoryConfigSpec

READY = "Ready"  # readiness condition of the Keystone kinds
AVAILABLE = "Available"  # readiness condition of the cloud kinds


@dataclass(frozen=True)
class PrinterColumn:
    name: str
    type: str  # string | integer | number | boolean | date
    json_path: str
    description: str = ""
    priority: int = 0  # 0: always shown; 1: only with -o wide


class _CrdNames:
    """The names Kubernetes derives from a kind's group, version and plural (both registries use them)."""

    group: str
    version: str
    plural: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"


@dataclass(frozen=True)
class KindInfo(_CrdNames):
    kind: str
    group: str
    version: str
    plural: str
    singular: str
    short_names: tuple[str, ...]
    categories: tuple[str, ...]
    spec_model: type[CamelModel]
    status_model: type[StatusModel]
    # JSON name of the status field holding the OpenStack ID (Endpoint: a map interface -> ID; None: no ID)
    id_field: str | None
    ready_condition: str  # condition type that means "this resource is done": Ready or Available
    extra_columns: tuple[PrinterColumn, ...] = field(default=())  # between Reason/ID and Age
    id_column_priority: int = 0  # 1 hides a wide ID column (Endpoint's map) unless -o wide

    @property
    def id_attribute(self) -> str | None:
        """Python attribute name of id_field on status_model."""
        if self.id_field is None:
            return None
        return next(name for name, f in self.status_model.model_fields.items() if f.alias == self.id_field)

    @property
    def printer_columns(self) -> tuple[PrinterColumn, ...]:
        condition = f'.status.conditions[?(@.type=="{self.ready_condition}")]'
        columns = [
            PrinterColumn(
                self.ready_condition, "string", f"{condition}.status", f"{self.ready_condition} condition"
            ),
            PrinterColumn(
                "Reason", "string", f"{condition}.reason", f"Reason of the {self.ready_condition} condition"
            ),
        ]
        if self.id_field is not None:
            columns.append(
                PrinterColumn(
                    "ID", "string", f".status.{self.id_field}", "OpenStack ID", self.id_column_priority
                )
            )
        columns.extend(self.extra_columns)
        columns.append(PrinterColumn("Age", "date", ".metadata.creationTimestamp"))
        return tuple(columns)


def _keystone(
    kind: str,
    spec: type[CamelModel],
    status: type[StatusModel],
    id_field: str | None,
    short: str,
    extra_columns: tuple[PrinterColumn, ...] = (),
    id_column_priority: int = 0,
) -> KindInfo:
    return KindInfo(
        kind=kind,
        group=keystone.KEYSTONE_GROUP,
        version="v1alpha1",
        plural=kind.lower() + "s",
        singular=kind.lower(),
        short_names=(short,),
        categories=("keystone", "osprov"),
        spec_model=spec,
        status_model=status,
        id_field=id_field,
        ready_condition=READY,
        extra_columns=extra_columns,
        id_column_priority=id_column_priority,
    )


# Order matters: it is the order in which the identity kinds depend on each other (seed 001), which the demo
# and the bridge's initial list follow so a first apply converges with few retries.
IDENTITY_KINDS: tuple[KindInfo, ...] = (
    _keystone("Domain", keystone.DomainSpec, keystone.DomainStatus, "domainID", "ksdomain"),
    _keystone("Project", keystone.ProjectSpec, keystone.ProjectStatus, "projectID", "ksproject"),
    _keystone("Role", keystone.RoleSpec, keystone.RoleStatus, "roleID", "ksrole"),
    _keystone("Group", keystone.GroupSpec, keystone.GroupStatus, "groupID", "ksgroup"),
    _keystone("User", keystone.UserSpec, keystone.UserStatus, "userID", "ksuser"),
    _keystone(
        "RoleAssignment",
        keystone.RoleAssignmentSpec,
        keystone.RoleAssignmentStatus,
        None,
        "ksra",
        (PrinterColumn("Role", "string", ".spec.role.name", "Granted role"),),
    ),
    _keystone("Service", keystone.ServiceSpec, keystone.ServiceStatus, "serviceID", "kssvc"),
    _keystone(
        "Endpoint",
        keystone.EndpointSpec,
        keystone.EndpointStatus,
        "endpointIDs",  # a map interface -> ID, not a single string
        "ksep",
        (
            PrinterColumn("Service", "string", ".spec.service.type", "Service type"),
            PrinterColumn("Region", "string", ".spec.region"),
        ),
        id_column_priority=1,
    ),
)


# The seed's OpenstackIdentity: a tenant's project, user and application credential (api/identity.py says why
# it has a group of its own). Before the cloud kinds, which name it.
TENANCY_KINDS: tuple[KindInfo, ...] = (
    KindInfo(
        kind="Identity",
        group=identity.IDENTITY_GROUP,
        version="v1alpha1",
        plural="identities",
        singular="identity",
        short_names=("osid",),
        categories=("identity", "osprov"),
        spec_model=identity.IdentitySpec,
        status_model=identity.IdentityStatus,
        id_field="projectID",
        ready_condition=READY,
        extra_columns=(
            PrinterColumn("Secret", "string", ".status.secretName", "Secret with the application credential"),
            PrinterColumn(
                "Expires", "date", ".status.credentialExpiresAt", "When the current credential expires", 1
            ),
        ),
    ),
)


def _cloud(
    kind: str,
    group: str,
    spec: type[CamelModel],
    status: type[StatusModel],
    id_field: str,
    short: str,
    category: str,
    extra_columns: tuple[PrinterColumn, ...],
) -> KindInfo:
    return KindInfo(
        kind=kind,
        group=group,
        version="v1alpha1",
        plural=kind.lower() + "s",
        singular=kind.lower(),
        short_names=(short,),
        categories=(category, "osprov"),
        spec_model=spec,
        status_model=status,
        id_field=id_field,
        ready_condition=AVAILABLE,
        extra_columns=extra_columns,
    )


CLOUD_KINDS: tuple[KindInfo, ...] = (
    _cloud(
        "Volume",
        cinder.CINDER_GROUP,
        cinder.VolumeSpec,
        cinder.VolumeStatus,
        "volumeID",
        "osvol",
        "cinder",
        (PrinterColumn("Size", "integer", ".spec.size", "Size in GiB"),),
    ),
    _cloud(
        "LoadBalancer",
        octavia.OCTAVIA_GROUP,
        octavia.LoadBalancerSpec,
        octavia.LoadBalancerStatus,
        "loadBalancerID",
        "oslb",
        "octavia",
        (
            PrinterColumn("VIP", "string", ".status.vipAddress", "VIP address"),
            PrinterColumn("Public IP", "string", ".status.publicIP", "Floating IP on the VIP"),
        ),
    ),
    _cloud(
        "Server",
        nova.NOVA_GROUP,
        nova.ServerSpec,
        nova.ServerStatus,
        "serverID",
        "ossrv",
        "nova",
        (
            PrinterColumn("Phase", "string", ".status.phase"),
            PrinterColumn("Healthy", "string", f'.status.conditions[?(@.type=="{nova.HEALTHY}")].status'),
            PrinterColumn("Image", "string", ".spec.imageID", "Desired image", priority=1),
        ),
    ),
)

# The Neutron kinds (neutron.osh.openstack.org), appended so the existing kinds' order is unchanged.
NETWORK_KIND = _cloud(
    "Network",
    network.NEUTRON_GROUP,
    network.NetworkSpec,
    network.NetworkStatus,
    "networkID",
    "osnet",
    "neutron",
    (
        PrinterColumn("CIDR", "string", ".spec.subnet.cidr", "Subnet address range"),
        PrinterColumn("VLAN", "integer", ".status.segmentationID", "VLAN ID of a provider network"),
    ),
)
CLOUD_KINDS = (*CLOUD_KINDS, NETWORK_KIND)
SECURITY_GROUP_KIND = _cloud(
    "SecurityGroup",
    network.NEUTRON_GROUP,
    security_group.SecurityGroupSpec,
    security_group.SecurityGroupStatus,
    "securityGroupID",
    "ossg",
    "neutron",
    (PrinterColumn("Rules", "integer", ".status.ruleCount", "Rules in Neutron"),),
)
CLOUD_KINDS += (SECURITY_GROUP_KIND,)

ALL_KINDS: tuple[KindInfo, ...] = IDENTITY_KINDS + TENANCY_KINDS + CLOUD_KINDS
KINDS: dict[str, KindInfo] = {info.kind: info for info in ALL_KINDS}


def kind_info(kind: str) -> KindInfo:
    """The registry entry of `kind` (e.g. "Domain"); KeyError names the known kinds."""
    try:
        return KINDS[kind]
    except KeyError:
        raise KeyError(f"unknown kind {kind!r}; known: {', '.join(KINDS)}") from None


# --- the region inventory (api/region.py): cluster-scoped, written by the inventory workflows only ------


@dataclass(frozen=True)
class InventoryKindInfo(_CrdNames):
    """A cluster-scoped kind of region.osh.openstack.org: no status, no workflow per object, not watched by
    the bridge. `worker_verbs` is what the worker's ClusterRole grants on it (deploy/rbac.yaml; the Helm
    chart reads it from the CRD's annotation, so the two cannot drift)."""

    kind: str
    plural: str
    short_names: tuple[str, ...]
    spec_model: type[CamelModel]
    columns: tuple[PrinterColumn, ...]
    worker_verbs: tuple[str, ...]
    description: str
    published: bool = True  # an inventory (Flavor, VolumeClass, Image), not the operator's configuration
    group: str = region.REGION_GROUP
    version: str = region.REGION_VERSION
    categories: tuple[str, ...] = ("region",)

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def printer_columns(self) -> tuple[PrinterColumn, ...]:
        return (*self.columns, PrinterColumn("Age", "date", ".metadata.creationTimestamp"))


# Published kinds: the sync lists, reads (before a replace), creates, replaces and deletes them; the Server
# check reads an Image by name, the Volume check lists VolumeClasses.
PUBLISHED_VERBS = ("get", "list", "create", "update", "delete")

INVENTORY_KINDS: tuple[InventoryKindInfo, ...] = (
    InventoryKindInfo(
        "Flavor",
        "flavors",
        ("osflavor",),
        region.FlavorSpec,
        (
            PrinterColumn("Nova-Name", "string", ".spec.name", "Nova flavor name"),
            PrinterColumn("Arch", "string", ".spec.architecture", "CPU architecture"),
            PrinterColumn("vCPUs", "integer", ".spec.vcpus"),
            PrinterColumn("RAM-MiB", "integer", ".spec.memoryMiB", "Memory in MiB"),
            PrinterColumn("Disk-GiB", "integer", ".spec.diskGiB", "Root disk in GiB"),
            PrinterColumn("Baremetal", "boolean", ".spec.baremetal"),
            PrinterColumn("GPU", "string", ".spec.gpu.model", "GPU model"),
            PrinterColumn("GPUs", "integer", ".spec.gpu.count", "GPUs per server"),
            PrinterColumn("ID", "string", ".spec.id", "Nova flavor ID", priority=1),
        ),
        PUBLISHED_VERBS,
        "A Nova flavor this region offers (read only: published by osprov's inventory).",
    ),
    InventoryKindInfo(
        "VolumeClass",
        "volumeclasses",
        ("osvc",),
        region.VolumeClassSpec,
        (
            PrinterColumn("Volume-Type", "string", ".spec.volumeType", "Cinder volume type"),
            PrinterColumn("Min-GiB", "integer", ".spec.minCapacityGiB", "Smallest volume size"),
            PrinterColumn("Max-GiB", "integer", ".spec.maxCapacityGiB", "Largest volume size"),
            PrinterColumn("Media", "string", ".spec.media"),
            PrinterColumn("Encrypted", "boolean", ".spec.encrypted"),
            PrinterColumn("ID", "string", ".spec.volumeTypeID", "Cinder volume type ID", priority=1),
        ),
        PUBLISHED_VERBS,
        "A Cinder volume type this region offers (read only: published by osprov's inventory).",
    ),
    InventoryKindInfo(
        "Image",
        "images",
        ("osimage",),
        region.ImageSpec,
        (
            PrinterColumn("Glance-Name", "string", ".spec.name", "Glance image name"),
            PrinterColumn("Arch", "string", ".spec.architecture", "CPU architecture"),
            PrinterColumn("OS", "string", ".spec.os.distro", "Distribution"),
            PrinterColumn("Version", "string", ".spec.os.version", "Distribution release"),
            PrinterColumn("GPU", "string", ".spec.gpu.vendor", "GPU vendor"),
            PrinterColumn("Verified", "boolean", ".spec.verified", "Signature verified"),
            PrinterColumn("Virtualization", "string", ".spec.virtualization", priority=1),
        ),
        PUBLISHED_VERBS,
        "A Glance image this region offers (read only: published by osprov's inventory); its name is the "
        "Glance image ID.",
    ),
)
INVENTORY_CONFIG = InventoryKindInfo(
    "InventoryConfig",
    "inventoryconfigs",
    ("osinv",),
    InventoryConfigSpec,
    (),
    ("get",),  # only the object named by OSPROV_INVENTORY_CONFIG (resourceNames)
    "The operator's configuration of osprov's region inventory (docs/inventory.md).",
    published=False,
)
CLUSTER_KINDS: tuple[InventoryKindInfo, ...] = (*INVENTORY_KINDS, INVENTORY_CONFIG)
INVENTORY: dict[str, InventoryKindInfo] = {info.kind: info for info in INVENTORY_KINDS}
