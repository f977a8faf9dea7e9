"""Inputs and outputs of the inventory activities (workflows/inventory/ ↔ activities/inventory_*.py).

Three sides: the cloud's lists (Nova flavors, Cinder volume types, Glance images: the controller's own
admin connection, read only), the published objects in Kubernetes (list, create, replace, delete, one call
each), and the checks the Volume and Server kinds run against what is published before any cloud call.

Pure pydantic: workflows import it inside Temporal's sandbox.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from osprov.api.activity import Activity
from osprov.api.inventory_config import InventoryConfigSpec


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- the schedule's runs ------------------------------------------------------------------------------------


class InventoryRun(_Model):
    """What a scheduled inventory workflow is started with: the InventoryConfig it publishes for."""

    config: str


class InventoryReport(_Model):
    """What a run did (its result, in the Web UI): object names, and why anything was left out."""

    kind: str
    offered: list[str] = Field(default_factory=list)
    created: list[str] = Field(default_factory=list)
    replaced: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)
    left_out: list[str] = Field(default_factory=list)  # "<what>: <why>" per cloud object not offered
    cloud_listed: bool = True  # False: the cloud's list came from the worker's cache (volume types)


# --- configuration ------------------------------------------------------------------------------------------


class ConfigRef(_Model):
    name: str


class ConfigRead(_Model):
    """found=False: no InventoryConfig of that name (every inventory then offers what it offers unconfigured).
    resource_version changes with every change of the object (the volume types' cache key)."""

    found: bool
    resource_version: str = ""
    spec: InventoryConfigSpec | None = None


# --- the cloud ----------------------------------------------------------------------------------------------


class ListFlavors(_Model):
    pass


class NovaFlavor(_Model):
    id: str
    name: str
    vcpus: int
    ram_mib: int
    disk_gib: int
    is_public: bool
    disabled: bool = False
    extra_specs: dict[str, str] = Field(default_factory=dict)


class ListVolumeTypes(_Model):
    """config_version: the InventoryConfig's resourceVersion. The worker serves the list it fetched under the
    same version and the same credentials from memory; anything else fetches afresh."""

    config_version: str


class CinderType(_Model):
    id: str
    name: str
    description: str | None = None
    is_public: bool = True


class VolumeTypes(_Model):
    types: list[CinderType] = Field(default_factory=list)
    fetched: bool  # False: from the worker's cache (no Cinder call)


class ListImages(_Model):
    """signing_public_key: the operator's PEM key; the activity verifies each signed image against it."""

    signing_public_key: str | None = None


SignatureCheck = Literal["valid", "invalid", "absent", "unchecked"]  # unchecked: no key configured


class GlanceImage(_Model):
    id: str
    name: str
    status: str
    visibility: str
    min_disk_gib: int = 0
    min_ram_mib: int = 0
    properties: dict[str, str] = Field(default_factory=dict)  # standard and custom, as text
    signature: SignatureCheck = "absent"


# --- published objects --------------------------------------------------------------------------------------


class PublishedQuery(_Model):
    plural: str
    inventory: str  # the InventoryConfig name in the objects' label


class Published(_Model):
    name: str
    uid: str
    spec: dict[str, Any] = Field(default_factory=dict)


class Publish(_Model):
    """Create the object, or replace the spec of the one this inventory published under the name."""

    plural: str
    kind: str
    inventory: str
    name: str
    spec: dict[str, Any]


class Unpublish(_Model):
    plural: str
    name: str
    uid: str  # precondition: never deletes a newer object of the same name


class WriteDone(_Model):
    changed: bool


# --- checks of the Volume and Server kinds ------------------------------------------------------------------


class OfferQuery(_Model):
    """image_id: the image a Server wants (empty for the volume classes' query)."""

    image_id: str = ""


class OfferedVolumeClass(_Model):
    name: str
    volume_type_id: str
    min_capacity_gib: int | None = None
    max_capacity_gib: int | None = None


class Offer(_Model):
    """enabled=False: this worker runs no inventory (OSPROV_INVENTORY_CONFIG unset): nothing to check against.
    image_offered: the queried image is published; volume_classes: every published VolumeClass."""

    enabled: bool
    image_offered: bool = False
    volume_classes: list[OfferedVolumeClass] = Field(default_factory=list)


# --- activities: the typed contracts (osprov.api.activity) ---------------------------------------------------
READ_CONFIG: Activity[ConfigRef, ConfigRead] = Activity("inventory.read_config", ConfigRef, ConfigRead)
LIST_FLAVORS: Activity[ListFlavors, list[NovaFlavor]] = Activity(
    "inventory.list_flavors", ListFlavors, list[NovaFlavor]
)
LIST_VOLUME_TYPES: Activity[ListVolumeTypes, VolumeTypes] = Activity(
    "inventory.list_volume_types", ListVolumeTypes, VolumeTypes
)
LIST_IMAGES: Activity[ListImages, list[GlanceImage]] = Activity(
    "inventory.list_images", ListImages, list[GlanceImage]
)
LIST_PUBLISHED: Activity[PublishedQuery, list[Published]] = Activity(
    "inventory.list_published", PublishedQuery, list[Published]
)
PUBLISH: Activity[Publish, WriteDone] = Activity("inventory.publish", Publish, WriteDone)
UNPUBLISH: Activity[Unpublish, WriteDone] = Activity("inventory.unpublish", Unpublish, WriteDone)
OFFERED_IMAGE: Activity[OfferQuery, Offer] = Activity("inventory.offered_image", OfferQuery, Offer)
OFFERED_VOLUME_CLASSES: Activity[OfferQuery, Offer] = Activity(
    "inventory.offered_volume_classes", OfferQuery, Offer
)
