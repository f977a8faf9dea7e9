"""The Server's plan walk (workflows/plan.py): what its pass would call now, on fresh reads.

The pass's own order: one fresh read (by the stored ID, else by the exact name), create when there is no
server, set the osprov metadata where it drifted, the resize rules (workflows/resize.py, Z1…Z17, with
Nova's action counts), then the rebuild rules (workflows/rebuild.py, P1…P7e) on the markers the workflow
holds. An armed rebuild or resize is submitted in the same pass, so the plan shows the submit. The first
destructive or creating call ends the walk.
"""

from __future__ import annotations

from typing import Any, Protocol

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import nova_io as io
    from osprov.api.nova import RebuildState, ServerSpec
    from osprov.workflows.plan import AFTER_WRITE, PlanStopped, Recorder
    from osprov.workflows.rebuild import Action, Observation, reconcile_pass
    from osprov.workflows.resize import Action as ResizeAction
    from osprov.workflows.resize import ResizeRead, resize_pass, unsettled


class ServerWorkflow(Protocol):
    """What the walk uses of the Server workflow (workflows/server.py)."""

    @property
    def k(self) -> Any: ...
    def server_name(self) -> str: ...
    def metadata(self, spec: ServerSpec, project: io.Project) -> dict[str, str]: ...
    def create_request(self, spec: ServerSpec, project: io.Project) -> io.CreateServer: ...
    async def plan_where(self, spec: ServerSpec) -> Any: ...


READS = frozenset({io.GET_SERVER.name, io.FIND_SERVER.name, io.FLAVOR_NAME.name, io.RESIZE_ACTIONS.name})


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
    resize = await _resize(wf, spec, project, read, rec)
    if resize is not None:
        return resize
    obs = Observation(
        status=read.status, image_id=read.image_id, task_state=read.task_state, launched_at=read.launched_at
    )
    d = reconcile_pass(wf.k.rebuild, obs, spec.image_id, unsettled(wf.k.resize))
    if d.action is Action.ARM:
        d = reconcile_pass(d.marker, obs, spec.image_id)  # armed and submitted in one pass
    if d.action is Action.SUBMIT:
        rebuild = io.Rebuild(project=project, server_id=read.id, image_id=spec.image_id)
        rec.write(d.rule, io.REBUILD, f"rebuild server {read.id} with image {spec.image_id}", rebuild)
        return AFTER_WRITE
    return AFTER_WRITE if rec.calls else d.step


async def _resize(
    wf: ServerWorkflow, spec: ServerSpec, project: io.Project, read: io.ServerRead, rec: Recorder
) -> str | None:
    """The resize rules (workflows/resize.py, Z1…Z17) on this read and Nova's action counts; None: nothing
    for the flavor, the rebuild rules run."""
    desired = spec.flavor
    if spec.flavor != read.flavor:
        ref = io.FlavorRef(project=project, flavor=spec.flavor)
        desired = await rec.read(io.FLAVOR_NAME, ref, f"find the name of flavor {spec.flavor}")
    if wf.k.resize is None and read.flavor == desired:
        return None
    server = io.ServerId(project=project, server_id=read.id)
    counts = await rec.read(io.RESIZE_ACTIONS, server, f"count resize actions of server {read.id}")
    rr = ResizeRead(
        status=read.status,
        task_state=read.task_state,
        launched_at=read.launched_at,
        flavor=read.flavor,
        resizes=counts.resizes,
        confirms=counts.confirms,
    )
    rebuild = wf.k.rebuild
    busy = rebuild is not None and rebuild.state in (RebuildState.INITIATED, RebuildState.REBUILDING)
    d = resize_pass(wf.k.resize, rr, desired, busy)
    if d.action is ResizeAction.ARM:
        d = resize_pass(d.marker, rr, desired, busy)  # armed and submitted in one pass
    if d.action is ResizeAction.SUBMIT:
        request = io.Resize(project=project, server_id=read.id, flavor=desired)
        rec.write(d.rule, io.RESIZE, f"resize server {read.id} to flavor {desired}", request)
        return AFTER_WRITE
    if d.action is ResizeAction.CONFIRM:
        rec.write(d.rule, io.CONFIRM_RESIZE, f"confirm the resize of server {read.id}", server)
        return AFTER_WRITE
    return None if d.action is ResizeAction.GO_ON else d.step
