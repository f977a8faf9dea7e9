"""VlanAllocator: the single writer of one physical network's VLAN allocation table (api/vlan_io.py).

  allocate, owner holds an ID          -> grant it again (a retried or replayed request: exactly once)
  allocate, a free ID in the range     -> the lowest one neither allocated nor seen in use in Neutron on the
                                          physical network (`taken`), recorded, then granted
  allocate, none free                  -> grant None with "no free VLAN ID in range …" (the Network reports
                                          it and retries on its backoff timer: no storm)
  release                              -> the owner's ID is free again (sent only once Neutron confirmed
                                          the network gone)

Requests and releases arrive as signals and are handled in arrival order by this one workflow, so two
Networks can never be given the same ID, whatever runs concurrently or crashes. The decision for a request
is a pure function of the signals before it, so the ID is fixed in this history before the grant signal
reaches the Network (and before the Network can create anything with it). Continue-as-new carries the table.
"""

from __future__ import annotations

import asyncio

from temporalio import workflow
from temporalio.exceptions import FailureError

with workflow.unsafe.imports_passed_through():
    from osprov.api import vlan_io as io


def allocate(table: dict[str, int], req: io.Allocate, physical_network: str) -> io.Grant:
    """The grant for `req` given the table (which it updates): pure, so replay decides the same."""
    held = table.get(req.owner)
    if held is not None:
        return io.Grant(owner=req.owner, physical_network=physical_network, seq=req.seq, segmentation_id=held)
    # Neutron's own view too: an ID a network osprov did not make holds on the physical network is never
    # handed out (the requester read it just before asking).
    used = set(table.values()) | set(req.taken)
    free = next((v for v in range(req.range.first, req.range.last + 1) if v not in used), None)
    if free is None:
        size = req.range.last - req.range.first + 1
        message = (
            f"no free VLAN ID in range {req.range} on physical network {physical_network}: all {size} are "
            "allocated to other Networks; delete one, or ask an operator to widen the range — retrying"
        )
        return io.Grant(owner=req.owner, physical_network=physical_network, seq=req.seq, message=message)
    table[req.owner] = free
    return io.Grant(owner=req.owner, physical_network=physical_network, seq=req.seq, segmentation_id=free)


@workflow.defn(name=io.WORKFLOW_TYPE)
class VlanAllocatorWorkflow:
    def __init__(self) -> None:
        self.physical_network = ""
        self.table: dict[str, int] = {}
        self.inbox: list[io.Allocate | io.Release] = []
        self.handled = 0
        self.max_messages = 1

    @workflow.signal(name=io.SIGNAL_ALLOCATE)
    def on_allocate(self, req: io.Allocate) -> None:
        self.inbox.append(req)

    @workflow.signal(name=io.SIGNAL_RELEASE)
    def on_release(self, req: io.Release) -> None:
        self.inbox.append(req)

    @workflow.query(name=io.QUERY_TABLE)
    def state(self) -> io.AllocatorState:
        return io.AllocatorState(physical_network=self.physical_network, table=dict(self.table))

    @workflow.run
    async def run(self, inp: io.AllocatorInput) -> None:
        self.physical_network = inp.physical_network
        self.table = dict(inp.table)
        self.max_messages = inp.max_messages  # each allocation is a signal in and one out
        while True:
            await workflow.wait_condition(lambda: bool(self.inbox))
            batch, self.inbox = self.inbox, []
            grants = []
            for msg in batch:
                if isinstance(msg, io.Release):
                    self.table.pop(msg.owner, None)
                else:
                    grants.append(allocate(self.table, msg, self.physical_network))
            self.handled += len(batch)
            workflow.set_current_details(f"{len(self.table)} VLAN IDs allocated on {self.physical_network}")
            await asyncio.gather(*(self._reply(g) for g in grants))
            if not self.inbox and (
                self.handled >= self.max_messages or workflow.info().is_continue_as_new_suggested()
            ):
                carried = io.AllocatorInput(
                    physical_network=self.physical_network, table=self.table, max_messages=self.max_messages
                )
                workflow.continue_as_new(carried)

    async def _reply(self, grant: io.Grant) -> None:
        try:
            await workflow.get_external_workflow_handle(grant.owner).signal(io.SIGNAL_GRANT, grant)
        except FailureError:
            # The Network's workflow is gone: its ID stays allocated (never handed out twice while a
            # network may exist with it); an operator's release, or the Network's next run, frees it.
            workflow.logger.warning("VLAN grant not delivered", extra={"owner": grant.owner})
