"""The region inventory's Kubernetes calls: the operator's InventoryConfig, the published objects, and the
checks the Volume and Server kinds run against them. One API call each, except a publish, which reads the
object before replacing it (a replace must carry the current resourceVersion).

Published objects carry the label region.osh.openstack.org/inventory=<InventoryConfig name>: an inventory
lists, replaces and deletes only objects with its own label, and never adopts one without it.
"""

from __future__ import annotations

import re
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from osprov.activities import errors
from osprov.activities.contract import implements
from osprov.activities.kube import _raise_for as raise_for
from osprov.activities.kube import api_client
from osprov.api.inventory_config import InventoryConfigSpec
from osprov.api.inventory_io import (
    LIST_PUBLISHED,
    OFFERED_IMAGE,
    OFFERED_VOLUME_CLASSES,
    PUBLISH,
    READ_CONFIG,
    UNPUBLISH,
    ConfigRead,
    ConfigRef,
    Offer,
    OfferedVolumeClass,
    OfferQuery,
    Publish,
    Published,
    PublishedQuery,
    Unpublish,
    WriteDone,
)
from osprov.api.region import (
    INVENTORY_LABEL,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    NAME_PATTERN,
    REGION_GROUP,
    REGION_VERSION,
)
from osprov.api.registry import INVENTORY, INVENTORY_CONFIG
from osprov.runtime.settings import Settings

_NAME = re.compile(NAME_PATTERN)


def _custom() -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client())


def _get(plural: str, name: str) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = _custom().get_cluster_custom_object(
            REGION_GROUP, REGION_VERSION, plural, name
        )  # type: ignore[assignment]
    except ApiException as err:
        if err.status == 404:
            return None
        raise_for(err, f"read of {plural}/{name}")
        raise
    return found


def _label(obj: dict[str, Any]) -> str | None:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    value = labels.get(INVENTORY_LABEL)
    return str(value) if value is not None else None


@implements(READ_CONFIG)
def read_config(request: ConfigRef) -> ConfigRead:
    obj = _get(INVENTORY_CONFIG.plural, request.name)
    if obj is None:
        return ConfigRead(found=False)
    try:
        spec = InventoryConfigSpec.model_validate(obj.get("spec") or {})
    except ValueError as err:  # the CRD validates it; only a CRD older than this worker lets this through
        raise errors.invalid(f"InventoryConfig {request.name} is not valid: {err}") from None
    version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
    return ConfigRead(found=True, resource_version=version, spec=spec)


def _list(plural: str, inventory: str) -> list[dict[str, Any]]:
    try:
        listed: dict[str, Any] = _custom().list_cluster_custom_object(  # type: ignore[assignment]
            REGION_GROUP, REGION_VERSION, plural, label_selector=f"{INVENTORY_LABEL}={inventory}"
        )
    except ApiException as err:
        raise_for(err, f"list of {plural}")
        raise
    return list(listed.get("items") or [])


@implements(LIST_PUBLISHED)
def list_published(request: PublishedQuery) -> list[Published]:
    return sorted(
        (
            Published(
                name=str(o["metadata"]["name"]), uid=str(o["metadata"]["uid"]), spec=dict(o.get("spec") or {})
            )
            for o in _list(request.plural, request.inventory)
        ),
        key=lambda p: p.name,
    )


def _body(request: Publish, current: dict[str, Any] | None) -> dict[str, Any]:
    labels = {INVENTORY_LABEL: request.inventory, MANAGED_BY_LABEL: MANAGED_BY}
    if current is None:
        metadata: dict[str, Any] = {"name": request.name, "labels": labels}
    else:
        metadata = dict(current["metadata"])
        metadata["labels"] = {**(metadata.get("labels") or {}), **labels}
    return {
        "apiVersion": f"{REGION_GROUP}/{REGION_VERSION}",
        "kind": request.kind,
        "metadata": metadata,
        "spec": request.spec,
    }


@implements(PUBLISH)
def publish(request: Publish) -> WriteDone:
    """Create the object, or replace the spec of the one this inventory published under that name."""
    api, what = _custom(), f"{request.plural}/{request.name}"
    current = _get(request.plural, request.name)
    if current is None:
        try:
            api.create_cluster_custom_object(
                REGION_GROUP, REGION_VERSION, request.plural, _body(request, None)
            )
        except ApiException as err:
            raise_for(err, f"create of {what}")  # 409: created meanwhile; the retry replaces it
        return WriteDone(changed=True)
    if _label(current) != request.inventory:
        raise errors.conflict(
            f"{request.kind} {request.name} exists but was not published by inventory {request.inventory!r} "
            f"(label {INVENTORY_LABEL}={_label(current)!r}); osprov does not take it over: delete it"
        )
    if current.get("spec") == request.spec:
        return WriteDone(changed=False)
    try:
        api.replace_cluster_custom_object(
            REGION_GROUP, REGION_VERSION, request.plural, request.name, _body(request, current)
        )
    except ApiException as err:
        raise_for(err, f"replace of {what}")  # 409: changed meanwhile; the retry reads it again
    return WriteDone(changed=True)


@implements(UNPUBLISH)
def unpublish(request: Unpublish) -> WriteDone:
    options = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=request.uid))
    try:
        _custom().delete_cluster_custom_object(
            REGION_GROUP, REGION_VERSION, request.plural, request.name, body=options
        )
    except ApiException as err:
        if err.status in (404, 409):  # gone already, or another object of the same name now
            return WriteDone(changed=False)
        raise_for(err, f"delete of {request.plural}/{request.name}")
    return WriteDone(changed=True)


@implements(OFFERED_IMAGE)
def offered_image(request: OfferQuery) -> Offer:
    """Whether this controller's inventory publishes the image (one read by name: the Glance ID)."""
    inventory = Settings().inventory_config
    if not inventory:
        return Offer(enabled=False)
    if not _NAME.fullmatch(request.image_id) or len(request.image_id) > 253:
        return Offer(enabled=True, image_offered=False)  # no object can have that name
    obj = _get(INVENTORY["Image"].plural, request.image_id)
    offered = (
        obj is not None and _label(obj) == inventory and (obj.get("spec") or {}).get("id") == request.image_id
    )
    return Offer(enabled=True, image_offered=offered)


@implements(OFFERED_VOLUME_CLASSES)
def offered_volume_classes(_: OfferQuery) -> Offer:
    """Every VolumeClass this controller's inventory publishes (a handful: one list)."""
    inventory = Settings().inventory_config
    if not inventory:
        return Offer(enabled=False)
    classes = []
    for obj in _list(INVENTORY["VolumeClass"].plural, inventory):
        spec = obj.get("spec") or {}
        classes.append(
            OfferedVolumeClass(
                name=str(obj["metadata"]["name"]),
                volume_type_id=str(spec.get("volumeTypeID") or ""),
                min_capacity_gib=spec.get("minCapacityGiB"),
                max_capacity_gib=spec.get("maxCapacityGiB"),
            )
        )
    return Offer(enabled=True, volume_classes=sorted(classes, key=lambda c: c.name))


ACTIVITIES = [read_config, list_published, publish, unpublish, offered_image, offered_volume_classes]
