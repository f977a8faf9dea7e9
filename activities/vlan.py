"""The VLAN allocator's activities: the operator's provider-network policy, and the signals a Network sends
its physical network's allocator (signal-with-start: the allocator may not run yet; api/vlan_io.py).

The answers come back to the Network as signals from the allocator, never as these activities' results:
the allocator is the single writer of the table, and an activity only delivers a request durably.
"""

from __future__ import annotations

from temporalio import activity

from osprov.activities import cloud, ownership, tenancy
from osprov.activities.cloud import openstack_errors
from osprov.activities.contract import implements, implements_async
from osprov.api import vlan_io as io


@implements(io.PROVIDER_POLICY)
def provider_policy(request: io.ProviderRequest) -> io.ProviderPolicy:
    """Whether the namespace may make VLAN provider networks on the physical network, and its range."""
    config = tenancy.current()
    mapping = config.namespaces.get(request.namespace) if config else None
    physnet, ns = request.physical_network, request.namespace
    if config is None or mapping is None or physnet not in mapping.provider_networks:
        return io.ProviderPolicy(
            allowed=False,
            message=f"namespace {ns} may not make provider networks on physical network {physnet}: the "
            f"operator's tenancy mapping ({tenancy.TENANCY_FILE_ENV} of the worker) does not list it under "
            "provider_networks; ask an operator, or leave spec.provider unset for a tenant network",
        )
    vlan_range = config.vlan_ranges.get(physnet)
    if vlan_range is None or vlan_range.first > vlan_range.last:
        return io.ProviderPolicy(
            allowed=False,
            message=f"physical network {physnet} has no VLAN range in the operator's tenancy mapping "
            "(vlan_ranges); an operator must configure one",
        )
    return io.ProviderPolicy(allowed=True, range=vlan_range)


@implements(io.USED_IDS)
def used_ids(req: io.UsedIds) -> list[int]:
    """The VLAN IDs of every network Neutron has on the physical network (the controller's credentials: only
    they see segments; called only where the operator allowed provider networks on it)."""
    physnet = req.physical_network
    with openstack_errors(f"list the VLAN networks on physical network {physnet}", service="Neutron"):
        found = cloud.admin_connection().network.networks(
            provider_network_type="vlan", provider_physical_network=physnet
        )
        return sorted(
            {
                int(n.provider_segmentation_id)
                for n in found
                if n.provider_physical_network == physnet and n.provider_segmentation_id is not None
            }
        )


async def _send(physical_network: str, signal: str, arg: object) -> None:
    workflow_id = io.workflow_id(physical_network, activity.info().task_queue)
    start = io.AllocatorInput(physical_network=physical_network)
    label = f"the VLAN allocator of physical network {physical_network}"
    await ownership.signal_with_start(io.WORKFLOW_TYPE, start, workflow_id, signal, arg, label=label)


@implements_async(io.REQUEST)
async def request(req: io.Allocate) -> None:
    await _send(req.physical_network, io.SIGNAL_ALLOCATE, req)


@implements_async(io.RELEASE)
async def release(req: io.Release) -> None:
    await _send(req.physical_network, io.SIGNAL_RELEASE, req)


ACTIVITIES = [provider_policy, used_ids, request, release]
