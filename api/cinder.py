"""Volume (cinder.osh.openstack.org/v1alpha1): a Cinder volume in a Keystone project.

Contract: ../shared/spec/volumes.md. spec.size may grow (Cinder extends the volume in place, online when it
is attached) but never shrink; retyping is out of scope. The CRD rejects what cannot be done (CEL transition
rules) instead of silently ignoring it.
"""

from __future__ import annotations

from typing import Self

from pydantic import ConfigDict, Field, model_validator

from osprov.api.common import CLOUD_SPEC_RULES, CloudSpec, CloudStatus
from osprov.api.limits import Tags, immutable_if_set
from osprov.api.region import ObjectName

CINDER_GROUP = "cinder.osh.openstack.org"
# Cinder's largest volume size (cinder/api/validation/parameter_types.py `volume_size`: DB_MAX_INT).
MAX_SIZE_GIB = 0x7FFFFFFF

SIZE_SHRINK_MESSAGE = (
    "spec.size cannot shrink: Cinder only extends a volume; keep the current size, or copy the data to a new, "
    "smaller Volume"
)
CLASS_IMMUTABLE_MESSAGE = (
    "spec.volumeClassID cannot change: retyping a volume is not supported; create a new Volume"
)
VOLUME_CLASS_IMMUTABLE_MESSAGE = (
    "spec.volumeClass cannot change: retyping a volume is not supported; create a new Volume"
)
ONE_CLASS_MESSAGE = "set spec.volumeClass or spec.volumeClassID, not both (volumeClassID is the older form)"


class VolumeSpec(CloudSpec):
    """A Cinder volume named volume-{metadata.uid} in its Identity's project (or spec.project)."""

    # Spec level, so adding or removing volumeClassID is caught as well as changing it.
    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                *CLOUD_SPEC_RULES,
                immutable_if_set("volumeClassID", CLASS_IMMUTABLE_MESSAGE),
                immutable_if_set("volumeClass", VOLUME_CLASS_IMMUTABLE_MESSAGE),
                {"rule": "!(has(self.volumeClass) && has(self.volumeClassID))", "message": ONE_CLASS_MESSAGE},
            ]
        }
    )

    size: int = Field(
        ge=1,
        le=MAX_SIZE_GIB,
        description=f"Size in whole GiB (1 to {MAX_SIZE_GIB}). May grow (the volume is extended in place, "
        "online while attached where Cinder allows it), never shrink.",
        json_schema_extra={
            "x-kubernetes-validations": [{"rule": "self >= oldSelf", "message": SIZE_SHRINK_MESSAGE}]
        },
    )
    volume_class_id: str | None = Field(
        default=None,
        alias="volumeClassID",
        min_length=1,
        max_length=255,
        description="The ID of the Cinder volume type (the older form of volumeClass: with the region "
        "inventory on, it must be the volume type of an offered VolumeClass, within its size bounds). Unset: "
        "Cinder's default type. Immutable.",
    )
    volume_class: ObjectName | None = Field(
        default=None,
        alias="volumeClass",
        description="Name of a VolumeClass (`kubectl get volumeclasses`): the volume is created with its "
        "Cinder volume type, once the class is found offered and spec.size within its bounds. Immutable.",
    )

    @model_validator(mode="after")
    def _one_class(self) -> Self:
        if self.volume_class is not None and self.volume_class_id is not None:
            raise ValueError(ONE_CLASS_MESSAGE)
        return self

    tags: Tags = Field(
        default_factory=dict,
        description="User tags (at most 32; keys of at most 244 letters, digits, spaces or - _ : .; values of at "
        "most 255 characters), written to Cinder metadata under a namespaced prefix; the controller's own "
        "linkage keys are written last, so a tag can never override them.",
    )


class VolumeStatus(CloudStatus):
    size: int | None = Field(default=None, description="Size in GiB of the provisioned volume.")
    volume_id: str | None = Field(default=None, alias="volumeID", description="ID of the Cinder volume.")
