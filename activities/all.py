"""Every activity the worker registers."""

from __future__ import annotations

from typing import Any

from osprov.activities import cinder, keystone, kube, neutron, nova, octavia

KEYSTONE: list[Any] = [
    keystone.find,
    keystone.create,
    keystone.update,
    keystone.delete,
    keystone.check_grant,
    keystone.put_grant,
    keystone.revoke_grant,
    keystone.probe_password,
    keystone.set_password,
]
ACTIVITIES: list[Any] = [*kube.ACTIVITIES, *KEYSTONE, *nova.ACTIVITIES, *cinder.ACTIVITIES]
ACTIVITIES += [*octavia.ACTIVITIES, *neutron.ACTIVITIES]  # LoadBalancer
