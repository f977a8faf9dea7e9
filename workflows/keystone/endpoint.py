"""Endpoint: declares the admin/internal/public endpoints of one service (by name and type) in one region.

Each interface is its own Keystone object (a workflow each). An omitted interface is not published; one
removed from the spec is released (kept in Keystone: delete it by hand or delete the resource with
deletionPolicy delete). A URL change is a PATCH that keeps the endpoint ID; duplicates for one service,
region and interface: the lowest ID is used and the others are named in the message, never deleted.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api.keystone import EndpointSpec, EndpointStatus
    from osprov.api.messages import EntityInput
    from osprov.api.ownership import Desired, ObjectKey, ObjectResult
    from osprov.api.state import EndpointState
    from osprov.workflows.entity import StatusBase
    from osprov.workflows.keystone.common import Claims, KeystoneEntity


@workflow.defn(name="Endpoint")
class EndpointWorkflow(KeystoneEntity[EndpointSpec, EndpointState]):
    KIND = "Endpoint"
    KEYSTONE_KIND = "endpoint"
    STATE = EndpointState

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    def claims(self, spec: EndpointSpec) -> Claims:
        svc = spec.service
        out: Claims = {}
        for interface, url in sorted((i.value, u) for i, u in spec.urls.items()):
            key = ObjectKey(
                kind="endpoint", name=svc.name, type=svc.type, region=spec.region, interface=interface
            )
            out[key.path] = (key, Desired(fields={"url": url}))
        return out

    def answered(self, spec: EndpointSpec, results: dict[str, ObjectResult]) -> None:
        self.k.endpoint_ids = {r.key.interface: r.id for r in results.values() if r.key.interface and r.id}

    def status(self, base: StatusBase) -> EndpointStatus:
        return EndpointStatus(**base, endpoint_ids=self.k.endpoint_ids or None)
