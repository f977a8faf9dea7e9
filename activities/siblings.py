"""Resources a cloud resource names in its own namespace: a Server's Volumes, Networks and SecurityGroups.

Read through the Kubernetes API (the resource's UID is what its cloud object's deterministic name is made of)
and accepted only when they live where the naming resource does — the same Identity, or the same
spec.project — so a Server can never be given another tenant's network or group by naming its resource.
The cloud object itself is then found by that deterministic name, exactly, in the caller's project: the
resource's status is never trusted as the ID (the seed: networks and groups are re-found by lookup).
"""

from __future__ import annotations

from typing import Any

import kubernetes.client
import openstack.connection

from osprov.activities.errors import conflict, consistency, error, not_found
from osprov.activities.kube import api_client
from osprov.api import network_io, security_group_io
from osprov.api.errors import TRANSIENT
from osprov.api.identity_io import Credential
from osprov.api.registry import kind_info


def sibling_uid(
    kind: str, namespace: str, name: str, *, project: str, domain: str, credential: Credential | None
) -> str | None:
    """UID of resource `kind`/`name` in `namespace`; None when it does not exist. Conflict (not retried) when
    it lives elsewhere than (project, domain, credential), the caller's own place."""
    info = kind_info(kind)
    try:
        obj: Any = kubernetes.client.CustomObjectsApi(api_client()).get_namespaced_custom_object(
            info.group, info.version, namespace, info.plural, name
        )
    except kubernetes.client.exceptions.ApiException as err:
        if err.status == 404:
            return None
        raise error(TRANSIENT, f"cannot read {kind} {namespace}/{name} (HTTP {err.status})") from None
    spec = obj.get("spec") or {}
    if credential is not None:
        same = (spec.get("identityRef") or {}).get("name") == credential.identity
        where = f"Identity {credential.identity}"
    else:
        same = spec.get("project") == {"name": project, "domain": domain}
        where = f"project {project}"
    if not same:
        raise conflict(
            f"{kind} {name} does not live where this resource does ({where}); name only {kind} resources of "
            "the same Identity (or spec.project)"
        )
    return str(obj["metadata"]["uid"])


def _one(found: list[Any], kind: str, name: str, cloud_name: str) -> str:
    if len(found) > 1:
        raise consistency(
            f"{len(found)} Neutron objects are named {cloud_name} ({kind} {name}); delete the extras"
        )
    if not found:
        # Not retried by Temporal: the pass fails with this message and the entity loop tries again.
        raise not_found(f"{kind} {name} has no Neutron object yet (is it Available?) — retrying")
    return str(found[0].id)


def _network(
    conn: openstack.connection.Connection, namespace: str, name: str, **place: Any
) -> tuple[str, str]:
    uid = sibling_uid("Network", namespace, name, **place)
    if uid is None:
        raise not_found(f"Network {name} does not exist in namespace {namespace} — retrying")
    cloud_name, project_id = network_io.network_name(uid), conn.current_project_id
    listed = conn.network.networks(name=cloud_name, project_id=project_id)
    found = [n for n in listed if n.name == cloud_name and n.project_id == project_id]
    return uid, _one(found, "Network", name, cloud_name)


def network_id(conn: openstack.connection.Connection, namespace: str, name: str, **place: Any) -> str:
    """The Neutron network of Network resource `name`: network-{uid}, exactly, in the caller's project."""
    return _network(conn, namespace, name, **place)[1]


def network_and_subnet(
    conn: openstack.connection.Connection, namespace: str, name: str, **place: Any
) -> tuple[str, str]:
    """network-{uid} and its subnet-{uid} (a load balancer's VIP goes on the Network's own subnet)."""
    uid, net_id = _network(conn, namespace, name, **place)
    cloud_name = network_io.subnet_name(uid)
    found = [s for s in conn.network.subnets(name=cloud_name, network_id=net_id) if s.name == cloud_name]
    return net_id, _one(found, "Network", name, cloud_name)


def security_group_id(conn: openstack.connection.Connection, namespace: str, name: str, **place: Any) -> str:
    """The Neutron group of SecurityGroup resource `name`: its deterministic name, exactly, in the project."""
    uid = sibling_uid("SecurityGroup", namespace, name, **place)
    if uid is None:
        raise not_found(f"SecurityGroup {name} does not exist in namespace {namespace} — retrying")
    cloud_name, project_id = security_group_io.security_group_name(uid), conn.current_project_id
    listed = conn.network.security_groups(name=cloud_name, project_id=project_id)
    found = [g for g in listed if g.name == cloud_name and g.project_id == project_id]
    return _one(found, "SecurityGroup", name, cloud_name)
