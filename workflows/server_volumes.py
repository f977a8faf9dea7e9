"""Server attachments: attach every spec.volumes entry, detach the ones removed from the spec.

Contract: ../shared/spec/volumes.md "Server attachments". The asymmetric table (observe through
Cinder's attachment rows, write through Nova's volume-attachment API, no multi-attach) lives in the
attach/detach activities; this module only decides which to call and reports per-volume status.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from osprov.api import nova_io as io
    from osprov.api.nova import ServerVolume, ServerVolumeStatus
    from osprov.workflows.calls import call
    from osprov.workflows.entity import failure_message


@dataclass
class Attachments:
    attached: list[str]  # Volume names this server holds (sorted): what a later pass may detach
    statuses: list[ServerVolumeStatus] = field(default_factory=list)  # status.volumes rows, spec order
    problems: list[str] = field(default_factory=list)  # user-safe messages for Available


async def reconcile_attachments(
    volumes: list[ServerVolume],
    attached: set[str],
    server: tuple[io.Project, str, str],
    set_step: Callable[[str], None],
) -> Attachments:
    """`attached`: what earlier passes attached; `server`: (project, server ID, namespace)."""
    project, server_id, namespace = server
    out = Attachments(attached=[])
    for vol in volumes:
        set_step(f"attaching Volume {vol.volume}")
        req = io.VolumeAttachment(
            project=project, server_id=server_id, namespace=namespace, volume=vol.volume, device=vol.device
        )
        try:
            res = await call(io.ATTACH_VOLUME, req, summary=f"attach Volume {vol.volume}")
        except ActivityError as err:
            out.statuses.append(ServerVolumeStatus(name=vol.volume, message=failure_message(err)))
            out.problems.append(failure_message(err))
            continue
        attached.add(vol.volume)
        out.statuses.append(ServerVolumeStatus(name=vol.volume, device=res.device))
    for name in sorted(attached - {v.volume for v in volumes}):
        set_step(f"detaching Volume {name}")
        req = io.VolumeAttachment(project=project, server_id=server_id, namespace=namespace, volume=name)
        try:
            await call(io.DETACH_VOLUME, req, summary=f"detach Volume {name}")
            attached.discard(name)
        except ActivityError as err:
            out.problems.append(failure_message(err))
    out.attached = sorted(attached)
    return out
