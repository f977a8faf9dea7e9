"""What a LoadBalancer listener means in Octavia terms (pure functions).

Contract: ../shared/spec/octavia.md. Used by workflows/loadbalancer_decisions.py; no I/O, no workflow calls.
"""

from __future__ import annotations

from typing import Any

from osprov.api import octavia_io as io
from osprov.api.octavia import Listener


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
