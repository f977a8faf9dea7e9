"""`osprov approve KIND/NAME [-n NAMESPACE] [--change ACTION:GENERATION]`: approve the destructive step an
approval gate holds for one resource (workflows/approval.py).

Reads what the resource's workflow holds (one query), prints it, and approves exactly that change through
the workflow's Update `approve`. The Update's validator refuses anything but the change pending at that
moment, so a change that arrived after the one printed here is not approved by accident; `--change` pins
the approval to the token an operator reviewed (the ready condition and `osprov status` show it).

Exit status: 0 approved, 1 nothing (or something else) awaits approval, 2 no such workflow or bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowUpdateFailedError

from osprov.api import registry
from osprov.api.messages import QUERY_STATE, EntityState
from osprov.api.operations import UPDATE_APPROVE
from osprov.runtime import logs
from osprov.runtime.settings import Settings
from osprov.runtime.temporal import connect
from osprov.status import latest_workflow, resolve_kind


async def approve(
    client: Client, info: registry.KindInfo, namespace: str, name: str, change: str | None
) -> tuple[int, str]:
    """(exit status, what to print)."""
    latest = await latest_workflow(client, info, namespace, name)
    if latest is None or latest.status != WorkflowExecutionStatus.RUNNING:
        return 2, f"no running osprov workflow for {info.kind} {namespace}/{name}"
    handle = client.get_workflow_handle(latest.id, run_id=latest.run_id)
    state = await handle.query(QUERY_STATE, result_type=EntityState[Any])
    pending = state.ops.pending_approval
    if pending is None:
        return 1, f"nothing awaits approval for {info.kind} {namespace}/{name}"
    if change is not None and change != pending.token:
        return 1, f"{pending.what} awaits approval as {pending.token}, not {change}: nothing approved"
    try:
        # The latest run, not the one listed: continue-as-new keeps the ID and carries what is pending.
        answer = await client.get_workflow_handle(latest.id).execute_update(
            UPDATE_APPROVE, pending.token, result_type=str
        )
    except WorkflowUpdateFailedError as err:
        return 1, f"not approved: {err.cause}"
    return 0, f"{answer} ({pending.token})"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="osprov approve", description=__doc__.split("\n\n")[0])
    parser.add_argument("resource", help="KIND/NAME, e.g. Server/web or servers/web")
    parser.add_argument("-n", "--namespace", default=os.environ.get("OSPROV_STATUS_NAMESPACE", "default"))
    parser.add_argument("--change", help="approve only this pending change (ACTION:GENERATION, as shown)")
    args = parser.parse_args(argv)
    kind, _, name = args.resource.partition("/")
    try:
        info = resolve_kind(kind)
    except ValueError as err:
        parser.error(str(err))
    if not name:
        parser.error("give the resource as KIND/NAME")
    code, text = asyncio.run(_approve(info, args.namespace, name, args.change))
    print(text)
    return code


async def _approve(info: registry.KindInfo, namespace: str, name: str, change: str | None) -> tuple[int, str]:
    logs.configure("WARNING", component="approve")  # stdout is the answer
    return await approve(await connect(Settings()), info, namespace, name, change)
