"""Volume (cinder.osh.openstack.org/v1alpha1): a Cinder volume in a Keystone project.

Contract: ../shared/spec/volumes.md. Resizing and retyping are out of scope, so the CRD rejects changes to
size and class (CEL transition rules) instead of silently ignoring them.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field

from osprov.api.common import CLOUD_SPEC_RULES, CloudSpec, CloudStatus
from osprov.api.limits import Tags, immutable_if_set

CINDER_GROUP = "cinder.osh.openstack.org"
# Cinder's largest volume size (cinder/api/validation/parameter_types.py `volume_size`: DB_MAX_INT).
MAX_SIZE_GIB = 0x7FFFFFFF

SIZE_IMMUTABLE_MESSAGE = "spec.size cannot change: resizing a volume is not supported; create a new Volume"
CLASS_IMMUTABLE_MESSAGE = (
    "spec.volumeClassID cannot change: retyping a volume is not supported; create a new Volume"
)


class VolumeSpec(CloudSpec):
    """A Cinder volume named volume-{metadata.uid} in its Identity's project (or spec.project)."""

    # Spec level, so adding or removing volumeClassID is caught as well as changing it.
    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                *CLOUD_SPEC_RULES,
                immutable_if_set("volumeClassID", CLASS_IMMUTABLE_MESSAGE),
            ]
        }
    )

    size: int = Field(
        ge=1,
        le=MAX_SIZE_GIB,
        description=f"Size in whole GiB (1 to {MAX_SIZE_GIB}). Immutable.",
        json_schema_extra={
            "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": SIZE_IMMUTABLE_MESSAGE}]
        },
    )
    volume_class_id: str | None = Field(
        default=None,
        alias="volumeClassID",
        min_length=1,
        max_length=255,
        description="Volume class: the ID of the Cinder volume type. Unset: Cinder's default type. Immutable.",
    )
    tags: Tags = Field(
        default_factory=dict,
        description="User tags (at most 32; keys of at most 244 letters, digits, spaces or - _ : .; values of at "
        "most 255 characters), written to Cinder metadata under a namespaced prefix; the controller's own "
        "linkage keys are written last, so a tag can never override them.",
    )


class VolumeStatus(CloudStatus):
    size: int | None = Field(default=None, description="Size in GiB of the provisioned volume.")
    volume_id: str | None = Field(default=None, alias="volumeID", description="ID of the Cinder volume.")
