"""Flavor export (hybrid): Nova discovers the flavors, the operator's configuration overrides what users see.

Rows (tests/workflows/test_inventory_decisions.py, one each):
  F1 private or disabled flavor                 -> not offered (region inventory is the public flavors)
  F2 architecture                               -> override, else extra spec cpu.architecture, else the
                                                   configured default, else x86_64
  F3 cpu.architecture not a known architecture  -> left out (unless an override names the architecture)
  F4 baremetal                                  -> override, else the Ironic convention: resources:VCPU=0
                                                   and a resources:CUSTOM_* class requested
  F5 GPU                                        -> override, else the count of pci_passthrough:alias or
                                                   resources:VGPU
  F6 name                                       -> the Nova name as an object name (see plan.export)
"""

from __future__ import annotations

from osprov.api.inventory_config import FlavorOverride, InventoryConfigSpec
from osprov.api.inventory_io import NovaFlavor
from osprov.api.region import FALLBACK_ARCHITECTURE, Architecture, FlavorGPU, FlavorSpec
from osprov.workflows.inventory.plan import Candidate, Export, export

ARCHITECTURE_SPEC = "cpu.architecture"
GPU_ALIAS_SPEC = "pci_passthrough:alias"  # "alias:count[,alias:count]" (Nova's format)
VGPU_SPEC = "resources:VGPU"


class _Unknown(ValueError):
    pass


def architecture(
    override: FlavorOverride | None, extra_specs: dict[str, str], default: Architecture | None
) -> Architecture:
    if override is not None and override.architecture is not None:
        return override.architecture
    named = extra_specs.get(ARCHITECTURE_SPEC)
    if named is not None:
        try:
            return Architecture(named)
        except ValueError:
            raise _Unknown(f"{ARCHITECTURE_SPEC}={named[:64]!r} is not a known architecture") from None
    return default or FALLBACK_ARCHITECTURE


def baremetal(override: FlavorOverride | None, extra_specs: dict[str, str]) -> bool:
    if override is not None and override.baremetal is not None:
        return override.baremetal
    custom = any(k.startswith("resources:CUSTOM_") and v == "1" for k, v in extra_specs.items())
    return custom and extra_specs.get("resources:VCPU") == "0"


def gpu(override: FlavorOverride | None, extra_specs: dict[str, str]) -> FlavorGPU | None:
    """The GPUs Nova's extra specs request, enriched (vendor, model, memory) or overridden by the operator's
    entry: the fields the entry sets win, the count comes from Nova unless the entry sets it."""
    count = 0
    for entry in extra_specs.get(GPU_ALIAS_SPEC, "").split(","):
        _, _, n = entry.partition(":")
        count += int(n) if n.strip().isdigit() else 0
    vgpus = extra_specs.get(VGPU_SPEC, "")
    count += int(vgpus) if vgpus.isdigit() else 0
    given = override.gpu if override is not None else None
    if given is None:
        return FlavorGPU(count=min(count, 64)) if count > 0 else None
    if "count" in given.model_fields_set or count == 0:
        return given
    return given.model_copy(update={"count": min(count, 64)})


def flavor_export(flavors: list[NovaFlavor], config: InventoryConfigSpec | None) -> Export:
    config = config or InventoryConfigSpec()
    candidates: list[Candidate] = []
    left_out: list[str] = []
    for f in flavors:
        if not f.is_public or f.disabled:  # F1: not something the region offers everyone
            continue
        override = config.flavor_override(f.id)
        try:
            arch = architecture(override, f.extra_specs, config.default_architecture)
        except _Unknown as why:  # F3
            left_out.append(f"flavor {f.name} ({f.id}): {why}")
            continue
        spec = FlavorSpec(
            id=f.id,
            name=f.name,
            architecture=arch,
            vcpus=f.vcpus,
            memory_mib=f.ram_mib,
            disk_gib=f.disk_gib,
            baremetal=baremetal(override, f.extra_specs),
            gpu=gpu(override, f.extra_specs),
        )
        candidates.append(Candidate(preferred=f.name, cloud_id=f.id, spec=spec))
    return export(candidates, left_out)
