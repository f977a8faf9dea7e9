"""Neutron (ML2, no agents: ports bind through port_binding) and Octavia (amphora provider, noop drivers)."""

from __future__ import annotations

from devenv import procs
from devenv.config import HOST, PORTS, Secrets, venv_bin
from devenv.openstack import octavia_vip, port_binding
from devenv.openstack.common import (
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
from devenv.openstack.install import certs_dir

OCTAVIA_PROCESSES = ("octavia-api", "octavia-worker")

# Neutron 29: the first port list of a fresh process fails ("Port has no attribute
# 'port_forwardings'") until every ORM model is imported and the mappers are configured.
NEUTRON_WSGI_WRAPPER = '''"""Neutron API for uwsgi with SQLAlchemy mappers configured before the first request."""
import importlib
import pkgutil

from neutron.wsgi.api import application  # noqa: F401

import neutron.db.models
from sqlalchemy.orm import configure_mappers

for _mod in pkgutil.walk_packages(neutron.db.models.__path__, "neutron.db.models."):
    importlib.import_module(_mod.name)
for _name in ("neutron.db.models_v2", "neutron.db.port_forwarding"):
    try:
        importlib.import_module(_name)
    except ImportError:
        pass
configure_mappers()
'''


def start_neutron(secrets: Secrets) -> None:
    port_binding.install()
    paste = copy_paste_ini("neutron", "api-paste.ini")
    neutron_conf = write_ini(
        "neutron",
        "neutron.conf",
        {
            "DEFAULT": {
                "use_stderr": True,
                "core_plugin": "ml2",
                "service_plugins": "router",
                "auth_strategy": "keystone",
                "transport_url": transport_url(secrets),
                "api_paste_config": str(paste),
                "allow_overlapping_ips": True,
                "notify_nova_on_port_status_changes": False,
                "notify_nova_on_port_data_changes": False,
                "dhcp_agent_notification": False,
            },
            "database": {"connection": db_url(secrets, "neutron")},
            "keystone_authtoken": authtoken(secrets, "neutron"),
            "nova": service_auth(secrets, "nova"),
            "oslo_concurrency": {"lock_path": lock_path("neutron")},
            "oslo_messaging_notifications": {"driver": "noop"},
        },
    )
    ml2_conf = write_ini(
        "neutron",
        "ml2_conf.ini",
        {
            "ml2": {
                "type_drivers": "flat,vxlan,vlan",
                "tenant_network_types": "vxlan",
                "mechanism_drivers": port_binding.DRIVER_NAME,
                "extension_drivers": "port_security",
            },
            "ml2_type_flat": {"flat_networks": "public"},
            "ml2_type_vxlan": {"vni_ranges": "1:10000"},
            # VLAN provider networks on physnet1 (the Network kind's allocator, issue 18): osprov gives every
            # segment in full, so Neutron only records the IDs (a physnet without a range is its whole
            # 1-4094 pool in this Neutron, allocated from only for a partial segment, which osprov never
            # sends; tenant networks stay vxlan).
            "ml2_type_vlan": {"network_vlan_ranges": "physnet1"},
        },
    )
    (etc_dir("neutron") / "osprov_neutron_wsgi.py").write_text(NEUTRON_WSGI_WRAPPER)
    procs.run(
        "neutron-db-manage",
        [
            venv_bin("neutron-db-manage"),
            "--config-file",
            neutron_conf,
            "--config-file",
            ml2_conf,
            "upgrade",
            "heads",
        ],
    )
    argv = uwsgi_argv(PORTS.neutron, "osprov_neutron_wsgi:application", processes=2, threads=1)
    procs.start(
        "neutron",
        [*argv, "--pythonpath", etc_dir("neutron")],
        env={
            "OS_NEUTRON_CONFIG_DIR": str(etc_dir("neutron")),
            "OS_NEUTRON_CONFIG_FILES": "neutron.conf;ml2_conf.ini",
        },
    )
    wait_http("neutron", PORTS.neutron)


def octavia_conf(secrets: Secrets) -> str:
    certs = certs_dir()
    # Octavia insists on exactly 32 characters for this key; it only matters to the noop amphora.
    server_key = (secrets.service_password * 3)[:32]
    conf = write_ini(
        "octavia",
        "octavia.conf",
        {
            "DEFAULT": {"use_stderr": True, "transport_url": transport_url(secrets)},
            "api_settings": {
                "bind_host": HOST,
                "bind_port": PORTS.octavia,
                "auth_strategy": "keystone",
                "default_provider_driver": "amphora",
                "enabled_provider_drivers": "amphora:The Octavia Amphora driver.",
            },
            "database": {"connection": db_url(secrets, "octavia")},
            "keystone_authtoken": authtoken(secrets, "octavia"),
            "service_auth": service_auth(secrets, "octavia"),
            # The noop provider leaves LBs in PENDING_CREATE forever: amphora provider + noop drivers.
            "controller_worker": {
                "amphora_driver": "amphora_noop_driver",
                "compute_driver": "compute_noop_driver",
                # noop, except that VIPs are real Neutron ports (floating IPs can attach to them)
                "network_driver": octavia_vip.DRIVER_NAME,
                "image_driver": "image_noop_driver",
                "volume_driver": "volume_noop_driver",
                "amp_image_tag": "amphora",
                "amp_flavor_id": "1",
                "amp_boot_network_list": "00000000-0000-0000-0000-000000000001",
                "loadbalancer_topology": "SINGLE",
                "client_ca": str(certs / "ca.cert.pem"),
                "workers": 1,
            },
            "task_flow": {"jobboard_enabled": False},
            "certificates": {
                "cert_generator": "local_cert_generator",
                "ca_certificate": str(certs / "ca.cert.pem"),
                "ca_private_key": str(certs / "ca.key.pem"),
                "ca_private_key_passphrase": (certs / "ca_passphrase").read_text().strip(),
                "server_certs_key_passphrase": server_key,
            },
            "haproxy_amphora": {
                "client_cert": str(certs / "client.cert-and-key.pem"),
                "server_ca": str(certs / "ca.cert.pem"),
            },
            "health_manager": {"heartbeat_key": secrets.service_password},
            "oslo_messaging": {"topic": "octavia_prov"},
            "oslo_concurrency": {"lock_path": lock_path("octavia")},
        },
    )
    return str(conf)


def start_octavia(secrets: Secrets) -> None:
    octavia_vip.install()
    conf = octavia_conf(secrets)
    procs.run("octavia-db-manage", [venv_bin("octavia-db-manage"), "--config-file", conf, "upgrade", "head"])
    # The API under uwsgi, as Octavia asks outside testing: `octavia-api` is wsgiref's simple_server,
    # one request at a time, so parallel reads queued behind each other (docs/loadbalancer.md).
    env = octavia_vip.worker_env()
    api = uwsgi_argv(PORTS.octavia, "octavia.wsgi.api:application", processes=2, threads=2)
    procs.start("octavia-api", [*api, "--pyargv", f"--config-file {conf}"], env=env)
    procs.start("octavia-worker", [venv_bin("octavia-worker"), "--config-file", conf], env=env)
    wait_http("octavia", PORTS.octavia, process="octavia-api")
