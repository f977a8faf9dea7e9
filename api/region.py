"""Region inventory (region.osh.openstack.org/v1alpha1): what the cloud offers, as read-only resources.

`Flavor`, `VolumeClass` and `Image` are cluster-scoped and written only by osprov's inventory workflows
(workflows/inventory/), which a Temporal Schedule runs: each run reads the cloud (Nova, Cinder, Glance)
and the operator's `InventoryConfig` (api/inventory_config.py) and makes the published objects match.
Users read them (`kubectl get flavors,volumeclasses,images`); the Volume and Server kinds are checked
against them before any cloud call. docs/inventory.md has the rules.

Pure pydantic and the standard library: workflows import this module inside Temporal's sandbox.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated

from pydantic import Field

from osprov.api.common import CamelModel

REGION_GROUP = "region.osh.openstack.org"
REGION_VERSION = "v1alpha1"
# Every published object carries the name of the InventoryConfig it was published for: a run lists, replaces
# and deletes only objects with its own label, never anything else of the kind.
INVENTORY_LABEL = f"{REGION_GROUP}/inventory"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "osprov"

# A Kubernetes object name (RFC 1123 subdomain).
NAME_MAX = 253
NAME_PATTERN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
_NAME_RE = re.compile(NAME_PATTERN)
_NAME_INVALID = re.compile(r"[^-a-z0-9.]+")
ObjectName = Annotated[str, Field(min_length=1, max_length=NAME_MAX, pattern=NAME_PATTERN)]

GiB = Annotated[
    int, Field(ge=1, le=0x7FFFFFFF)
]  # a positive whole number of GiB (Cinder's volume_size bound)


def object_name(preferred: str) -> str | None:
    """`preferred` as an object name (lower case, other characters as '-'), or None if nothing is left."""
    name = _NAME_INVALID.sub("-", preferred.lower()).strip("-.")[:NAME_MAX].strip("-.")
    return name if _NAME_RE.fullmatch(name) else None


class Architecture(StrEnum):
    """CPU architectures, spelled as Glance's `architecture` property and libvirt spell them."""

    X86_64 = "x86_64"
    AARCH64 = "aarch64"
    PPC64LE = "ppc64le"
    S390X = "s390x"
    RISCV64 = "riscv64"


# What an object without any architecture information is taken to be (the seed's legacy fallback).
FALLBACK_ARCHITECTURE = Architecture.X86_64


class GPUVendor(StrEnum):
    NVIDIA = "NVIDIA"
    AMD = "AMD"
    INTEL = "Intel"


class FlavorGPU(CamelModel):
    vendor: GPUVendor | None = Field(default=None, description="GPU vendor.")
    model: str | None = Field(default=None, max_length=64, description="GPU model, e.g. A100.")
    count: int = Field(default=1, ge=1, le=64, description="GPUs per server.")
    memory_gib: int | None = Field(
        default=None, alias="memoryGiB", ge=1, le=65536, description="Memory per GPU in GiB."
    )


class FlavorSpec(CamelModel):
    """A Nova flavor as this region offers it."""

    id: str = Field(description="Nova flavor ID (what Server.spec.flavor may name).")
    name: str = Field(description="Nova flavor name.")
    architecture: Architecture = Field(
        description="CPU architecture: the operator's override, else the flavor's cpu.architecture extra "
        "spec, else the configured default architecture, else x86_64."
    )
    vcpus: int = Field(ge=0, description="Virtual CPUs.")
    memory_mib: int = Field(alias="memoryMiB", ge=0, description="Memory in MiB.")
    disk_gib: int = Field(alias="diskGiB", ge=0, description="Root disk in GiB (0: the image's size).")
    baremetal: bool = Field(
        default=False,
        description="Servers of this flavor are physical machines (Ironic): the operator's override, else "
        "the flavor requests a custom resource class and no VCPU.",
    )
    gpu: FlavorGPU | None = Field(default=None, description="GPUs of a server of this flavor.")


class Media(StrEnum):
    HDD = "hdd"
    SSD = "ssd"
    NVME = "nvme"


class Performance(CamelModel):
    """Caps, not guarantees: what a volume of the class can reach at most."""

    max_iops: int | None = Field(default=None, alias="maxIOPS", ge=1, description="IOPS cap.")
    max_throughput_mibps: int | None = Field(
        default=None, alias="maxThroughputMiBps", ge=1, description="Throughput cap in MiB/s."
    )


class VolumeClassSpec(CamelModel):
    """A Cinder volume type the operator allows, with what the operator says about it."""

    volume_type_id: str = Field(alias="volumeTypeID", description="ID of the Cinder volume type.")
    volume_type: str = Field(description="Name of the Cinder volume type.")
    description: str | None = Field(default=None, description="The volume type's description in Cinder.")
    min_capacity_gib: GiB | None = Field(
        default=None, alias="minCapacityGiB", description="Smallest volume size in GiB (unset: 1)."
    )
    max_capacity_gib: GiB | None = Field(
        default=None, alias="maxCapacityGiB", description="Largest volume size in GiB (unset: no bound)."
    )
    supported_flavors: list[str] | None = Field(
        default=None,
        description="IDs of the Nova flavors whose servers may use volumes of this class (unset: any).",
    )
    media: Media | None = Field(default=None, description="Storage media: hdd, ssd or nvme.")
    performance: Performance | None = Field(default=None, description="Performance caps.")
    encrypted: bool = Field(default=False, description="Volumes of this class are encrypted at rest.")


class OSKernel(StrEnum):
    LINUX = "linux"
    WINDOWS = "windows"


class Virtualization(StrEnum):
    VIRTUALIZED = "virtualized"  # for virtual machines only
    BAREMETAL = "baremetal"  # for physical machines only
    ANY = "any"


class ImageOS(CamelModel):
    kernel: OSKernel | None = Field(default=None, description="linux or windows (Glance os_type).")
    family: str | None = Field(default=None, description="OS family, e.g. debian or redhat.")
    distro: str | None = Field(default=None, description="Distribution, e.g. ubuntu (Glance os_distro).")
    variant: str | None = Field(default=None, description="Variant, e.g. server.")
    codename: str | None = Field(default=None, description="Release codename, e.g. noble.")
    version: str | None = Field(default=None, description="Release, e.g. 24.04 (Glance os_version).")


class ImageGPU(CamelModel):
    vendor: GPUVendor = Field(description="GPU vendor the image's drivers are for.")
    driver: str | None = Field(default=None, description="Driver version.")
    models: list[str] = Field(default_factory=list, description="GPU models the image supports.")


class ImageSpec(CamelModel):
    """A Glance image this region offers: public, active, its properties valid (and its signature, if it
    has one and the operator configured a key)."""

    id: str = Field(description="Glance image ID (what Server.spec.imageID names).")
    name: str = Field(description="Glance image name.")
    architecture: Architecture = Field(
        description="The image's Glance architecture property, else the configured default, else x86_64."
    )
    os: ImageOS = Field(default_factory=ImageOS, description="Operating system.")
    packages: dict[str, str] = Field(default_factory=dict, description="Software versions, by package.")
    gpu: ImageGPU | None = Field(default=None, description="GPU support.")
    virtualization: Virtualization = Field(
        default=Virtualization.ANY, description="virtualized, baremetal or any."
    )
    tags: dict[str, str] = Field(default_factory=dict, description="Other tags.")
    min_disk_gib: int = Field(default=0, alias="minDiskGiB", ge=0, description="Smallest root disk in GiB.")
    min_memory_mib: int = Field(default=0, alias="minMemoryMiB", ge=0, description="Smallest memory in MiB.")
    verified: bool = Field(
        default=False,
        description="The image's digest carries a valid signature of the operator's image signing key.",
    )
