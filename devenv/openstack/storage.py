"""Glance (file store, uwsgi) and Cinder (fake backend: API, scheduler, volume)."""

from __future__ import annotations

from devenv import procs
from devenv.config import HOST, PORTS, Secrets, state_dir, venv_bin
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


def start_glance(secrets: Secrets) -> None:
    data = state_dir() / "glance"
    paste = copy_paste_ini("glance", "glance-api-paste.ini")
    conf = write_ini(
        "glance",
        "glance-api.conf",
        {
            "DEFAULT": {"use_stderr": True, "enabled_backends": "fs:file", "workers": 1},
            "database": {"connection": db_url(secrets, "glance")},
            "glance_store": {"default_backend": "fs"},
            "fs": {"filesystem_store_datadir": str(data / "images")},
            "os_glance_staging_store": {"filesystem_store_datadir": str(data / "staging")},
            "os_glance_tasks_store": {"filesystem_store_datadir": str(data / "tasks")},
            "keystone_authtoken": authtoken(secrets, "glance"),
            "paste_deploy": {"flavor": "keystone", "config_file": str(paste)},
            "oslo_concurrency": {"lock_path": lock_path("glance")},
            "oslo_messaging_notifications": {"driver": "noop"},
        },
    )
    procs.run("glance-manage", [venv_bin("glance-manage"), "--config-file", conf, "db_sync"])
    procs.start(
        "glance",
        uwsgi_argv(PORTS.glance, "glance.wsgi.api:application", processes=2, threads=1),
        env={"OS_GLANCE_CONFIG_DIR": str(etc_dir("glance"))},
    )
    wait_http("glance", PORTS.glance)


def cinder_conf(secrets: Secrets) -> str:
    paste = copy_paste_ini("cinder", "api-paste.ini")
    conf = write_ini(
        "cinder",
        "cinder.conf",
        {
            "DEFAULT": {
                "use_stderr": True,
                "transport_url": transport_url(secrets),
                "auth_strategy": "keystone",
                "enabled_backends": "fake",
                "default_volume_type": "fake",
                "osapi_volume_listen": HOST,
                "osapi_volume_listen_port": PORTS.cinder,
                "osapi_volume_workers": 1,
                "api_paste_config": str(paste),
                "state_path": str(state_dir() / "cinder"),
                "my_ip": HOST,
                "host": "osprov-volume",
                "glance_api_servers": f"http://{HOST}:{PORTS.glance}",
                "quota_volumes": -1,
                "quota_gigabytes": -1,
                "quota_snapshots": -1,
                "quota_backups": -1,
                "quota_backup_gigabytes": -1,
            },
            "database": {"connection": db_url(secrets, "cinder")},
            "keystone_authtoken": authtoken(secrets, "cinder"),
            # Deleting an attachment calls Nova: cinder needs credentials and the compute endpoint.
            "nova": {**service_auth(secrets, "cinder"), "interface": "public", "region_name": REGION},
            "fake": {
                "volume_driver": "cinder.tests.fake_driver.FakeLoggingVolumeDriver",
                "volume_backend_name": "fake",
            },
            "oslo_concurrency": {"lock_path": lock_path("cinder")},
            "oslo_messaging_notifications": {"driver": "noop"},
        },
    )
    return str(conf)


def start_cinder(secrets: Secrets) -> None:
    conf = cinder_conf(secrets)
    procs.run("cinder-manage", [venv_bin("cinder-manage"), "--config-file", conf, "db", "sync"])
    for binary in ("cinder-api", "cinder-scheduler", "cinder-volume"):
        procs.start(binary, [venv_bin(binary), "--config-file", conf])
    wait_http("cinder", PORTS.cinder, process="cinder-api")


CINDER_PROCESSES = ("cinder-api", "cinder-scheduler", "cinder-volume")
