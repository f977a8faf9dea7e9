"""The placement preflight of a pinned Server (the seed's openstack.compute.placementPreflight): before a
pinned create, ask Placement whether the pinned compute node's resource provider can take the flavor.

What is asked comes from the flavor's extra specs — positive `resources:<CLASS>=<n>` amounts and
`trait:<NAME>=required|forbidden` — with the operator's required traits added; no trait inputs means no
trait filter. The answer is a list of what is missing (empty: it fits), so the Server's condition can say
exactly what to fix. Placement's provider reads are admin-only: the controller's own connection, used only
because the operator turned the preflight on for the namespace (tenancy mapping `pinning`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import openstack.connection
import openstack.exceptions

from osprov.activities.cloud import admin_connection, openstack_errors, scoped_connection
from osprov.activities.contract import implements
from osprov.activities.errors import error
from osprov.api.nova_io import PLACEMENT_PREFLIGHT, PlacementPreflight, PreflightResult

# 1.22: forbidden traits; the provider reads themselves are 1.0.
PLACEMENT_MICROVERSION = "1.22"
FLAVOR_MICROVERSION = "2.60"


@dataclass(frozen=True)
class Wanted:
    resources: dict[str, int] = field(default_factory=dict)
    required: frozenset[str] = frozenset()
    forbidden: frozenset[str] = frozenset()


def wanted(extra_specs: dict[str, str], required_traits: list[str]) -> Wanted:
    """The request: only the unnumbered `resources:` group (the seed's resources:*), positive amounts only
    (0 is how a flavor drops a class it would otherwise request)."""
    resources: dict[str, int] = {}
    required, forbidden = set(required_traits), set()
    for key, value in extra_specs.items():
        group, _, name = key.partition(":")
        if group == "resources" and name:
            try:
                amount = int(str(value).strip())
            except ValueError:
                continue  # Nova refuses such a flavor's boot itself; nothing to ask Placement
            if amount > 0:
                resources[name] = amount
        elif group == "trait" and name:
            verdict = str(value).strip().lower()
            if verdict == "required":
                required.add(name)
            elif verdict == "forbidden":
                forbidden.add(name)
    return Wanted(resources, frozenset(required), frozenset(forbidden - required))


def misses(
    want: Wanted, inventories: dict[str, dict[str, Any]], usages: dict[str, int], traits: set[str]
) -> list[str]:
    """What the provider lacks for `want` (Placement's capacity: (total - reserved) * allocation_ratio)."""
    out = []
    for rc, amount in sorted(want.resources.items()):
        inv = inventories.get(rc)
        if inv is None:
            out.append(f"no {rc} inventory")
            continue
        capacity = int(
            (int(inv.get("total", 0)) - int(inv.get("reserved", 0))) * float(inv.get("allocation_ratio", 1.0))
        )
        free = capacity - int(usages.get(rc, 0))
        if amount > int(inv.get("max_unit", capacity)):
            out.append(f"{rc}: needs {amount}, at most {inv.get('max_unit')} per allocation")
        elif amount > free:
            out.append(f"{rc}: needs {amount}, {max(free, 0)} free")
    out += [f"lacks required trait {t}" for t in sorted(want.required - traits)]
    out += [f"has forbidden trait {t}" for t in sorted(want.forbidden & traits)]
    return out


def _get(conn: openstack.connection.Connection, path: str, **params: str) -> dict[str, Any]:
    resp = conn.placement.get(path, params=params or None, microversion=PLACEMENT_MICROVERSION)
    openstack.exceptions.raise_from_response(resp)
    body: dict[str, Any] = resp.json()
    return body


def _extra_specs(req: PlacementPreflight) -> dict[str, str]:
    conn = scoped_connection(req.project.name, req.project.domain, req.project.credential)
    flavor = conn.compute.find_flavor(req.flavor, ignore_missing=True)
    if flavor is None:
        raise error("Invalid", f"flavor {req.flavor!r} does not exist in Nova")
    resp = conn.compute.get(f"/flavors/{flavor.id}/os-extra_specs", microversion=FLAVOR_MICROVERSION)
    openstack.exceptions.raise_from_response(resp)
    return {str(k): str(v) for k, v in (resp.json().get("extra_specs") or {}).items()}


@implements(PLACEMENT_PREFLIGHT)
def placement_preflight(req: PlacementPreflight) -> PreflightResult:
    """Reads only: the flavor's extra specs (as the project sees it), then the provider's inventories,
    usages and traits."""
    with openstack_errors(
        f"placement preflight of flavor {req.flavor} on {req.provider}", service="Placement"
    ):
        want = wanted(_extra_specs(req), req.required_traits)
        if not (want.resources or want.required or want.forbidden):
            return PreflightResult()  # nothing asked: nothing can be missing
        conn = admin_connection()
        found = [p for p in _get(conn, "/resource_providers", name=req.provider)["resource_providers"]]
        found = [p for p in found if p.get("name") == req.provider]
        if len(found) != 1:
            return PreflightResult(missing=[f"Placement has no resource provider named {req.provider}"])
        uuid = found[0]["uuid"]
        inventories = _get(conn, f"/resource_providers/{uuid}/inventories")["inventories"]
        usages = _get(conn, f"/resource_providers/{uuid}/usages")["usages"]
        traits = set(_get(conn, f"/resource_providers/{uuid}/traits")["traits"])
        return PreflightResult(missing=misses(want, inventories, usages, traits))


ACTIVITIES = [placement_preflight]
