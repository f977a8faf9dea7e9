"""Every activity the worker registers."""

from __future__ import annotations

from typing import Any

from osprov.activities import (
    baremetal,
    cinder,
    identity,
    inventory_cloud,
    inventory_kube,
    keystone,
    keystone_sweep,
    kube,
    network,
    neutron,
    nova,
    octavia,
    ownership,
    placement,
    security_group,
    tenancy,
    vlan,
)

ACTIVITIES: list[Any] = [
    *kube.ACTIVITIES,
    *keystone.KEYSTONE_ACTIVITIES,
    *ownership.ACTIVITIES,
    *keystone_sweep.ACTIVITIES,
    *identity.ACTIVITIES,
    *tenancy.ACTIVITIES,
    *vlan.ACTIVITIES,
    *nova.ACTIVITIES,
    *placement.ACTIVITIES,
    *baremetal.ACTIVITIES,
    *cinder.ACTIVITIES,
    *octavia.ACTIVITIES,
    *neutron.ACTIVITIES,
    *network.ACTIVITIES,
    *security_group.ACTIVITIES,
    *inventory_cloud.ACTIVITIES,
    *inventory_kube.ACTIVITIES,
]
