"""The Server's plan walk (workflows/plan.py): what its pass would call now, on fresh reads.

The pass's own order: one fresh read (by the stored ID, else by the exact name), create when there is no
server, set the osprov metadata where it drifted, then the rebuild rules (workflows/rebuild.py, P1…P7e)
on the marker the workflow holds. An armed rebuild is submitted in the same pass (P7b then P7e), so the
plan shows the submit. The first destructive or creating call ends the walk.
"""

from __future__ import annotations

from typing import Any, Protocol

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import nova_io as io
    from osprov.api.nova import ServerSpec
    from osprov.workflows.plan import AFTER_WRITE, PlanStopped, Recorder
    from osprov.workflows.rebuild import Action, Observation, reconcile_pass


class ServerWorkflow(Protocol):
    """What the walk uses of the Server workflow (workflows/server.py)."""

    @property
    def k(self) -> Any: ...
    def server_name(self) -> str: ...
    def metadata(self, spec: ServerSpec, project: io.Project) -> dict[str, str]: ...
    def create_request(self, spec: ServerSpec, project: io.Project) -> io.CreateServer: ...
    async def plan_where(self, spec: ServerSpec) -> Any: ...


READS = frozenset({io.GET_SERVER.name, io.FIND_SERVER.name})


async def walk(wf: ServerWorkflow, spec: ServerSpec, rec: Recorder) -> str:
    if spec.unmanaged:
        return "managementPolicy unmanaged: the server is only observed, never written"
    where = await wf.plan_where(spec)
    project = io.Project(name=where.project, domain=where.domain, credential=where.credential)
    read = None
    if wf.k.server_id:
        server_id = wf.k.server_id
        read = (
            await rec.read(
                io.GET_SERVER, io.ServerId(project=project, server_id=server_id), "read the server"
            )
        ).server
    if read is None:
        name = wf.server_name()
        found = await rec.read(
            io.FIND_SERVER, io.FindServer(project=project, name=name), f"find server {name}"
        )
        if len(found) > 1:
            raise PlanStopped(f"several Nova servers are named {name}: the pass refuses to go on")
        if not found:
            rec.write("create", io.CREATE_SERVER, f"create server {name}", wf.create_request(spec, project))
            return AFTER_WRITE
        read = found[0]
    want = wf.metadata(spec, project)
    if any(read.metadata.get(k) != v for k, v in want.items()):
        meta = io.SetMetadata(project=project, server_id=read.id, metadata=want)
        rec.write("metadata", io.SET_METADATA, f"set the osprov metadata of server {read.id}", meta)
    obs = Observation(
        status=read.status, image_id=read.image_id, task_state=read.task_state, launched_at=read.launched_at
    )
    d = reconcile_pass(wf.k.rebuild, obs, spec.image_id)
    if d.action is Action.ARM:
        d = reconcile_pass(d.marker, obs, spec.image_id)  # armed and submitted in one pass
    if d.action is Action.SUBMIT:
        rebuild = io.Rebuild(project=project, server_id=read.id, image_id=spec.image_id)
        rec.write(d.rule, io.REBUILD, f"rebuild server {read.id} with image {spec.image_id}", rebuild)
        return AFTER_WRITE
    return AFTER_WRITE if rec.calls else d.step
