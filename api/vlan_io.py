"""The VLAN allocator of provider Networks: one workflow per physical network (and task queue) is the single
writer of that physical network's allocation table (workflows/vlan_allocator.py).

Neutron does not allocate the VLAN IDs of provider networks for osprov (the seed): a Network asks its
physical network's allocator with a signal (through an activity that signal-with-starts it, since the
allocator may not run yet) and gets the answer back as a signal. Allocations are keyed by the Network's
workflow ID, so a retried or replayed request gets the same ID again: exactly one ID per Network, which
is in the allocator's history before the Network can create anything with it. A release is sent only after
Neutron confirmed the network gone.

Also the operator's policy a provider Network is checked against before any cloud call: which namespaces
may make provider networks on which physical networks, and each physical network's VLAN range
(the tenancy mapping file, docs/network.md). Pure pydantic: workflows import it inside the sandbox.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from osprov.api.activity import Activity

WORKFLOW_TYPE = "VlanAllocator"
SIGNAL_ALLOCATE = "vlan.allocate"
SIGNAL_RELEASE = "vlan.release"
SIGNAL_GRANT = "vlan.grant"  # allocator -> Network
QUERY_TABLE = "vlan.table"
MIN_VLAN, MAX_VLAN = 1, 4094


def workflow_id(physical_network: str, task_queue: str) -> str:
    """One allocator per physical network of each controller (its task queue)."""
    return f"{WORKFLOW_TYPE}/{task_queue}/{physical_network}"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class VlanRange(_Model):
    first: int = Field(ge=MIN_VLAN, le=MAX_VLAN)
    last: int = Field(ge=MIN_VLAN, le=MAX_VLAN)

    def __str__(self) -> str:
        return f"{self.first}-{self.last}"


class ProviderRequest(_Model):
    namespace: str
    physical_network: str


class ProviderPolicy(_Model):
    """allowed: the namespace may make provider networks on the physical network, whose range is `range`."""

    allowed: bool
    message: str = ""  # why not (user-safe: says what the operator must configure)
    range: VlanRange | None = None


class AllocatorInput(_Model):
    physical_network: str
    table: dict[str, int] = Field(default_factory=dict)  # owner (a Network's workflow ID) -> VLAN ID
    max_messages: int = Field(default=500, ge=1)  # handled per run before continue-as-new


class Allocate(_Model):
    """Signal: give `owner` a VLAN ID in `range` (the same one it already holds, if any)."""

    owner: str
    physical_network: str
    range: VlanRange
    seq: int
    taken: list[int] = Field(default_factory=list)  # IDs Neutron shows in use on it (maybe not osprov's)


class Release(_Model):
    """Signal: `owner`'s network is gone in Neutron; its ID may be handed out again."""

    owner: str
    physical_network: str


class Grant(_Model):
    """Signal to the owner: its ID, or (segmentation_id None) why there is none."""

    owner: str
    physical_network: str
    seq: int
    segmentation_id: int | None = None
    message: str = ""


class UsedIds(_Model):
    physical_network: str


class AllocatorState(_Model):
    physical_network: str
    table: dict[str, int]


PROVIDER_POLICY: Activity[ProviderRequest, ProviderPolicy] = Activity(
    "vlan.provider_policy", ProviderRequest, ProviderPolicy
)
USED_IDS: Activity[UsedIds, list[int]] = Activity("vlan.used_ids", UsedIds, list[int])
REQUEST: Activity[Allocate, None] = Activity("vlan.request", Allocate, type(None))
RELEASE: Activity[Release, None] = Activity("vlan.release", Release, type(None))
