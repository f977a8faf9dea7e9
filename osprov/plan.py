"""`osprov plan -f resources.yaml` | `osprov plan KIND/NAME [-n NAMESPACE]`: the OpenStack calls a change
would make now, without writing anything (workflows/plan.py).

For each resource in the file (or the one named, with its current spec) the resource's own workflow
computes the plan through the Update `plan`: its kind's decision functions walk fresh reads made with the
resource's own credentials, and the first write ends the walk. Nothing is applied: the workflow keeps
running the spec it had. A resource that is not applied yet has no workflow and no UID (its objects'
names derive from it), so nothing of its own can exist: its first pass creates what it declares.

Exit status: 0 every plan computed, 1 some resource could not be planned, 2 bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

import yaml
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowUpdateFailedError

from osprov.api import registry
from osprov.api.plan import UPDATE_PLAN, Plan
from osprov.runtime import logs
from osprov.runtime.settings import Settings
from osprov.runtime.temporal import connect
from osprov.status import latest_workflow, resolve_kind


async def plan_one(
    client: Client, info: registry.KindInfo, namespace: str, name: str, spec: dict[str, Any] | None
) -> tuple[bool, str | Plan]:
    """(planned, the plan or what to print instead) for one resource; `spec` None: its current spec."""
    latest = await latest_workflow(client, info, namespace, name)
    if latest is None or latest.status != WorkflowExecutionStatus.RUNNING:
        if spec is None:
            return False, f"no running osprov workflow for {info.kind} {namespace}/{name}"
        return True, (
            f"{info.kind} {namespace}/{name}: not applied yet — its first pass creates what it declares "
            "(apply it with the annotation osprov.osh.openstack.org/paused=true to plan it against the cloud)"
        )
    try:
        plan = await client.get_workflow_handle(latest.id).execute_update(UPDATE_PLAN, spec, result_type=Plan)
    except WorkflowUpdateFailedError as err:
        return False, f"{info.kind} {namespace}/{name}: not planned: {err.cause}"
    return True, plan


def documents(path: Path, namespace: str) -> list[tuple[registry.KindInfo, str, str, dict[str, Any]]]:
    """(kind, namespace, name, spec) of every osprov resource in a YAML file (other documents skipped)."""
    found = []
    for doc in yaml.safe_load_all(path.read_text()):
        if not isinstance(doc, dict) or "kind" not in doc:
            continue
        try:
            info = resolve_kind(str(doc["kind"]))
        except ValueError:
            continue
        meta = doc.get("metadata") or {}
        found.append(
            (info, str(meta.get("namespace") or namespace), str(meta["name"]), doc.get("spec") or {})
        )
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="osprov plan", description=__doc__.split("\n\n")[0])
    parser.add_argument("resource", nargs="?", help="KIND/NAME: plan its current spec")
    parser.add_argument("-f", "--filename", type=Path, help="a YAML file of resources (as for kubectl apply)")
    parser.add_argument("-n", "--namespace", default=os.environ.get("OSPROV_STATUS_NAMESPACE", "default"))
    parser.add_argument(
        "-o", "--output", choices=["text", "json"], default="text", help="json: one Plan per line"
    )
    args = parser.parse_args(argv)
    if (args.resource is None) == (args.filename is None):
        parser.error("give either KIND/NAME or -f FILE")
    wanted: list[tuple[registry.KindInfo, str, str, dict[str, Any] | None]] = []
    if args.filename is not None:
        wanted.extend(documents(args.filename, args.namespace))
    else:
        kind, _, name = str(args.resource).partition("/")
        try:
            wanted.append((resolve_kind(kind), args.namespace, name, None))
        except ValueError as err:
            parser.error(str(err))
        if not name:
            parser.error("give the resource as KIND/NAME")
    results = asyncio.run(_plan(wanted))
    for _, result in results:
        if isinstance(result, str):
            print(json.dumps({"error": result}) if args.output == "json" else result)
        else:
            print(result.model_dump_json() if args.output == "json" else result.render())
    return 0 if all(ok for ok, _ in results) else 1


async def _plan(
    wanted: list[tuple[registry.KindInfo, str, str, dict[str, Any] | None]],
) -> list[tuple[bool, str | Plan]]:
    logs.configure("WARNING", component="plan")  # stdout is the plan
    client = await connect(Settings())
    return [await plan_one(client, info, ns, name, spec) for info, ns, name, spec in wanted]
