"""An Octavia network driver: the noop driver, except that the VIP is a real Neutron port.

With the stock network_noop_driver a load balancer's vip_port_id is a random UUID that Neutron has
never heard of, so nothing can attach a floating IP to it. This subclass creates an (unbound) port on
the requested VIP subnet when Octavia allocates the VIP, so VIP addresses come from the subnet and
floating IPs associate for real; the port is deleted with the load balancer. Octavia finds network
drivers only through stevedore entry points, so install() also writes a minimal dist-info.
"""

from __future__ import annotations

from devenv.config import HOST, PORTS
from devenv.openstack.common import install_plugin, site_packages

DRIVER_NAME = "osprov_vip_port_driver"
MODULE = "osprov_octavia_vip"

DRIVER_TEMPLATE = '''"""Installed by osprov (devenv.openstack.octavia_vip): noop network driver with real VIP ports."""

import os

from oslo_log import log as logging

from octavia.common import keystone
from octavia.network.drivers.noop_driver.driver import NoopNetworkDriver

LOG = logging.getLogger(__name__)
PORT_PREFIX = "octavia-lb-"
OWNER = "Octavia"


# From the environment octavia-worker was started with (devenv/openstack/network.py), not baked in: the
# OpenStack venv is shared by every stack on the machine (OSPROV_PORT_OFFSET), each with its own Neutron.
NEUTRON_URL = os.environ["OSPROV_NEUTRON_URL"]


def _neutron(method, path, **kwargs):
    # A fixed URL, not the catalog: tests may publish endpoints for real service types.
    session = keystone.KeystoneSession().get_session()
    return session.request(NEUTRON_URL + path, method, **kwargs)


class RealVipPortNoopNetworkDriver(NoopNetworkDriver):
    def allocate_vip(self, loadbalancer):
        vip = loadbalancer.vip
        if vip is not None and vip.subnet_id and not vip.port_id:
            subnet = _neutron("GET", "/v2.0/subnets/" + vip.subnet_id).json()["subnet"]
            fixed_ip = {"subnet_id": vip.subnet_id}
            if vip.ip_address:
                fixed_ip["ip_address"] = vip.ip_address
            port = _neutron(
                "POST",
                "/v2.0/ports",
                json={
                    "port": {
                        "name": PORT_PREFIX + loadbalancer.id,
                        "network_id": subnet["network_id"],
                        "fixed_ips": [fixed_ip],
                        "device_owner": OWNER,
                        "device_id": "lb-" + loadbalancer.id,
                        "project_id": loadbalancer.project_id,
                        "admin_state_up": False,
                    }
                },
            ).json()["port"]
            vip.port_id = port["id"]
            vip.network_id = port["network_id"]
            vip.ip_address = port["fixed_ips"][0]["ip_address"]
            LOG.info("VIP port %s (%s) for load balancer %s", port["id"], vip.ip_address, loadbalancer.id)
        return super().allocate_vip(loadbalancer)

    def deallocate_vip(self, vip):
        if vip.port_id:
            resp = _neutron("GET", "/v2.0/ports/" + vip.port_id, raise_exc=False)
            if resp.status_code == 200:
                port = resp.json()["port"]
                # Only ports this driver created: a user-supplied vip_port_id stays.
                if port["device_owner"] == OWNER and port["name"].startswith(PORT_PREFIX):
                    _neutron("DELETE", "/v2.0/ports/" + vip.port_id, raise_exc=False)
        return super().deallocate_vip(vip)
'''

ENTRY_POINTS = f"[octavia.network.drivers]\n{DRIVER_NAME} = {MODULE}:RealVipPortNoopNetworkDriver\n"


def install() -> None:
    if not (site_packages() / "octavia").is_dir():
        raise RuntimeError(f"octavia is not installed in the OpenStack venv ({site_packages()})")
    install_plugin(MODULE, DRIVER_TEMPLATE, ENTRY_POINTS)


def worker_env() -> dict[str, str]:
    """What the Octavia processes need in their environment for this driver: this stack's Neutron."""
    return {"OSPROV_NEUTRON_URL": f"http://{HOST}:{PORTS.neutron}"}
