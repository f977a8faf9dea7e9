"""Placement and Nova (API on uwsgi, conductor, scheduler, compute with a fake virt driver)."""

from __future__ import annotations

from devenv import procs
from devenv.config import HOST, PORTS, Secrets, state_dir, venv_bin
from devenv.faults import slow_driver
from devenv.openstack.common import (
    REGION,
    authtoken,
    copy_paste_ini,
    db_url,
    etc_dir,
    lock_path,
    service_auth,
    transport_url,
    uwsgi_argv,
    wait_http,
    write_ini,
)

NOVA_PROCESSES = ("nova-api", "nova-conductor", "nova-scheduler", "nova-compute")
COMPUTE_HOST = "osprov-compute"


def start_placement(secrets: Secrets) -> None:
    conf = write_ini(
        "placement",
        "placement.conf",
        {
            "DEFAULT": {"use_stderr": True},
            "api": {"auth_strategy": "keystone"},
            "placement_database": {"connection": db_url(secrets, "placement")},
            "keystone_authtoken": authtoken(secrets, "placement"),
        },
    )
    procs.run("placement-manage", [venv_bin("placement-manage"), "--config-file", conf, "db", "sync"])
    procs.start(
        "placement",
        uwsgi_argv(PORTS.placement, "placement.wsgi.api:application", processes=1, threads=4),
        env={"OS_PLACEMENT_CONFIG_DIR": str(etc_dir("placement"))},
    )
    wait_http("placement", PORTS.placement)


def nova_conf(secrets: Secrets) -> str:
    paste = copy_paste_ini("nova", "api-paste.ini")
    nova_state = state_dir() / "nova"
    (nova_state / "instances").mkdir(parents=True, exist_ok=True)
    keystone_section = {**service_auth(secrets, "nova")}
    conf = write_ini(
        "nova",
        "nova.conf",
        {
            "DEFAULT": {
                "use_stderr": True,
                "transport_url": transport_url(secrets),
                # The slowable subclass of fake.FakeDriverWithoutFakeNodes (see devenv.faults.slow_driver).
                "compute_driver": slow_driver.COMPUTE_DRIVER,
                "state_path": str(nova_state),
                "instances_path": str(nova_state / "instances"),
                "my_ip": HOST,
                "host": COMPUTE_HOST,
                "heal_instance_info_cache_interval": -1,
                "vif_plugging_is_fatal": False,
                "vif_plugging_timeout": 0,
                # One compute host: a resize (Server spec.flavor) can only land on the host it left.
                "allow_resize_to_same_host": True,
            },
            "api": {"auth_strategy": "keystone"},
            "wsgi": {"api_paste_config": str(paste)},
            "api_database": {"connection": db_url(secrets, "nova_api")},
            "database": {"connection": db_url(secrets, "nova")},
            "keystone_authtoken": authtoken(secrets, "nova"),
            # Explicit endpoints: tests that publish Endpoint CRs into this Keystone (real service
            # types in RegionOne) must not be able to redirect Nova's own calls.
            "placement": {**keystone_section, "endpoint_override": f"http://{HOST}:{PORTS.placement}"},
            "neutron": {**keystone_section, "endpoint_override": f"http://{HOST}:{PORTS.neutron}"},
            "cinder": {
                **keystone_section,
                "os_region_name": REGION,
                "endpoint_template": f"http://{HOST}:{PORTS.cinder}/v3/%(project_id)s",
            },
            "glance": {"region_name": REGION, "endpoint_override": f"http://{HOST}:{PORTS.glance}"},
            "service_user": {**keystone_section, "send_service_user_token": True},
            "conductor": {"workers": 1},
            "scheduler": {"workers": 1},
            "vnc": {"enabled": False},
            "quota": {"instances": -1, "cores": -1, "ram": -1},
            "oslo_concurrency": {"lock_path": lock_path("nova")},
            "oslo_messaging_notifications": {"driver": "noop"},
        },
    )
    return str(conf)


def _manage(conf: str, *args: str, ok_codes: tuple[int, ...] = (0,)) -> None:
    procs.run("nova-manage", [venv_bin("nova-manage"), "--config-file", conf, *args], ok_codes=ok_codes)


def setup_nova(secrets: Secrets) -> str:
    conf = nova_conf(secrets)
    _manage(conf, "api_db", "sync")
    # Without --database_connection the cell0 URL is derived from [database] (nova -> nova_cell0),
    # which keeps the DB password out of argv.
    _manage(conf, "cell_v2", "map_cell0")
    _manage(conf, "cell_v2", "create_cell", "--name", "cell1", ok_codes=(0, 2))  # 2: already exists
    _manage(conf, "db", "sync")
    return conf


def start_nova_processes(conf: str) -> None:
    procs.start(
        "nova-api",
        uwsgi_argv(PORTS.nova, "nova.wsgi.osapi_compute:application", processes=2, threads=1),
        env={"OS_NOVA_CONFIG_DIR": str(etc_dir("nova"))},
    )
    for binary in ("nova-conductor", "nova-scheduler"):
        procs.start(binary, [venv_bin(binary), "--config-file", conf])
    start_nova_compute(conf)
    wait_http("nova", PORTS.nova, "/v2.1/", process="nova-api")


def start_nova_compute(conf: str) -> None:
    procs.start(
        "nova-compute",
        [venv_bin("nova-compute"), "--config-file", conf],
        env={slow_driver.DELAY_FILE_ENV: str(slow_driver.delay_file())},
    )


def wait_hypervisor(secrets: Secrets, conf: str, timeout: float = 300) -> None:
    """Map the compute host into cell1 until Nova lists it as an enabled, up hypervisor."""
    from devenv.openstack.catalog import admin_session

    sess = admin_session(secrets)
    url = f"http://{HOST}:{PORTS.nova}/v2.1/os-hypervisors/detail"

    services_url = f"http://{HOST}:{PORTS.nova}/v2.1/os-services?binary=nova-compute"
    mapped = False

    def hypervisor_up() -> bool:
        nonlocal mapped
        for proc in NOVA_PROCESSES:  # conductor/scheduler die on start errors: fail fast, with their log
            if not procs.is_running(proc):
                raise procs.StackError(f"{proc} exited during start; log tail:\n{procs.log_tail(proc)}")
        if not mapped:
            # os-hypervisors lists a node only once its host is mapped to a cell, and the mapping needs the
            # compute service registered first: map once the service shows up (not on every poll).
            if not sess.get(services_url).json()["services"]:
                return False
            _manage(conf, "cell_v2", "discover_hosts")
            mapped = True
        found = sess.get(url, headers={"OpenStack-API-Version": "compute 2.53"}).json()["hypervisors"]
        return any(h["state"] == "up" and h["status"] == "enabled" for h in found)

    procs.wait_until(hypervisor_up, timeout, "the fake hypervisor to be up", "nova-compute", interval=0.5)
