"""The OpenStack services beyond Keystone (Glance, Placement, Nova, Neutron, Cinder, Octavia).

Each Service.start configures, syncs its schema, starts its processes and waits until healthy; up()
runs them in parallel (the DB syncs dominate) after the catalog exists, then creates shared resources.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from devenv import procs
from devenv.config import HOST, PORTS, Secrets
from devenv.faults import slow_driver
from devenv.openstack import catalog, compute, network, storage
from devenv.openstack.common import wait_http
from devenv.procs import Service

STARTS_IN_PARALLEL = ("placement", "glance", "neutron", "nova", "cinder", "octavia")


def _start_nova(secrets: Secrets) -> None:
    slow_driver.install()
    conf = compute.setup_nova(secrets)
    wait_http("placement", PORTS.placement, timeout=180)  # nova-compute registers in Placement at start
    compute.start_nova_processes(conf)
    compute.wait_hypervisor(secrets, conf)


def _start_cinder(secrets: Secrets) -> None:
    storage.start_cinder(secrets)
    sess = catalog.admin_session(secrets)
    url = f"http://{HOST}:{PORTS.cinder}/v3/{sess.get_project_id()}/os-services?binary=cinder-volume"

    def volume_service_up() -> bool:
        return any(s["state"] == "up" for s in sess.get(url).json()["services"])

    procs.wait_until(volume_service_up, 90, "cinder-volume to report up", "cinder-volume", interval=1)


def services() -> list[Service]:
    base = f"http://{HOST}"
    return [
        Service("placement", ("placement",), compute.start_placement, f"{base}:{PORTS.placement}"),
        Service("glance", ("glance",), storage.start_glance, f"{base}:{PORTS.glance}"),
        Service("neutron", ("neutron",), network.start_neutron, f"{base}:{PORTS.neutron}"),
        Service("nova", compute.NOVA_PROCESSES, _start_nova, f"{base}:{PORTS.nova}/v2.1"),
        Service("cinder", storage.CINDER_PROCESSES, _start_cinder, f"{base}:{PORTS.cinder}/v3"),
        Service("octavia", network.OCTAVIA_PROCESSES, network.start_octavia, f"{base}:{PORTS.octavia}"),
    ]


def up(secrets: Secrets, ensure: Callable[[str], None]) -> None:
    catalog.bootstrap_catalog(secrets)
    with ThreadPoolExecutor(max_workers=len(STARTS_IN_PARALLEL)) as pool:
        futures = [pool.submit(ensure, name) for name in STARTS_IN_PARALLEL]
        errors = [exc for fut in futures if (exc := fut.exception()) is not None]
    if errors:
        raise errors[0]
    catalog.bootstrap_resources(secrets)
