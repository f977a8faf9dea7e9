"""Endpoint: admin/internal/public URLs of one service (by name and type) in one region.

An omitted interface is not published. A URL change is a PATCH that keeps the endpoint ID.
Duplicates for one service, region and interface: the lowest ID is adopted and the others are
named in the Ready message — never deleted (we did not create them).
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import keystone_io as io
    from osprov.api.keystone import EndpointSpec, EndpointStatus
    from osprov.api.messages import EntityInput
    from osprov.api.state import EndpointState
    from osprov.workflows.calls import call
    from osprov.workflows.entity import Outcome, StatusBase
    from osprov.workflows.keystone.common import KeystoneEntity, ensure, find, ready, require


@workflow.defn(name="Endpoint")
class EndpointWorkflow(KeystoneEntity[EndpointSpec, EndpointState]):
    KIND = "Endpoint"
    KEYSTONE_KIND = "endpoint"
    STATE = EndpointState

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    async def reconcile(self, spec: EndpointSpec, full: bool) -> Outcome:
        svc = spec.service
        service = await require(
            "service", f"service {svc.name!r} of type {svc.type!r}", svc.name, type=svc.type
        )
        if not await find("region", spec.region):
            region = io.Find(kind="region", name=spec.region)
            await call(
                io.CREATE,
                io.Create(kind="region", fields={"id": spec.region}, find=region),
                summary=f"create region {spec.region}",
            )
        ids: dict[str, str] = {}
        notes: list[str] = []
        for interface, url in sorted((i.value, u) for i, u in spec.urls.items()):
            keys = {"service_id": service.id, "region_id": spec.region, "interface": interface}
            obj, done, dupes = await ensure(
                "endpoint", io.Find(kind="endpoint", filters=keys), keys, {"url": url}
            )
            ids[interface] = obj.id
            if done != "unchanged":
                notes.append(f"{interface} {done}")
            if dupes:
                notes.append(
                    f"{interface} has duplicates {', '.join(d.id for d in dupes)} (adopted {obj.id}; "
                    "the others were left in place)"
                )
        message = f"endpoints of {svc.name} ({svc.type}) in {spec.region}: {', '.join(sorted(ids))}"
        if notes:
            message += "; " + "; ".join(notes)
        self.k.endpoint_ids = ids
        return Outcome(conditions=ready(message))

    def status(self, base: StatusBase) -> EndpointStatus:
        return EndpointStatus(**base, endpoint_ids=self.k.endpoint_ids or None)

    async def finalize(self, spec: EndpointSpec) -> None:
        for interface, endpoint_id in sorted(self.k.endpoint_ids.items()):
            await call(
                io.DELETE,
                io.Delete(kind="endpoint", id=endpoint_id),
                summary=f"delete {interface} endpoint {endpoint_id}",
            )
