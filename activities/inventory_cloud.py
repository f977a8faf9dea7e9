"""The region inventory's reads of the cloud: Nova flavors, Cinder volume types, Glance images.

Region-level reads with the controller's own connection (activities.cloud.admin_connection): what the
region offers is not any project's. Each activity lists once and returns typed rows (api/inventory_io.py);
the workflows decide what to publish.

Cinder's volume types are cached in the worker's memory: the list is asked again only when the
InventoryConfig changed (its resourceVersion) or the credentials did (another cloud, another clouds.yaml,
or the same file rewritten: a rotated password). Flavors and images are listed on every run.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

import structlog

from osprov.activities import cloud, signing
from osprov.activities.cloud import openstack_errors
from osprov.activities.contract import implements
from osprov.api.image_properties import SIGNATURE
from osprov.api.inventory_io import (
    LIST_FLAVORS,
    LIST_IMAGES,
    LIST_VOLUME_TYPES,
    CinderType,
    GlanceImage,
    ListFlavors,
    ListImages,
    ListVolumeTypes,
    NovaFlavor,
    SignatureCheck,
    VolumeTypes,
)

log = structlog.get_logger("osprov.activities.inventory")

# Glance attributes openstacksdk keeps outside `properties` that are image properties to osprov.
_STANDARD_PROPERTIES = ("architecture", "os_distro", "os_version", "os_type")


@implements(LIST_FLAVORS)
def list_flavors(_: ListFlavors) -> list[NovaFlavor]:
    """Every flavor the controller sees (public and private: the workflow offers the public ones)."""
    with openstack_errors("list Nova flavors", service="Nova"):
        found = cloud.admin_connection().compute.flavors(details=True, is_public="None")
        return sorted((_flavor(f) for f in found), key=lambda f: f.id)


def _flavor(f: Any) -> NovaFlavor:
    return NovaFlavor(
        id=str(f.id),
        name=str(f.name or f.id),
        vcpus=int(f.vcpus or 0),
        ram_mib=int(f.ram or 0),
        disk_gib=int(f.disk or 0),
        is_public=bool(f.is_public),
        disabled=bool(f.is_disabled),
        extra_specs={str(k): str(v) for k, v in (f.extra_specs or {}).items()},
    )


# --- Cinder volume types, cached ------------------------------------------------------------------------


@dataclass(frozen=True)
class _TypesKey:
    credentials: tuple[Any, ...]
    config_version: str


_types_lock = threading.Lock()
_types_cache: dict[_TypesKey, list[CinderType]] = {}


def credentials_version() -> tuple[Any, ...]:
    """What identifies the controller's credentials without reading them: the cloud, the clouds.yaml file
    and that file's identity (inode, size, mtime: a Secret remounted with new content is another file)."""
    settings = cloud.CloudSettings.from_env()
    path = settings.config_file
    try:
        st = os.stat(path) if path else None
    except OSError:
        st = None
    return (settings, (st.st_ino, st.st_size, st.st_mtime_ns) if st else None)


@implements(LIST_VOLUME_TYPES)
def list_volume_types(request: ListVolumeTypes) -> VolumeTypes:
    key = _TypesKey(credentials_version(), request.config_version)
    with _types_lock:
        cached = _types_cache.get(key)
    if cached is not None:
        return VolumeTypes(types=cached, fetched=False)
    with openstack_errors("list Cinder volume types", service="Cinder"):
        found = cloud.admin_connection().block_storage.types(is_public="None")
        types = sorted(
            (
                CinderType(
                    id=str(t.id),
                    name=str(t.name or t.id),
                    description=t.description or None,
                    is_public=bool(t.is_public) if t.is_public is not None else True,
                )
                for t in found
            ),
            key=lambda t: t.id,
        )
    with _types_lock:
        _types_cache.clear()  # only the current configuration and credentials are worth keeping
        _types_cache[key] = types
    log.info("cinder volume types listed", count=len(types), config_version=request.config_version)
    return VolumeTypes(types=types, fetched=True)


def forget_volume_types() -> None:
    """Drop the cache (tests)."""
    with _types_lock:
        _types_cache.clear()


# --- Glance images -------------------------------------------------------------------------------------


def _properties(image: Any) -> dict[str, str]:
    """Glance's custom properties (always text) and the standard ones openstacksdk keeps as attributes."""
    props = {str(k): v for k, v in (image.properties or {}).items() if isinstance(v, str)}
    for name in _STANDARD_PROPERTIES:
        value = getattr(image, name, None)
        if value:
            props[name] = str(value)
    return props


def _signing_key(pem: str | None) -> tuple[Any, bool]:
    """The configured key, and whether one was configured but cannot be used."""
    if not pem:
        return None, False
    try:
        return signing.load_key(pem), False
    except signing.SigningKeyError as err:
        log.error("the image signing key cannot be used", error=str(err))
        return None, True


@implements(LIST_IMAGES)
def list_images(request: ListImages) -> list[GlanceImage]:
    """Glance's public images, each with its signature checked against the configured key. A configured key
    that cannot be used verifies nothing (fail closed: no signed image is offered)."""
    key, broken = _signing_key(request.signing_public_key)
    with openstack_errors("list Glance images", service="Glance"):
        images = list(cloud.admin_connection().image.images(visibility="public"))
    rows = []
    for image in images:
        props = _properties(image)
        signature = props.get(SIGNATURE)
        outcome: SignatureCheck = (
            "invalid"
            if broken and signature
            else signing.check(key, signature, str(image.hash_algo or ""), str(image.hash_value or ""))
        )
        rows.append(
            GlanceImage(
                id=str(image.id),
                name=str(image.name or image.id),
                status=str(image.status or ""),
                visibility=str(image.visibility or ""),
                min_disk_gib=int(image.min_disk or 0),
                min_ram_mib=int(image.min_ram or 0),
                properties=props,
                signature=outcome,
            )
        )
    return sorted(rows, key=lambda i: i.id)


ACTIVITIES = [list_flavors, list_volume_types, list_images]
