"""Every workflow type the worker registers (one per kind)."""

from __future__ import annotations

from workflows.keystone.domain import DomainWorkflow
from workflows.keystone.endpoint import EndpointWorkflow
from workflows.keystone.group import GroupWorkflow
from workflows.keystone.project import ProjectWorkflow
from workflows.keystone.role import RoleWorkflow
from workflows.keystone.role_assignment import RoleAssignmentWorkflow
from workflows.keystone.service import ServiceWorkflow
from workflows.keystone.user import UserWorkflow
from workflows.loadbalancer import LoadBalancerWorkflow
from workflows.server import ServerWorkflow
from workflows.volume import VolumeWorkflow

WORKFLOWS: list[type] = [
    DomainWorkflow,
    ProjectWorkflow,
    RoleWorkflow,
    GroupWorkflow,
    UserWorkflow,
    RoleAssignmentWorkflow,
    ServiceWorkflow,
    EndpointWorkflow,
    ServerWorkflow,
    VolumeWorkflow,
    LoadBalancerWorkflow,
]
BY_KIND: dict[str, type] = {wf.KIND: wf for wf in WORKFLOWS}  # type: ignore[attr-defined]
