"""Every workflow type the worker registers (one per kind)."""

from __future__ import annotations

from osprov.workflows.identity import IdentityWorkflow
from osprov.workflows.inventory.workflow import INVENTORY_WORKFLOWS
from osprov.workflows.keystone.domain import DomainWorkflow
from osprov.workflows.keystone.endpoint import EndpointWorkflow
from osprov.workflows.keystone.group import GroupWorkflow
from osprov.workflows.keystone.objects import KeystoneObjectWorkflow
from osprov.workflows.keystone.project import ProjectWorkflow
from osprov.workflows.keystone.role import RoleWorkflow
from osprov.workflows.keystone.role_assignment import RoleAssignmentWorkflow
from osprov.workflows.keystone.service import ServiceWorkflow
from osprov.workflows.keystone.sweep import KeystoneSweepShardWorkflow, KeystoneSweepWorkflow
from osprov.workflows.keystone.user import UserWorkflow
from osprov.workflows.loadbalancer import LoadBalancerWorkflow
from osprov.workflows.network import NetworkWorkflow
from osprov.workflows.security_group import SecurityGroupWorkflow
from osprov.workflows.server import ServerWorkflow
from osprov.workflows.vlan_allocator import VlanAllocatorWorkflow
from osprov.workflows.volume import VolumeWorkflow

WORKFLOWS: list[type] = [
    DomainWorkflow,
    ProjectWorkflow,
    RoleWorkflow,
    GroupWorkflow,
    UserWorkflow,
    RoleAssignmentWorkflow,
    ServiceWorkflow,
    EndpointWorkflow,
    IdentityWorkflow,
    ServerWorkflow,
    VolumeWorkflow,
    LoadBalancerWorkflow,
    NetworkWorkflow,
    SecurityGroupWorkflow,
    KeystoneObjectWorkflow,
    KeystoneSweepWorkflow,
    KeystoneSweepShardWorkflow,
    VlanAllocatorWorkflow,
    *INVENTORY_WORKFLOWS.values(),  # started by the inventory Schedules (worker/schedules.py)
]
BY_KIND: dict[str, type] = {  # resource kinds
    wf.KIND: wf for wf in WORKFLOWS if hasattr(wf, "KIND") and wf not in INVENTORY_WORKFLOWS.values()
}
