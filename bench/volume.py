"""Benchmark: Volume apply → Provisioned and delete → gone, osprov against a plain openstacksdk script.

Both sides run in the same process run, side by side, against the same local stack and the same Keystone
project, for 1 and for 20 volumes. The plain script makes the calls osprov's activities make (exact-name
lookup, create, polling reads until available; lookup, delete, polling reads until gone), with as many
threads as the worker runs activities and a fixed read interval. The ratio osprov / plain says what the
Kubernetes round trip, Temporal and the durable-timer waits add to what Cinder itself takes.

    .venv/bin/python -m bench.volume [--counts 1 20] [--poll 0.5]

Needs the full local stack (`osprov dev up`); it starts its own worker and bridge for a fresh
namespace and removes what it created in Cinder.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openstack.connection

from bench.observe import watch_until
from bench.report import Figure, print_figures
from devenv import stack
from devenv.testing import StackEnv
from osprov.api.cinder_io import volume_name
from osprov.api.registry import kind_info
from tests.support.osprov import Osprov, admin_connection, ensure_crd, run_osprov

THREADS = 4  # run_osprov starts the worker with OSPROV_ACTIVITY_THREADS=4


@dataclass
class Timing:
    apply_s: float
    delete_s: float


# ----- osprov ------------------------------------------------------------------------------------


def _volumes(o: Osprov) -> list[dict[str, Any]]:
    info = kind_info("Volume")
    listed = o.custom.list_namespaced_custom_object(info.group, info.version, o.namespace, info.plural)
    return list(listed["items"])  # type: ignore[index]


def _provisioned(obj: dict[str, Any]) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Available" and c["reason"] == "Provisioned" for c in conditions)


def run_osprov_side(o: Osprov, admin: openstack.connection.Connection, project: str, count: int) -> Timing:
    names = [f"bench-{uuid.uuid4().hex[:6]}-{i}" for i in range(count)]
    spec = {"project": {"name": project, "domain": "Default"}, "size": 1, "deletionPolicy": "delete"}
    start = time.monotonic()
    for name in names:
        o.apply("Volume", name, spec)
    watch_until(
        o,
        "Volume",
        lambda volumes: sum(_provisioned(volumes[n]) for n in names if n in volumes) == count,
        "osprov volumes provisioned",
    )
    applied = time.monotonic() - start
    uids = [v["metadata"]["uid"] for v in _volumes(o) if v["metadata"]["name"] in names]
    start = time.monotonic()
    for name in names:
        o.delete("Volume", name)
    watch_until(o, "Volume", lambda volumes: not any(n in volumes for n in names), "resources gone")
    deleted = time.monotonic() - start
    leftovers = [u for u in uids if _named(admin, volume_name(u))]
    if leftovers:
        raise AssertionError(f"{len(leftovers)} Cinder volumes left after their resources were deleted")
    return Timing(applied, deleted)


# ----- the plain openstacksdk script ------------------------------------------------------------


def _named(conn: openstack.connection.Connection, name: str) -> list[Any]:
    return [v for v in conn.block_storage.volumes(all_projects=True, name=name) if v.name == name]


def _plain_create(conn: openstack.connection.Connection, name: str, poll_s: float) -> str:
    found = [v for v in conn.block_storage.volumes(details=True) if v.name == name]
    volume = found[0] if found else conn.block_storage.create_volume(name=name, size=1)
    while (status := conn.block_storage.get_volume(volume.id).status) != "available":
        if status.startswith("error"):
            raise RuntimeError(f"volume {volume.id} is {status}")
        time.sleep(poll_s)
    return str(volume.id)


def _plain_delete(conn: openstack.connection.Connection, name: str, poll_s: float) -> None:
    found = [v for v in conn.block_storage.volumes(details=True) if v.name == name]
    for volume in found:
        conn.block_storage.delete_volume(volume.id)
    while [v for v in conn.block_storage.volumes(details=True) if v.name == name]:
        time.sleep(poll_s)


def run_plain_side(
    connect: Callable[[], openstack.connection.Connection], count: int, poll_s: float
) -> Timing:
    names = [volume_name(str(uuid.uuid4())) for _ in range(count)]
    # One connection per thread (a keystoneauth session is not documented as thread-safe), made up front.
    with ThreadPoolExecutor(THREADS) as pool:
        conns = list(pool.map(lambda _: connect(), range(THREADS)))

        def each(fn: Callable[[openstack.connection.Connection, str, float], Any]) -> float:
            start = time.monotonic()
            futures = [pool.submit(fn, conns[i % THREADS], n, poll_s) for i, n in enumerate(names)]
            for f in futures:
                f.result()
            return time.monotonic() - start

        return Timing(each(_plain_create), each(_plain_delete))


# ----- main --------------------------------------------------------------------------------------


def measure(counts: list[int], poll: float = 0.5) -> list[Figure]:
    """P4 (Volume): apply -> Provisioned for each count, against the plain script; delete reported too."""
    env = StackEnv.from_env(stack.load_env())
    if not env.full:
        raise SystemExit("needs the full local stack: osprov dev up")
    os.environ.update(env.env)
    ensure_crd(env, "Volume")
    admin = admin_connection(env)
    identity: Any = admin.identity  # v3
    project = identity.create_project(name=f"bench-{uuid.uuid4().hex[:8]}", domain_id="default")
    user = identity.find_user("admin", domain_id="default", ignore_missing=False)
    role = identity.find_role("member", ignore_missing=False)
    identity.assign_project_role_to_user(project.id, user, role)

    def connect() -> openstack.connection.Connection:
        return admin.connect_as_project({"id": project.id})

    rows: list[tuple[int, Timing, Timing]] = []
    logs = Path(tempfile.mkdtemp(prefix="bench-volume-"))  # kept: the worker's log explains outliers
    gen = run_osprov(env, logs)
    o = next(gen)
    try:
        # Warm-up (token, endpoint discovery, worker start) outside the measurements, on both sides.
        run_osprov_side(o, admin, str(project.name), 1)
        run_plain_side(connect, 1, poll)
        for count in counts:
            plain = run_plain_side(connect, count, poll)
            ours = run_osprov_side(o, admin, str(project.name), count)
            rows.append((count, ours, plain))
    finally:
        next(gen, None)  # resumes run_osprov after its yield: it stops the worker and bridge
    figures = []
    for count, ours, plain in rows:
        for phase, a, b in (
            ("apply -> Provisioned", ours.apply_s, plain.apply_s),
            ("delete -> gone", ours.delete_s, plain.delete_s),
        ):
            f = Figure(
                "P4",
                f"{count} Volume(s) {phase}",
                round(a, 2),
                round(b, 2),
                "ratio <= 1.3",
                baseline=f"plain openstacksdk script ({THREADS} threads, reads every {poll} s)",
                extra={"worker log": str(logs)},
            ).judged(1.3)
            figures.append(f)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[1, 20])
    parser.add_argument("--poll", type=float, default=0.5, help="read interval of the plain script (s)")
    args = parser.parse_args()
    print_figures(measure(args.counts, args.poll))


if __name__ == "__main__":
    main()
