"""Image inventory: which Glance images this region offers, and what users see of them.

Rows (tests/workflows/test_inventory_decisions.py, one each):
  I1 not public, or not active                      -> not offered
  I2 properties outside the schema (api/image_properties.py) -> left out, with every problem
  I3 a signature that does not verify                -> left out (tampered, or signed by another key)
  I4 unsigned while the configuration requires a signature -> left out
  I5 a signature that verifies                       -> offered, verified
  I6 unsigned (or no key configured)                 -> offered, not verified
  I7 architecture                                    -> the Glance property, else the configured default,
                                                        else x86_64
The object's name is the Glance image ID, so a Server's imageID is checked with one read by name.
"""

from __future__ import annotations

from osprov.api.image_properties import translate
from osprov.api.inventory_config import InventoryConfigSpec
from osprov.api.inventory_io import GlanceImage
from osprov.api.region import FALLBACK_ARCHITECTURE, ImageSpec
from osprov.workflows.inventory.plan import Candidate, Export, export


def image_export(images: list[GlanceImage], config: InventoryConfigSpec | None) -> Export:
    config = config or InventoryConfigSpec()
    candidates: list[Candidate] = []
    left_out: list[str] = []
    for image in images:
        what = f"image {image.name} ({image.id})"
        if image.visibility != "public" or image.status != "active":  # I1
            continue
        meta = translate(image.properties)
        if meta.problems:  # I2
            left_out.append(f"{what}: {'; '.join(meta.problems)}")
            continue
        if image.signature == "invalid":  # I3
            left_out.append(f"{what}: its signature does not verify against the image signing key")
            continue
        if image.signature != "valid" and config.images.require_signature:  # I4
            left_out.append(f"{what}: unsigned, and the configuration requires a signature")
            continue
        spec = ImageSpec(
            id=image.id,
            name=image.name,
            architecture=meta.architecture or config.default_architecture or FALLBACK_ARCHITECTURE,
            os=meta.os,
            packages=meta.packages,
            gpu=meta.gpu,
            virtualization=meta.virtualization,
            tags=meta.tags,
            min_disk_gib=image.min_disk_gib,
            min_memory_mib=image.min_ram_mib,
            verified=image.signature == "valid",  # I5, I6
        )
        candidates.append(Candidate(preferred=image.id, cloud_id=image.id, spec=spec))
    return export(candidates, left_out)
