"""What the region inventory's tests need in the local cloud (docs/inventory.md, "Local stack"):

- flavors with extra specs: an aarch64 one (cpu.architecture), a baremetal one (Ironic's convention), a
  GPU one (pci_passthrough:alias), next to catalog.FLAVORS (no extra specs);
- a second Cinder volume type (catalog.VOLUME_TYPE is the first);
- images with osprov properties, one of them signed: an ECDSA P-256 key is generated at set-up into the
  state dir (never the repository), and the signature is made over Glance's own digest of the data;
- the stack's InventoryConfig (`manifest_path()`): the two volume types allowed and enriched, the GPU
  flavor described, the public key. Tests and the demo apply it (its name: CONFIG_NAME).

Idempotent like the rest of catalog.bootstrap_resources: looked up before created; a signature that no
longer verifies (a new key) is made again.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from keystoneauth1 import session as ks_session

from devenv.config import HOST, PORTS, state_dir, write_private
from osprov.api.image_properties import SIGNATURE, signed_message

CONFIG_NAME = "osprov-dev"
# id: (name, vcpus, ram MiB, disk GiB, extra specs)
FLAVORS: dict[str, tuple[str, int, int, int, dict[str, str]]] = {
    "osprov-arm": ("a1.small", 2, 1024, 5, {"cpu.architecture": "aarch64"}),
    "osprov-metal": (  # Ironic's convention: the node's size, but no VCPU/RAM/disk from Placement
        "bm.gold",
        8,
        16384,
        100,
        {
            "resources:CUSTOM_BAREMETAL_GOLD": "1",
            "resources:VCPU": "0",
            "resources:MEMORY_MB": "0",
            "resources:DISK_GB": "0",
        },
    ),
    "osprov-gpu": ("g1.large", 4, 4096, 10, {"pci_passthrough:alias": "a100:1"}),
}
SSD_TYPE = "osprov-ssd"
UBUNTU_IMAGE = "osprov-ubuntu"  # properties, unsigned
SIGNED_IMAGE = "osprov-signed"  # properties, signed
IMAGE_PROPERTIES: dict[str, dict[str, str]] = {
    UBUNTU_IMAGE: {
        "architecture": "x86_64",
        "os_type": "linux",
        "os_distro": "ubuntu",
        "os_version": "24.04",
        "osprov:os:family": "debian",
        "osprov:os:codename": "noble",
        "osprov:package:kubernetes": "v1.31.2",
        "osprov:virtualization": "virtualized",
    },
    SIGNED_IMAGE: {
        "architecture": "aarch64",
        "os_type": "linux",
        "os_distro": "rocky",
        "os_version": "9.4",
        "osprov:os:family": "redhat",
        "osprov:gpu:vendor": "NVIDIA",
        "osprov:gpu:driver": "550.90",
        "osprov:gpu:models": "A100",
        "osprov:tag:tier": "gold",
    },
}
COMPUTE = {"OpenStack-API-Version": "compute 2.79"}
JSON_PATCH = {"Content-Type": "application/openstack-images-v2.1-json-patch"}


def _url(port: int, path: str) -> str:
    return f"http://{HOST}:{port}{path}"


def signing_key_path() -> Path:
    return state_dir() / "inventory" / "image-signing-key.pem"


def manifest_path() -> Path:
    return state_dir() / "inventory" / "inventory-config.yaml"


def signing_key() -> ec.EllipticCurvePrivateKey:
    """The stack's image signing key, generated on first use (state dir, mode 0600)."""
    path = signing_key_path()
    if not path.exists():
        key = ec.generate_private_key(ec.SECP256R1())
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        write_private(path, pem.decode())
    loaded = serialization.load_pem_private_key(path.read_bytes(), password=None)
    assert isinstance(loaded, ec.EllipticCurvePrivateKey)
    return loaded


def public_key_pem() -> str:
    public = signing_key().public_key()
    return public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()


def sign(hash_algo: str, hash_value: str, key: ec.EllipticCurvePrivateKey | None = None) -> str:
    """The osprov:signature value for an image Glance hashed as (hash_algo, hash_value)."""
    der = (key or signing_key()).sign(signed_message(hash_algo, hash_value), ec.ECDSA(hashes.SHA256()))
    return base64.b64encode(der).decode()


def _flavors(sess: ks_session.Session) -> None:
    listed = sess.get(_url(PORTS.nova, "/v2.1/flavors/detail?is_public=None"), headers=COMPUTE).json()
    have = {f["id"]: f for f in listed["flavors"]}
    for flavor_id, (name, vcpus, ram, disk, specs) in FLAVORS.items():
        if flavor_id not in have:
            body = {"flavor": {"id": flavor_id, "name": name, "vcpus": vcpus, "ram": ram, "disk": disk}}
            sess.post(_url(PORTS.nova, "/v2.1/flavors"), headers=COMPUTE, json=body)
        if (have.get(flavor_id) or {}).get("extra_specs") != specs:
            sess.post(
                _url(PORTS.nova, f"/v2.1/flavors/{flavor_id}/os-extra_specs"),
                headers=COMPUTE,
                json={"extra_specs": specs},
            )


def _volume_types(sess: ks_session.Session, project_id: str) -> dict[str, str]:
    """Name -> ID of the stack's volume types (the catalog's and the SSD one, made here)."""
    base = _url(PORTS.cinder, f"/v3/{project_id}/types")
    types = {t["name"]: t["id"] for t in sess.get(f"{base}?is_public=None").json()["volume_types"]}
    if SSD_TYPE not in types:
        body = {
            "volume_type": {
                "name": SSD_TYPE,
                "description": "solid-state pool (the fake backend)",
                "os-volume-type-access:is_public": True,
                "extra_specs": {"volume_backend_name": "fake"},
            }
        }
        types[SSD_TYPE] = sess.post(base, json=body).json()["volume_type"]["id"]
    return types


def _image(sess: ks_session.Session, name: str, fill: int) -> dict[str, Any]:
    images = sess.get(_url(PORTS.glance, f"/v2/images?name={name}")).json()["images"]
    active = [i for i in images if i["status"] == "active"]
    if active:
        return active[0]  # type: ignore[no-any-return]
    for stale in images:
        sess.delete(_url(PORTS.glance, f"/v2/images/{stale['id']}"))
    body = {"name": name, "disk_format": "raw", "container_format": "bare", "visibility": "public"}
    image = sess.post(_url(PORTS.glance, "/v2/images"), json=body).json()
    sess.put(
        _url(PORTS.glance, f"/v2/images/{image['id']}/file"),
        data=bytes([fill]) * 1024 * 1024,
        headers={"Content-Type": "application/octet-stream"},
    )
    return sess.get(_url(PORTS.glance, f"/v2/images/{image['id']}")).json()  # type: ignore[no-any-return]


def set_properties(sess: ks_session.Session, image: dict[str, Any], wanted: dict[str, str]) -> None:
    """Make the image's properties `wanted` (JSON patch: add or replace each that differs)."""
    ops = [
        {"op": "replace" if key in image else "add", "path": f"/{key}", "value": value}
        for key, value in wanted.items()
        if image.get(key) != value
    ]
    if ops:
        sess.patch(_url(PORTS.glance, f"/v2/images/{image['id']}"), json=ops, headers=JSON_PATCH)


def _images(sess: ks_session.Session) -> None:
    for index, (name, properties) in enumerate(IMAGE_PROPERTIES.items(), start=2):
        image = _image(sess, name, index)
        wanted = dict(properties)
        if name == SIGNED_IMAGE:
            wanted[SIGNATURE] = sign(image["os_hash_algo"], image["os_hash_value"])
        set_properties(sess, image, wanted)


def _manifest(types: dict[str, str], standard_type: str) -> None:
    config = {
        "apiVersion": "region.osh.openstack.org/v1alpha1",
        "kind": "InventoryConfig",
        "metadata": {"name": CONFIG_NAME},
        "spec": {
            "defaultArchitecture": "x86_64",
            "flavors": [
                {"id": "osprov-gpu", "gpu": {"vendor": "NVIDIA", "model": "A100", "memoryGiB": 80}},
            ],
            "volumeClasses": {
                "selector": {"ids": [types[SSD_TYPE], types[standard_type]]},
                "classes": [
                    {
                        "id": types[SSD_TYPE],
                        "name": "ssd",
                        "minCapacityGiB": 1,
                        "maxCapacityGiB": 5,
                        "supportedFlavors": {"ids": ["osprov-gpu", "osprov-arm"]},
                        "media": "ssd",
                        "performance": {"maxIOPS": 5000, "maxThroughputMiBps": 250},
                        "encrypted": True,
                    },
                    {"id": types[standard_type], "name": "standard", "media": "hdd"},
                ],
            },
            "images": {"signingPublicKey": public_key_pem()},
        },
    }
    write_private(manifest_path(), yaml.safe_dump(config, sort_keys=False))


def bootstrap(sess: ks_session.Session, standard_type: str) -> None:
    """Everything above, then the stack's InventoryConfig manifest; `standard_type`: the name of the
    catalog's volume type (passed in: catalog imports this module)."""
    _flavors(sess)
    types = _volume_types(sess, sess.get_project_id() or "")
    _images(sess)
    _manifest(types, standard_type)
