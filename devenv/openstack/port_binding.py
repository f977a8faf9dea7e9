"""An ML2 mechanism driver that binds every port to any host: NICs for servers without agents.

The local Neutron runs no L2 agent (there is no datapath here), and ML2 without a mechanism driver
leaves a port unbound, so Nova fails a server with a NIC ("PortBindingFailed"). This driver binds the
first segment with vif_type "ovs" and marks the port ACTIVE, as an agent would once its flows are up;
Nova's fake virt driver plugs nothing. What a user observes stays real: Neutron allocates the fixed IP
and MAC, Nova shows them in the server's addresses, and a rebuild keeps the same port.
"""

from __future__ import annotations

from devenv.openstack.common import install_plugin, site_packages

DRIVER_NAME = "osprov_bind_any_host"
MODULE = "osprov_port_binding"

DRIVER_SOURCE = '''"""Installed by osprov (devenv.openstack.port_binding): binds every port, no agent needed."""

from neutron_lib import constants
from neutron_lib.api.definitions import portbindings
from neutron_lib.plugins.ml2 import api


class BindAnyHostMechanismDriver(api.MechanismDriver):
    def initialize(self):
        pass

    def bind_port(self, context):
        for segment in context.segments_to_bind:
            context.set_binding(
                segment[api.ID],
                portbindings.VIF_TYPE_OVS,
                {portbindings.CAP_PORT_FILTER: True},
                status=constants.PORT_STATUS_ACTIVE,
            )
            return
'''

ENTRY_POINTS = f"[neutron.ml2.mechanism_drivers]\n{DRIVER_NAME} = {MODULE}:BindAnyHostMechanismDriver\n"


def install() -> None:
    if not (site_packages() / "neutron").is_dir():
        raise RuntimeError(f"neutron is not installed in the OpenStack venv ({site_packages()})")
    install_plugin(MODULE, DRIVER_SOURCE, ENTRY_POINTS)
