"""Observe only (managementPolicy unmanaged with import): which existing cloud object a resource mirrors.

Pure, no I/O and no Temporal: shared by the Server and LoadBalancer workflows (the Volume has the same rows
in workflows/volume_decisions.py). The resource never creates, writes or deletes the object; CEL requires
deletionPolicy retain, so deleting the resource leaves it as it is.

  O1 read the imported object: by import.id, or every object named exactly import.filter.name, in the
     resource's project (another project's object is not found, whatever the credentials could read)
  O2 the project does not exist  -> as the managed path: the tenancy step reports it, retried
  O3 no such object              -> Available=False/Errored "nothing to observe", retried
  O4 two or more with that name  -> Available=False/Errored (which one is meant?), retried
  then the kind's mirror rows on the one object (below; docs/server.md, docs/loadbalancer.md):
  OS1 server ACTIVE, SHUTOFF, PAUSED, SUSPENDED, SHELVED(_OFFLOADED) -> Available=True/Provisioned
  OS2 server ERROR                -> Available=False/Errored (until it changes)
  OS3 server anything else        -> Available=False/Provisioning, re-read soon (BUILD, RESIZE, …)
  OL1 load balancer ACTIVE        -> Available=True/Provisioned
  OL2 load balancer ERROR         -> Available=False/Errored (until it changes)
  OL3 load balancer PENDING_*     -> Available=False/Provisioning, re-read soon
The status mirrors the object: its ID, and the kind's observed fields (a server's phase, launchedAt and
MAC; a load balancer's VIP). Spec fields that describe the object (flavor, image, listeners, …) are not
compared: an unmanaged resource has nothing to converge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from osprov.api.common import AvailableReason, CloudImport

T = TypeVar("T")


@dataclass(frozen=True)
class Wanted:
    """O1: what spec.import asks for (exactly one of the two; the schema enforces it)."""

    id: str | None
    name: str | None

    @classmethod
    def of(cls, spec_import: CloudImport | None) -> Wanted:
        assert spec_import is not None  # unmanaged requires import (api/common.py)
        return cls(spec_import.id, spec_import.filter.name if spec_import.filter else None)

    @property
    def shown(self) -> str:
        return f"ID {self.id}" if self.id else f"name {self.name}"


@dataclass(frozen=True)
class Chosen(Generic[T]):
    """The one object the resource mirrors (then the kind's mirror rows)."""

    found: T


@dataclass(frozen=True)
class Refused:
    """O3 or O4: nothing to mirror; reported as Errored and retried (the cloud may change)."""

    rule: str
    message: str


def choose(found: Sequence[T], wanted: Wanted, what: str, where: str) -> Chosen[T] | Refused:
    """O3, O4 or the object: `found` is O1's answer, `what` the object's kind ("Nova server")."""
    if not found:
        return Refused(
            "O3",
            f"no {what} with {wanted.shown} in {where}: nothing to observe; fix spec.import (a new resource) "
            "or create the object — retrying",
        )
    if len(found) > 1:
        return Refused(
            "O4",
            f"{len(found)} {what}s are named {wanted.name} in {where}: import one by ID (a new resource) — "
            "retrying",
        )
    return Chosen(found[0])


# --- the kinds' mirror rows ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mirror:
    """What the observed object's state means for the resource's Available condition."""

    rule: str
    reason: AvailableReason
    message: str

    @property
    def available(self) -> bool:
        return self.reason is AvailableReason.PROVISIONED

    @property
    def settling(self) -> bool:
        """Re-read soon (on the kind's growing wait) instead of at the next resync."""
        return self.reason is AvailableReason.PROVISIONING


# Nova statuses of a server that is up or deliberately stopped (not being built, changed or broken).
SERVER_SETTLED = frozenset({"ACTIVE", "SHUTOFF", "PAUSED", "SUSPENDED", "SHELVED", "SHELVED_OFFLOADED"})


def mirror_server(server_id: str, status: str) -> Mirror:
    """OS1–OS3 (Healthy mirrors the status as for a managed server)."""
    if status in SERVER_SETTLED:  # OS1
        return Mirror("OS1", AvailableReason.PROVISIONED, f"observing Nova server {server_id}: {status}")
    if status == "ERROR":  # OS2
        return Mirror("OS2", AvailableReason.ERRORED, f"the observed Nova server {server_id} is in ERROR")
    # OS3: BUILD, REBUILD, RESIZE, MIGRATING, …: changing under someone else's hands; look again soon
    return Mirror("OS3", AvailableReason.PROVISIONING, f"observing Nova server {server_id}: {status}")


def mirror_load_balancer(lb_id: str, provisioning_status: str) -> Mirror:
    """OL1–OL3."""
    if provisioning_status == "ACTIVE":  # OL1
        return Mirror("OL1", AvailableReason.PROVISIONED, f"observing Octavia load balancer {lb_id}: ACTIVE")
    if provisioning_status == "ERROR":  # OL2
        return Mirror(
            "OL2", AvailableReason.ERRORED, f"the observed Octavia load balancer {lb_id} is in ERROR"
        )
    # OL3: PENDING_CREATE/UPDATE/DELETE: someone else is changing it; look again soon
    return Mirror(
        "OL3", AvailableReason.PROVISIONING, f"observing Octavia load balancer {lb_id}: {provisioning_status}"
    )
