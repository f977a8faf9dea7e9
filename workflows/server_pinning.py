"""A pinned Server's create (spec.placement): rows N1–N3, run only before a create (an adopted server is
never re-checked), so only runs of pinned Servers — a field new in this release — execute these commands.

  N1 the operator's tenancy mapping does not allow pinning here -> Forbidden, nothing created, no retry
  N2 allowed, placement preflight off                           -> create pinned
  N3 preflight on: Placement says the node lacks something      -> Available False naming what is missing,
                                                                   retried on the loop's timer; no Nova call
     preflight on and it fits                                   -> create pinned
"""

from __future__ import annotations

from collections.abc import Callable

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import nova_io, tenancy_io
    from osprov.api.common import AvailableReason
    from osprov.api.nova import ServerSpec
    from osprov.workflows.calls import call_local
    from osprov.workflows.entity import PassFailed


async def check_pinning(
    namespace: str, spec: ServerSpec, project: nova_io.Project, set_step: Callable[[str], None]
) -> None:
    placement = spec.placement
    if placement is None:
        return
    policy = await call_local(
        tenancy_io.PINNING_POLICY,
        tenancy_io.PinningRequest(namespace=namespace),
        summary=f"check the tenancy mapping allows pinned servers in namespace {namespace}",
    )
    if not policy.allowed:  # N1
        set_step("N1: refused: pinning is not allowed in this namespace")
        raise PassFailed(policy.message, reason=AvailableReason.FORBIDDEN.value, retry=False)
    if not policy.preflight:  # N2
        return
    provider = placement.provider
    step = f"N3: placement preflight: can {provider} take flavor {spec.flavor}?"
    set_step(step)
    result = await call_local(
        nova_io.PLACEMENT_PREFLIGHT,
        nova_io.PlacementPreflight(
            project=project, flavor=spec.flavor, provider=provider, required_traits=policy.required_traits
        ),
        summary=step,
    )
    if result.missing:
        what = "; ".join(result.missing)
        set_step(f"N3: placement preflight missed on {provider}: {what}")
        raise PassFailed(
            f"waiting for placement: resource provider {provider} cannot take flavor {spec.flavor} ({what}); "
            "no server was created — re-checked until the node has it (or change the flavor or "
            "spec.placement by replacing the Server)",
            reason=AvailableReason.PROVISIONING.value,
        )
