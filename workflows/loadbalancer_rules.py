"""What a LoadBalancer spec means in Octavia terms, and how a read is classified (pure functions).

Contract: ../shared/spec/octavia.md. Used by workflows/loadbalancer.py; no I/O, no workflow calls.
"""

from __future__ import annotations

from typing import Any, TypeVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import octavia_io as io
    from osprov.api.common import AvailableReason
    from osprov.api.octavia import Listener
    from osprov.workflows.entity import PassFailed

ERRORED = AvailableReason.ERRORED.value

T = TypeVar("T")


def consistency(message: str) -> PassFailed:
    """No safe next action: reported as Errored; the next passes only read until the cloud changes."""
    return PassFailed(message, reason=ERRORED, retry=True)


def exactly_one(found: list[T], what: str) -> T | None:
    if len(found) > 1:
        raise consistency(f"{len(found)} Octavia objects are named exactly {what}; remove the extra ones")
    return found[0] if found else None


def settled(obj_status: str, what: str) -> bool:
    """Provisioning status classification: ACTIVE → True, PENDING_* → False, anything else → error."""
    if obj_status == io.ACTIVE:
        return True
    if obj_status in io.PENDING:
        return False
    raise consistency(
        f"Octavia reports {what} in provisioning status {obj_status}; there is no safe next action: "
        "an operator must repair or delete it"
    )


def pool_protocol(listener: Listener) -> io.PoolProtocol:
    if listener.protocol == "UDP":
        return "UDP"
    return "PROXYV2" if listener.pool.proxy_protocol_v2 else "TCP"


def monitor_type(listener: Listener) -> io.MonitorType:
    return "UDP-CONNECT" if listener.protocol == "UDP" else "TCP"


def idle_timeout_ms(listener: Listener) -> int | None:
    """TCP idle timeouts (client and member data) in Octavia's milliseconds; None: not managed."""
    if listener.protocol != "TCP" or listener.idle_timeout_seconds is None:
        return None
    return listener.idle_timeout_seconds * 1000


def listener_drift(listener: Listener, pool_id: str, seen: io.ListenerView) -> dict[str, Any]:
    """The listener fields to update in place: allowed CIDRs, default pool, idle timeouts ({}: in sync)."""
    want_cidrs = sorted(listener.allowed_cidrs)
    timeout = idle_timeout_ms(listener)
    fields: dict[str, Any] = {}
    if sorted(seen.allowed_cidrs) != want_cidrs:
        fields["allowed_cidrs"] = want_cidrs
    if seen.default_pool_id != pool_id:
        fields["default_pool_id"] = pool_id
    if timeout is not None and (seen.timeout_client_data != timeout or seen.timeout_member_data != timeout):
        fields["timeout_client_data"] = fields["timeout_member_data"] = timeout
    return fields
