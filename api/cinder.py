"""Volume (cinder.osh.openstack.org/v1alpha1): a Cinder volume in a Keystone project.

Contract: ../shared/spec/volumes.md. Resizing and retyping are out of scope, so the CRD rejects changes to
size and class (CEL transition rules) instead of silently ignoring them.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field

from osprov.api.common import CloudSpec, CloudStatus

CINDER_GROUP = "cinder.osh.openstack.org"

SIZE_IMMUTABLE_MESSAGE = "spec.size cannot change: resizing a volume is not supported; create a new Volume"
CLASS_IMMUTABLE_RULE = (
    "has(self.volumeClassID) == has(oldSelf.volumeClassID) && "
    "(!has(self.volumeClassID) || self.volumeClassID == oldSelf.volumeClassID)"
)
CLASS_IMMUTABLE_MESSAGE = (
    "spec.volumeClassID cannot change: retyping a volume is not supported; create a new Volume"
)


class VolumeSpec(CloudSpec):
    """A Cinder volume named volume-{metadata.uid} in spec.project."""

    # Spec level, so adding or removing volumeClassID is caught as well as changing it.
    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [{"rule": CLASS_IMMUTABLE_RULE, "message": CLASS_IMMUTABLE_MESSAGE}]
        }
    )

    size: int = Field(
        ge=1,
        description="Size in whole GiB (at least 1). Immutable.",
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
    tags: dict[str, str] = Field(
        default_factory=dict,
        description="User tags, written to Cinder metadata under a namespaced prefix; the controller's own "
        "linkage keys are written last, so a tag can never override them.",
        json_schema_extra={"maxProperties": 32},
    )


class VolumeStatus(CloudStatus):
    size: int | None = Field(default=None, description="Size in GiB of the provisioned volume.")
    volume_id: str | None = Field(default=None, alias="volumeID", description="ID of the Cinder volume.")
