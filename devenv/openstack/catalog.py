"""Catalog bootstrap over the REST APIs (keystoneauth, no CLI processes): service users, services,
endpoints; then the shared resources tests use (flavors, images, networks, volume type).

Every step looks up before it creates, so a second `up` changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3

from devenv.config import HOST, PORTS, Secrets
from devenv.openstack import inventory
from devenv.openstack.common import REGION, keystone_url

SERVICE_USERS = ("glance", "placement", "nova", "neutron", "cinder", "octavia")

IMAGE_NAMES = ("osprov-image-a", "osprov-image-b")
FLAVORS = {"m1.tiny": (1, 512, 1), "m1.small": (1, 2048, 5)}
VIP_NETWORK = "osprov-vip-net"
VIP_SUBNET = "osprov-vip-subnet"
PUBLIC_NETWORK = "public"
PUBLIC_SUBNET = "public-subnet"
ROUTER = "osprov-router"
VOLUME_TYPE = "fake"


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    type: str
    url: str


def catalog_entries() -> list[CatalogEntry]:
    base = f"http://{HOST}"
    return [
        CatalogEntry("glance", "image", f"{base}:{PORTS.glance}"),
        CatalogEntry("placement", "placement", f"{base}:{PORTS.placement}"),
        CatalogEntry("nova", "compute", f"{base}:{PORTS.nova}/v2.1"),
        CatalogEntry("neutron", "network", f"{base}:{PORTS.neutron}"),
        CatalogEntry("cinderv3", "volumev3", f"{base}:{PORTS.cinder}/v3/%(project_id)s"),
        CatalogEntry("cinder", "block-storage", f"{base}:{PORTS.cinder}/v3/%(project_id)s"),
        CatalogEntry("octavia", "load-balancer", f"{base}:{PORTS.octavia}"),
    ]


def admin_session(secrets: Secrets, system: bool = False) -> ks_session.Session:
    scope: dict[str, Any] = (
        {"system_scope": "all"} if system else {"project_name": "admin", "project_domain_name": "Default"}
    )
    auth = v3.Password(
        auth_url=f"{keystone_url()}/v3",
        username="admin",
        password=secrets.admin_password,
        user_domain_name="Default",
        **scope,
    )
    return ks_session.Session(auth=auth)


def _ks(path: str) -> str:
    return f"{keystone_url()}/v3{path}"


def _find_or_create(sess: ks_session.Session, collection: str, query: str, body: dict[str, Any]) -> str:
    singular = collection[:-1]
    found = sess.get(_ks(f"/{collection}?{query}")).json()[collection]
    if found:
        return str(found[0]["id"])
    return str(sess.post(_ks(f"/{collection}"), json={singular: body}).json()[singular]["id"])


def bootstrap_catalog(secrets: Secrets) -> None:
    sess = admin_session(secrets, system=True)
    project_id = _find_or_create(
        sess, "projects", "name=service&domain_id=default", {"name": "service", "domain_id": "default"}
    )
    admin_role = _find_or_create(sess, "roles", "name=admin", {"name": "admin"})
    service_role = _find_or_create(sess, "roles", "name=service", {"name": "service"})
    # Octavia's policy role, as an Octavia deployment creates it: a project's user needs it (besides
    # member) to manage load balancers; Identities are granted both (docs/identity.md).
    _find_or_create(sess, "roles", "name=load-balancer_member", {"name": "load-balancer_member"})
    for name in SERVICE_USERS:
        user_id = _find_or_create(
            sess,
            "users",
            f"name={name}&domain_id=default",
            {
                "name": name,
                "domain_id": "default",
                "password": secrets.service_password,
                # Service users must never be locked out by tests that count failed logins.
                "options": {"ignore_lockout_failure_attempts": True},
            },
        )
        for role in (admin_role, service_role):
            sess.put(_ks(f"/projects/{project_id}/users/{user_id}/roles/{role}"))
    for entry in catalog_entries():
        service_id = _find_or_create(
            sess, "services", f"type={entry.type}", {"name": entry.name, "type": entry.type, "enabled": True}
        )
        existing = sess.get(_ks(f"/endpoints?service_id={service_id}")).json()["endpoints"]
        have = {e["interface"]: e for e in existing if e.get("region_id") == REGION}
        for interface in ("public", "internal", "admin"):
            if interface in have:
                if have[interface]["url"] != entry.url:
                    sess.patch(
                        _ks(f"/endpoints/{have[interface]['id']}"), json={"endpoint": {"url": entry.url}}
                    )
                continue
            sess.post(
                _ks("/endpoints"),
                json={
                    "endpoint": {
                        "service_id": service_id,
                        "interface": interface,
                        "url": entry.url,
                        "region_id": REGION,
                    }
                },
            )


def _url(port: int, path: str) -> str:
    return f"http://{HOST}:{port}{path}"


def bootstrap_resources(secrets: Secrets) -> None:
    """Flavors, two small images, the VIP and external networks, the fake volume type; then what the
    region inventory's tests need (devenv/openstack/inventory.py)."""
    sess = admin_session(secrets)
    project_id = sess.get_project_id()
    compute = {"OpenStack-API-Version": "compute 2.79"}
    flavors = sess.get(_url(PORTS.nova, "/v2.1/flavors?is_public=None"), headers=compute).json()["flavors"]
    have_flavors = {f["name"] for f in flavors}
    for name, (vcpus, ram, disk) in FLAVORS.items():
        if name not in have_flavors:
            sess.post(
                _url(PORTS.nova, "/v2.1/flavors"),
                headers=compute,
                json={"flavor": {"name": name, "vcpus": vcpus, "ram": ram, "disk": disk}},
            )
    for index, name in enumerate(IMAGE_NAMES):
        images = sess.get(_url(PORTS.glance, f"/v2/images?name={name}")).json()["images"]
        if any(i["status"] == "active" for i in images):
            continue
        for stale in images:
            sess.delete(_url(PORTS.glance, f"/v2/images/{stale['id']}"))
        image = sess.post(
            _url(PORTS.glance, "/v2/images"),
            json={"name": name, "disk_format": "raw", "container_format": "bare", "visibility": "public"},
        ).json()
        sess.put(
            _url(PORTS.glance, f"/v2/images/{image['id']}/file"),
            data=bytes([index]) * 1024 * 1024,
            headers={"Content-Type": "application/octet-stream"},
        )
    _network(sess, VIP_NETWORK, VIP_SUBNET, "10.20.0.0/24", {"shared": True})
    _network(
        sess,
        PUBLIC_NETWORK,
        PUBLIC_SUBNET,
        "172.24.4.0/24",
        {
            "router:external": True,
            "provider:network_type": "flat",
            "provider:physical_network": "public",
        },
    )
    _router(sess)
    types = sess.get(_url(PORTS.cinder, f"/v3/{project_id}/types?is_public=None")).json()["volume_types"]
    if not any(t["name"] == VOLUME_TYPE for t in types):
        sess.post(
            _url(PORTS.cinder, f"/v3/{project_id}/types"),
            json={
                "volume_type": {
                    "name": VOLUME_TYPE,
                    "os-volume-type-access:is_public": True,
                    "extra_specs": {"volume_backend_name": "fake"},
                }
            },
        )
    inventory.bootstrap(sess, VOLUME_TYPE)


def _network(sess: ks_session.Session, name: str, subnet: str, cidr: str, extra: dict[str, Any]) -> None:
    nets = sess.get(_url(PORTS.neutron, f"/v2.0/networks?name={name}")).json()["networks"]
    if nets:
        net_id = nets[0]["id"]
    else:
        net_id = sess.post(
            _url(PORTS.neutron, "/v2.0/networks"), json={"network": {"name": name, **extra}}
        ).json()["network"]["id"]
    subnets = sess.get(_url(PORTS.neutron, f"/v2.0/subnets?network_id={net_id}")).json()["subnets"]
    if not subnets:
        sess.post(
            _url(PORTS.neutron, "/v2.0/subnets"),
            json={"subnet": {"name": subnet, "network_id": net_id, "cidr": cidr, "ip_version": 4}},
        )


def _router(sess: ks_session.Session) -> None:
    """VIP subnet routed to the external network: Neutron only floats IPs of ports it can reach."""
    if sess.get(_url(PORTS.neutron, f"/v2.0/routers?name={ROUTER}")).json()["routers"]:
        return
    public = sess.get(_url(PORTS.neutron, f"/v2.0/networks?name={PUBLIC_NETWORK}")).json()["networks"][0]
    vip_subnet = sess.get(_url(PORTS.neutron, f"/v2.0/subnets?name={VIP_SUBNET}")).json()["subnets"][0]
    router = sess.post(
        _url(PORTS.neutron, "/v2.0/routers"),
        json={"router": {"name": ROUTER, "external_gateway_info": {"network_id": public["id"]}}},
    ).json()["router"]
    sess.put(
        _url(PORTS.neutron, f"/v2.0/routers/{router['id']}/add_router_interface"),
        json={"subnet_id": vip_subnet["id"]},
    )
