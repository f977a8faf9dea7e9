"""Put real OpenStack objects into failure states the way an operator (or a bad day) would.

Nova and Cinder have admin actions for it; Octavia has none, so its status is forced in its database.
All functions take an admin openstack.connection.Connection (cloud `osprov-admin`) where an API is used.
"""

from __future__ import annotations

import re
from typing import Any

from devenv import procs
from devenv.openstack.infra import mysql_exec

OCTAVIA_TABLES = ("load_balancer", "listener", "pool", "member", "health_monitor", "l7policy", "l7rule")
OCTAVIA_PROVISIONING = (
    "ACTIVE",
    "ERROR",
    "DELETED",
    "PENDING_CREATE",
    "PENDING_UPDATE",
    "PENDING_DELETE",
)
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def nova_reset_state(conn: Any, server_id: str, state: str = "error") -> None:
    """POST /servers/{id}/action os-resetState: vm_state becomes ERROR (or ACTIVE with state="active")."""
    if state not in ("error", "active"):
        raise ValueError("os-resetState accepts 'error' or 'active'")
    resp = conn.compute.post(f"/servers/{server_id}/action", json={"os-resetState": {"state": state}})
    resp.raise_for_status()


def nova_instance_actions(conn: Any, server_id: str) -> list[dict[str, Any]]:
    """Every accepted action (create, rebuild, …): evidence for "at most one rebuild" assertions."""
    resp = conn.compute.get(f"/servers/{server_id}/os-instance-actions")
    resp.raise_for_status()
    return list(resp.json()["instanceActions"])


def cinder_reset_status(conn: Any, volume_id: str, status: str = "error") -> None:
    """POST /volumes/{id}/action os-reset_status (admin): e.g. error, available, error_deleting."""
    resp = conn.block_storage.post(
        f"/volumes/{volume_id}/action", json={"os-reset_status": {"status": status}}
    )
    resp.raise_for_status()


def cinder_volume_actions(volume_id: str) -> list[int]:
    """The HTTP status of every POST /volumes/{id}/action cinder-api answered (its request log), oldest first:
    evidence for "exactly one extend" on a volume nothing else acts on (attach and detach go through
    /attachments, not this path)."""
    if not _UUID.match(volume_id):
        raise ValueError("volume_id must be a UUID")
    served = re.compile(rf'"POST /v3/[0-9a-f]+/volumes/{volume_id}/action HTTP/1\.1" status: (\d+)')
    text = procs.log_path("cinder-api").read_text(errors="replace")
    return [int(m.group(1)) for m in served.finditer(text)]


def nova_bdm_volume_size(server_id: str, volume_id: str) -> int | None:
    """Nova's block device mapping volume_size for the attachment (its cell database; no API shows it):
    what nova-compute recorded when it handled Cinder's volume-extended event. A test oracle only."""
    if not (_UUID.match(server_id) and _UUID.match(volume_id)):
        raise ValueError("server_id and volume_id must be UUIDs")
    out = mysql_exec(
        "SELECT volume_size FROM block_device_mapping WHERE deleted = 0 AND "
        f"instance_uuid = '{server_id}' AND volume_id = '{volume_id}';",
        "nova",
    ).split()
    return int(out[0]) if out and out[0] != "NULL" else None


def octavia_force_provisioning_status(object_id: str, status: str, table: str = "load_balancer") -> None:
    """UPDATE octavia.<table>.provisioning_status: ERROR, or a PENDING_* that never resolves."""
    if table not in OCTAVIA_TABLES:
        raise ValueError(f"table must be one of {OCTAVIA_TABLES}")
    if status not in OCTAVIA_PROVISIONING:
        raise ValueError(f"status must be one of {OCTAVIA_PROVISIONING}")
    if not _UUID.match(object_id):
        raise ValueError("object_id must be a UUID")
    mysql_exec(f"UPDATE {table} SET provisioning_status = '{status}' WHERE id = '{object_id}';", "octavia")


def octavia_provisioning_status(object_id: str, table: str = "load_balancer") -> str:
    if table not in OCTAVIA_TABLES or not _UUID.match(object_id):
        raise ValueError("bad table or id")
    return mysql_exec(f"SELECT provisioning_status FROM {table} WHERE id = '{object_id}';", "octavia").strip()
