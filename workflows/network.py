"""Network: a Neutron network-{uid} with its subnet-{uid} (and router-{uid}) in its Identity's project (or an
allowed spec.project).

Contract: issue 18 and docs/network.md. The decisions are pure functions in workflows/network_decisions.py;
this module executes them on the shared entity loop. Every pass starts with the tenancy step
(workflows/tenancy.py: which project, which credential) and rediscovers the objects by their deterministic
names, so a worker crash between a create and the status write adopts what was made. Neutron creates and
deletes synchronously: a pass reads, makes (or removes) one object at a time and folds the answer in (a
delete is confirmed by a fresh read), so there is no wait on the cloud between steps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import network_io as io
    from osprov.api import vlan_io
    from osprov.api.cinder_io import ProjectScope
    from osprov.api.common import AvailableReason
    from osprov.api.messages import ConditionState, EntityInput
    from osprov.api.network import NetworkSpec, NetworkStatus
    from osprov.api.registry import AVAILABLE
    from osprov.api.state import NetworkState
    from osprov.workflows.calls import call, call_local
    from osprov.workflows.entity import Outcome, PassFailed, StatusBase
    from osprov.workflows.event_recorder import note
    from osprov.workflows.network_decisions import (
        Decision,
        Done,
        Errored,
        Fail,
        Observation,
        Provisioned,
        RemoveInterface,
        Target,
        create,
        delete,
    )
    from osprov.workflows.tenancy import CloudEntity, Where

# A pass makes at most the network, the subnet, the router and its interface (or removes them), each
# followed by at most one read: more steps than this means Neutron does not do what it answers (e.g. a
# delete it confirms but a read still finds); the pass fails and the loop retries with backoff.
MAX_STEPS_PER_PASS = 12
# The allocator answers within a workflow task or two; longer means it is stuck: the pass fails and retries.
GRANT_TIMEOUT = timedelta(seconds=60)


def _available(ok: bool, reason: AvailableReason, message: str) -> ConditionState:
    return ConditionState.of(AVAILABLE, ok, reason, message)


@workflow.defn(name="Network")
class NetworkWorkflow(CloudEntity[NetworkSpec, NetworkState]):
    KIND = "Network"
    STATE = NetworkState

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    @workflow.signal(name=vlan_io.SIGNAL_GRANT)
    def vlan_grant(self, grant: vlan_io.Grant) -> None:
        if self.s is None or self.s.kind is None:
            return
        k = self.k
        # Only this workflow's allocator signals it; an older answer (a repeated request) never overwrites.
        if grant.seq >= (k.grant.seq if k.grant else 0):
            k.grant = grant

    def target(self, where: Where, segment: io.Segment | None = None, provider: bool = False) -> Target:
        ref = self.st.ref
        uid = ref.uid
        scope = ProjectScope(project=where.project, domain=where.domain, credential=where.credential)
        return Target(
            names=io.Names(
                network=io.network_name(uid), subnet=io.subnet_name(uid), router=io.router_name(uid)
            ),
            # Neutron objects have no metadata map: the linkage goes in the description (255 characters).
            description=f"osprov Network {ref.namespace}/{ref.name} uid {uid}"[:255],
            scope=scope,
            segment=segment,
            admin=provider,  # only the controller's credentials may set (and see) a segment
        )

    # ----- provider networks: the operator's policy and the VLAN allocator ---------------------------
    async def _segment(self, physnet: str) -> io.Segment:
        """P1-P3: the operator allows it (else Forbidden, nothing called), then this Network's VLAN ID: the
        one it holds, else the allocator's answer (requested by the workflow ID: a repeat gets the same)."""
        ns = self.st.ref.namespace
        policy = await call_local(
            vlan_io.PROVIDER_POLICY,
            vlan_io.ProviderRequest(namespace=ns, physical_network=physnet),
            summary=f"P1: check the tenancy mapping allows provider networks on {physnet} in namespace {ns}",
        )
        if not policy.allowed or policy.range is None:  # P1
            raise PassFailed(policy.message, reason=AvailableReason.FORBIDDEN.value, retry=False)
        k = self.k
        if k.segmentation_id is None:
            k.vlan_seq += 1
            seq = k.vlan_seq
            owner = workflow.info().workflow_id
            taken = await call(
                vlan_io.USED_IDS,
                vlan_io.UsedIds(physical_network=physnet),
                summary=f"P2: read the VLAN IDs in use on {physnet} in Neutron",
            )
            self.set_step(f"P2: ask the VLAN allocator of {physnet} for an ID in {policy.range}")
            req = vlan_io.Allocate(
                owner=owner, physical_network=physnet, range=policy.range, seq=seq, taken=taken
            )
            await call(
                vlan_io.REQUEST,
                req,
                summary=f"P2: ask the VLAN allocator of {physnet} for an ID",
            )
            try:
                await workflow.wait_condition(
                    lambda: k.grant is not None and k.grant.seq >= seq,
                    timeout=GRANT_TIMEOUT,
                    timeout_summary=f"wait for the VLAN allocator of {physnet}",
                )
            except TimeoutError:
                raise PassFailed(f"no answer from the VLAN allocator of {physnet} yet — retrying") from None
            assert k.grant is not None
            if k.grant.segmentation_id is None:  # P3: exhausted; the loop's backoff retries
                raise PassFailed(k.grant.message, reason=AvailableReason.PROVISIONING.value)
            k.segmentation_id = k.grant.segmentation_id
            self.event(note("Allocated", f"VLAN {k.segmentation_id} on {physnet}"))
        return io.Segment(physical_network=physnet, segmentation_id=k.segmentation_id)

    async def _release(self, physnet: str) -> None:
        """P4: Neutron confirmed the network gone (D1/D8): its ID may be handed out again."""
        self.set_step(f"P4: release VLAN {self.k.segmentation_id} on {physnet}")
        await call(
            vlan_io.RELEASE,
            vlan_io.Release(owner=workflow.info().workflow_id, physical_network=physnet),
            summary=f"P4: release this Network's VLAN ID on {physnet}",
        )
        self.k.segmentation_id = None

    def status(self, base: StatusBase) -> NetworkStatus:
        k = self.k
        return NetworkStatus(
            **base,
            network_id=k.network_id,
            subnet_id=k.subnet_id,
            router_id=k.router_id,
            segmentation_id=k.segmentation_id,
        )

    def failure_condition(self, reason: str, message: str) -> ConditionState:
        # Every failure is reported with one of the Available reasons.
        if reason not in {r.value for r in AvailableReason}:
            deleting = self.st.desired is not None and (self.st.desired.deleting or self.st.desired.gone)
            reason = (AvailableReason.DEPROVISIONING if deleting else AvailableReason.PROVISIONING).value
        return ConditionState.of(AVAILABLE, False, reason, message)

    # ----- executing decisions ------------------------------------------------------------------------
    async def _run_pass(self, decide: Callable[[Observation], Decision]) -> Decision:
        """Ask, call, fold in, ask again; returns the decision that ends the pass (Fail raises)."""
        obs = Observation()
        for _ in range(MAX_STEPS_PER_PASS):
            d = decide(obs)
            self.set_step(d.step)
            a = d.action
            if isinstance(a, Fail):
                raise PassFailed(a.message, reason=a.reason.value)
            if isinstance(a, io.FindNetwork):
                lookup = await call(io.FIND_NETWORK, a, summary=d.step)
                self._remember(lookup)
                obs = Observation(lookup=lookup)
            elif isinstance(a, io.CreateNetwork):
                made = await call(io.CREATE_NETWORK, a, summary=d.step)
                self.event(note("Created", f"created Neutron network {a.name}"))
                obs = self._fold(obs, networks=[made])
            elif isinstance(a, io.CreateSubnet):
                subnet = await call(io.CREATE_SUBNET, a, summary=d.step)
                self.event(note("Created", f"created Neutron subnet {a.name} ({a.cidr})"))
                obs = self._fold(obs, subnets=[subnet])
            elif isinstance(a, io.CreateRouter):
                router = await call(io.CREATE_ROUTER, a, summary=d.step)
                self.event(note("Created", f"created Neutron router {a.name}"))
                obs = self._fold(obs, routers=[router])
            elif isinstance(a, io.RouterInterface):
                router = await call(io.ADD_ROUTER_INTERFACE, a, summary=d.step)
                obs = self._fold(obs, routers=[router])
            elif isinstance(a, RemoveInterface):
                await call(io.REMOVE_ROUTER_INTERFACE, a.request, summary=d.step)
                obs = Observation()  # confirmed by the next read
            elif isinstance(a, io.DeleteObject):
                await call(io.DELETE_OBJECT, a, summary=d.step)
                self.event(note("Deleted", d.what))
                obs = Observation()
            else:
                return d
        raise PassFailed("Neutron did not settle within one pass — retrying")

    def _fold(self, obs: Observation, **found: object) -> Observation:
        assert obs.lookup is not None
        lookup = obs.lookup.model_copy(update=found)
        self._remember(lookup)
        return replace(obs, lookup=lookup)

    def _remember(self, lookup: io.NetworkLookup | None) -> None:
        """The IDs the status reports: what the latest read (or create) found, None once it is gone."""
        if lookup is None or not lookup.project_found:
            return
        k = self.k
        k.network_id = lookup.networks[0].id if len(lookup.networks) == 1 else None
        k.subnet_id = lookup.subnets[0].id if len(lookup.subnets) == 1 else None
        k.router_id = lookup.routers[0].id if len(lookup.routers) == 1 else None

    # ----- create --------------------------------------------------------------------------------
    async def reconcile(self, spec: NetworkSpec, full: bool) -> Outcome:
        where = await self.where(spec, deleting=False)
        assert where is not None
        segment = await self._segment(spec.provider.physical_network) if spec.provider else None
        target = self.target(where, segment, provider=spec.provider is not None)
        d = await self._run_pass(lambda obs: create(spec, target, obs))
        if isinstance(d.action, Errored):  # S2
            workflow.logger.warning(
                "Neutron network in an error state", extra={"network_id": d.action.network.id}
            )
            message = "the Neutron network entered an error state"
            return Outcome(conditions=[_available(False, AvailableReason.ERRORED, message)])
        assert isinstance(d.action, Provisioned)  # S1
        return Outcome(conditions=[_available(True, AvailableReason.PROVISIONED, d.action.message)])

    # ----- delete --------------------------------------------------------------------------------
    async def finalize(self, spec: NetworkSpec) -> Outcome | None:
        where = await self.where(spec, deleting=True)
        if where is None:  # its Identity is gone or never got a project: nothing can exist
            # A VLAN ID is kept, not released: without a read that confirms the network gone, handing it out
            # again could give two networks one segment (an operator releases it: docs/network.md).
            return None
        # The project's own credentials read and delete a provider network too (it owns it; D rows need no
        # segment): no controller power on the way out, even where the operator has since withdrawn it.
        target = self.target(where)
        d = await self._run_pass(lambda obs: delete(target, obs))
        assert isinstance(d.action, Done)  # D1, D8
        if spec.provider is not None and d.rule == "D8":
            # Only on a read that found the network gone: D1 (the project is gone) says nothing about a
            # network the controller made for it, so its ID stays allocated rather than risk a second user.
            await self._release(spec.provider.physical_network)
        return None
