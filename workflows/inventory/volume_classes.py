"""VolumeClass inventory (fail closed) and the check a Volume passes before any Cinder call.

Export rows (tests/workflows/test_inventory_decisions.py, one each):
  V1 no volumeClasses, no selector, or no IDs   -> nothing is offered
  V2 a type whose ID is in selector.ids          -> offered, enriched by its classes entry (bounds, supported
                                                   flavors, media, performance caps, encryption)
  V3 an ID in selector.ids Cinder does not have  -> reported (left out), nothing offered for it
  V4 a type not in selector.ids                  -> not offered, whatever else the configuration says of it
  V5 name                                        -> the entry's name, else the Cinder name (plan.export)

Check of a Volume (volume_decisions.py, row C0), against the published VolumeClasses:
  K1 no class asked                                -> ok: Cinder's default type (nothing to check)
  K2 volumeClassID (Cinder type ID), no inventory  -> ok: unchecked, as before the inventory existed
  K3 volumeClass, no inventory                     -> refused: nothing is offered without the inventory
  K4 the class is not offered                      -> refused, naming the class
  K5 size outside the class's bounds               -> refused, naming the bounds
  K6 otherwise                                     -> ok, with the Cinder volume type ID to create with
"""

from __future__ import annotations

from dataclasses import dataclass

from osprov.api.inventory_config import InventoryConfigSpec
from osprov.api.inventory_io import CinderType, Offer, OfferedVolumeClass
from osprov.api.region import VolumeClassSpec
from osprov.workflows.inventory.plan import Candidate, Export, export


def volume_class_export(types: list[CinderType], config: InventoryConfigSpec | None) -> Export:
    allowed = config.allowed_volume_types() if config is not None else []
    if config is None or not allowed:  # V1: fail closed
        return Export()
    by_id = {t.id: t for t in types}
    candidates: list[Candidate] = []
    left_out: list[str] = []
    for type_id in allowed:
        found = by_id.get(type_id)
        if found is None:  # V3
            left_out.append(f"volume type {type_id}: listed in selector.ids but Cinder has no such type")
            continue
        entry = config.volume_class(type_id)
        flavors = entry.supported_flavors.ids if entry and entry.supported_flavors else None
        spec = VolumeClassSpec(
            volume_type_id=found.id,
            volume_type=found.name,
            description=found.description or None,
            min_capacity_gib=entry.min_capacity_gib if entry else None,
            max_capacity_gib=entry.max_capacity_gib if entry else None,
            supported_flavors=list(flavors) if flavors else None,  # omitted or empty: unrestricted
            media=entry.media if entry else None,
            performance=entry.performance if entry else None,
            encrypted=bool(entry and entry.encrypted),
        )
        preferred = entry.name if entry and entry.name else found.name
        candidates.append(Candidate(preferred=preferred, cloud_id=found.id, spec=spec))
    return export(candidates, left_out)


@dataclass(frozen=True)
class Verdict:
    """ok: create with `volume_type` (None: Cinder's default); otherwise `message` says what to fix."""

    rule: str
    ok: bool
    volume_type: str | None = None
    message: str = ""


def _bounds(c: OfferedVolumeClass) -> str:
    low = c.min_capacity_gib or 1
    return f"{low}–{c.max_capacity_gib} GiB" if c.max_capacity_gib else f"at least {low} GiB"


def check_class(volume_class: str | None, volume_class_id: str | None, size: int, offer: Offer) -> Verdict:
    if volume_class is None and volume_class_id is None:
        return Verdict("K1", True)
    if not offer.enabled:
        if volume_class is None:
            return Verdict("K2", True, volume_class_id)
        return Verdict(
            "K3",
            False,
            message=f"spec.volumeClass {volume_class!r} cannot be checked: this controller runs no region "
            "inventory (OSPROV_INVENTORY_CONFIG is unset), so it offers no VolumeClass",
        )
    if volume_class is not None:
        found = next((c for c in offer.volume_classes if c.name == volume_class), None)
        asked = f"spec.volumeClass {volume_class!r}"
    else:
        found = next((c for c in offer.volume_classes if c.volume_type_id == volume_class_id), None)
        asked = f"spec.volumeClassID {volume_class_id!r}"
    if found is None:
        offered = ", ".join(sorted(c.name for c in offer.volume_classes)) or "none"
        return Verdict(
            "K4",
            False,
            message=f"{asked} is not a VolumeClass this region offers (offered: {offered}; "
            "`kubectl get volumeclasses`); choose one of them",
        )
    low, high = found.min_capacity_gib or 1, found.max_capacity_gib
    if size < low or (high is not None and size > high):
        return Verdict(
            "K5",
            False,
            message=f"spec.size {size} GiB is outside VolumeClass {found.name!r}'s bounds ({_bounds(found)}); "
            "change the size or the class",
        )
    return Verdict("K6", True, found.volume_type_id)
