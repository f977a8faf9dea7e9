"""InventoryConfig (region.osh.openstack.org/v1alpha1): the operator's configuration of the region inventory.

A cluster-scoped resource, one per controller, named by OSPROV_INVENTORY_CONFIG (the worker reads only
that one object): the apiserver validates it (OpenAPI and CEL, generated from this model), so a bad bound
or an unknown field is refused at `kubectl apply` instead of being found by a scheduled run. What each
part does is in docs/inventory.md; deploy/inventory-config.example.yaml is an example.

- flavors: Nova flavors are discovered; an entry here overrides what users see of one (by Nova ID).
- volumeClasses: fail closed. Only the Cinder volume types whose IDs are in selector.ids are offered; a
  missing volumeClasses, a missing selector or an empty ids list offers none.
- images: public Glance images are offered when their properties are valid; with signingPublicKey, an
  image carrying a signature must carry a valid one (else it is not offered), and with requireSignature
  an unsigned public image is not offered either.

Pure pydantic: workflows import it inside Temporal's sandbox.
"""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import ConfigDict, Field, model_validator

from osprov.api.common import CamelModel
from osprov.api.region import Architecture, FlavorGPU, GiB, Media, ObjectName, Performance

MAX_ENTRIES = 512  # flavors, volume classes, IDs in one list (keeps CEL cost and object size bounded)
ID_MAX = 255
CAPACITY_RULE = (
    "!has(self.minCapacityGiB) || !has(self.maxCapacityGiB) || self.maxCapacityGiB >= self.minCapacityGiB"
)
CAPACITY_MESSAGE = "maxCapacityGiB must be at least minCapacityGiB"
PEM_PUBLIC_KEY = r"^-----BEGIN PUBLIC KEY-----\n[A-Za-z0-9+/=\n]+-----END PUBLIC KEY-----\n?$"

OpenStackID = Annotated[str, Field(min_length=1, max_length=ID_MAX)]


class FlavorOverride(CamelModel):
    """What users see of one Nova flavor, overriding what Nova says."""

    id: str = Field(min_length=1, max_length=ID_MAX, description="Nova flavor ID.")
    architecture: Architecture | None = Field(default=None, description="CPU architecture.")
    baremetal: bool | None = Field(default=None, description="Servers of the flavor are physical machines.")
    gpu: FlavorGPU | None = Field(default=None, description="GPUs of a server of the flavor.")


class IDSelector(CamelModel):
    ids: list[OpenStackID] | None = Field(
        default=None, max_length=MAX_ENTRIES, description="IDs, exactly as OpenStack reports them."
    )


class VolumeClassConfig(CamelModel):
    """What users see of one allowed Cinder volume type (an entry for an ID not in selector.ids is ignored)."""

    model_config = ConfigDict(
        json_schema_extra={"x-kubernetes-validations": [{"rule": CAPACITY_RULE, "message": CAPACITY_MESSAGE}]}
    )

    id: str = Field(min_length=1, max_length=ID_MAX, description="Cinder volume type ID.")
    name: ObjectName | None = Field(
        default=None,
        description="Name of the VolumeClass (what Volume.spec.volumeClass names); unset: the volume "
        "type's name, in lower case.",
    )
    min_capacity_gib: GiB | None = Field(
        default=None, alias="minCapacityGiB", description="Smallest volume size in whole GiB."
    )
    max_capacity_gib: GiB | None = Field(
        default=None, alias="maxCapacityGiB", description="Largest volume size in whole GiB."
    )
    supported_flavors: IDSelector | None = Field(
        default=None,
        description="Nova flavors whose servers may use the class; unset or no IDs: any flavor.",
    )
    media: Media | None = Field(default=None, description="hdd, ssd or nvme.")
    performance: Performance | None = Field(default=None, description="Performance caps.")
    encrypted: bool | None = Field(default=None, description="Volumes of the class are encrypted at rest.")

    @model_validator(mode="after")
    def _bounds(self) -> Self:
        low, high = self.min_capacity_gib, self.max_capacity_gib
        if low is not None and high is not None and high < low:
            raise ValueError(CAPACITY_MESSAGE)
        return self


class VolumeClassesConfig(CamelModel):
    selector: IDSelector | None = Field(
        default=None,
        description="The allow-list: Cinder volume type IDs offered as VolumeClasses. Unset or empty: none.",
    )
    classes: list[VolumeClassConfig] = Field(
        default_factory=list,
        max_length=MAX_ENTRIES,
        description="What users see of the allowed volume types.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"]},
    )


class ImagesConfig(CamelModel):
    signing_public_key: str | None = Field(
        default=None,
        max_length=4096,
        pattern=PEM_PUBLIC_KEY,
        description="PEM ECDSA public key (SubjectPublicKeyInfo) that signs image digests: a public image "
        "whose osprov:signature property does not verify against it is not offered.",
    )
    require_signature: bool = Field(
        default=False,
        description="Offer only public images with a valid signature (needs signingPublicKey).",
    )


class InventoryConfigSpec(CamelModel):
    """The operator's configuration of the region inventory (docs/inventory.md)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.images) || !has(self.images.requireSignature) || "
                    "!self.images.requireSignature || has(self.images.signingPublicKey)",
                    "message": "images.requireSignature needs images.signingPublicKey",
                }
            ]
        }
    )

    default_architecture: Architecture | None = Field(
        default=None,
        description="Architecture of flavors and images that do not name one (unset: x86_64).",
    )
    flavors: list[FlavorOverride] = Field(
        default_factory=list,
        max_length=MAX_ENTRIES,
        description="Overrides of what users see of Nova flavors, by flavor ID.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"]},
    )
    volume_classes: VolumeClassesConfig | None = Field(
        default=None,
        description="Cinder volume types offered as VolumeClasses (fail closed: unset offers none).",
    )
    images: ImagesConfig = Field(default_factory=ImagesConfig, description="Glance images offered.")

    @model_validator(mode="after")
    def _signature_needs_key(self) -> Self:
        if self.images.require_signature and not self.images.signing_public_key:
            raise ValueError("images.requireSignature needs images.signingPublicKey")
        return self

    def flavor_override(self, flavor_id: str) -> FlavorOverride | None:
        return next((f for f in self.flavors if f.id == flavor_id), None)

    def allowed_volume_types(self) -> list[str]:
        """The allow-list, in the operator's order; empty when anything on the way is missing."""
        classes = self.volume_classes
        if classes is None or classes.selector is None:
            return []
        return list(dict.fromkeys(classes.selector.ids or []))

    def volume_class(self, type_id: str) -> VolumeClassConfig | None:
        if self.volume_classes is None:
            return None
        return next((c for c in self.volume_classes.classes if c.id == type_id), None)
