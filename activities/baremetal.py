"""Baremetal build progress (the seed: Ironic as an additional truth source only while Nova reports BUILD for
a flavor the Flavor inventory marks baremetal): Queued (Ironic has not started deploying) or Building.

Ironic nodes are provider infrastructure, not tenant objects, so the lookup runs on the controller's own
credentials (they need Ironic visibility of nodes by instance UUID, e.g. a reader role on baremetal:node:list_all).
A failing lookup falls back to Building (the VM default) and is logged: the status stays coherent.
"""

from __future__ import annotations

from typing import Any

import structlog
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from osprov.activities.cloud import admin_connection
from osprov.activities.contract import implements
from osprov.activities.kube import api_client
from osprov.api.nova_io import BAREMETAL_PROGRESS, BaremetalProgress, BaremetalQuery
from osprov.api.region import INVENTORY_LABEL, REGION_GROUP, REGION_VERSION
from osprov.api.registry import INVENTORY
from osprov.runtime.settings import Settings

log = structlog.get_logger("osprov.activities.baremetal")

# Ironic provision states before the deploy starts (ironic/common/states.py): the node is not yet picked
# for this instance, or is being cleaned, inspected, verified, adopted. Everything else — deploying,
# wait call-back, active, the post-deploy error and the *fail states — is Building: the node is in the
# build pipeline; a failure belongs on the Healthy axis, not here.
QUEUED_STATES = frozenset(
    {
        "enroll",
        "verifying",
        "manageable",
        "available",
        "cleaning",
        "clean wait",
        "inspecting",
        "inspect wait",
        "adopting",
        None,  # no node bound to the instance yet: not yet picked up
    }
)


def queued(provision_state: str | None) -> bool:
    return provision_state in QUEUED_STATES


def flavor_is_baremetal(flavor: str) -> bool:
    """What this controller's Flavor inventory says of spec.flavor (by Nova name or ID); no inventory: no."""
    inventory = Settings().inventory_config
    if not inventory:
        return False
    listed: Any = client.CustomObjectsApi(api_client()).list_cluster_custom_object(
        REGION_GROUP,
        REGION_VERSION,
        INVENTORY["Flavor"].plural,
        label_selector=f"{INVENTORY_LABEL}={inventory}",
    )
    for obj in listed.get("items") or []:
        spec = obj.get("spec") or {}
        if flavor in (spec.get("name"), spec.get("id")):
            return bool(spec.get("baremetal"))
    return False


def provision_state(server_id: str) -> str | None:
    """The provision state of the Ironic node bound to the instance (None: no node is)."""
    nodes = list(admin_connection().baremetal.nodes(details=True, instance_id=server_id))
    nodes = [n for n in nodes if n.instance_id == server_id]  # exact, whatever the filter did
    return str(nodes[0].provision_state) if nodes else None


@implements(BAREMETAL_PROGRESS)
def baremetal_progress(req: BaremetalQuery) -> BaremetalProgress:
    try:
        if not flavor_is_baremetal(req.flavor):
            return BaremetalProgress()
    except ApiException as err:
        log.warning("flavor inventory unreadable; treating the server as a VM", status=err.status)
        return BaremetalProgress()
    try:
        state = provision_state(req.server_id)
    except Exception as exc:  # any failure of the privileged client or of Ironic: the VM default
        log.warning(
            "ironic lookup failed; reporting Building", server_id=req.server_id, error=type(exc).__name__
        )
        return BaremetalProgress(baremetal=True)
    return BaremetalProgress(baremetal=True, queued=queued(state), provision_state=state)


ACTIVITIES = [baremetal_progress]
