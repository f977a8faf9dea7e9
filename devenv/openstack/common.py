"""Helpers shared by the service modules: config files, DB URLs, uwsgi command lines."""

from __future__ import annotations

from pathlib import Path

from devenv.config import HOST, PORTS, Secrets, state_dir, venv_bin, write_private

Ini = dict[str, dict[str, str | int | bool]]

REGION = "RegionOne"


def etc_dir(service: str) -> Path:
    return state_dir() / "etc" / service


def render_ini(sections: Ini) -> str:
    out: list[str] = []
    for section, values in sections.items():
        out.append(f"[{section}]")
        for key, value in values.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            out.append(f"{key} = {text}")
        out.append("")
    return "\n".join(out)


def write_ini(service: str, filename: str, sections: Ini) -> Path:
    path = etc_dir(service) / filename
    write_private(path, render_ini(sections))
    return path


def db_url(secrets: Secrets, database: str) -> str:
    return f"mysql+pymysql://osprov:{secrets.db_password}@{HOST}:{PORTS.mariadb}/{database}?charset=utf8"


def transport_url(secrets: Secrets) -> str:
    return f"rabbit://osprov:{secrets.rabbit_password}@{HOST}:{PORTS.rabbitmq}/"


def keystone_url() -> str:
    return f"http://{HOST}:{PORTS.keystone}"


def service_auth(secrets: Secrets, username: str) -> dict[str, str | int | bool]:
    """A keystoneauth password section for a service user in project 'service'."""
    return {
        "auth_type": "password",
        "auth_url": f"{keystone_url()}/v3",
        "username": username,
        "password": secrets.service_password,
        "project_name": "service",
        "user_domain_name": "Default",
        "project_domain_name": "Default",
        "region_name": REGION,
    }


def authtoken(secrets: Secrets, username: str) -> dict[str, str | int | bool]:
    section = service_auth(secrets, username)
    section.update({"www_authenticate_uri": f"{keystone_url()}/v3", "service_token_roles_required": True})
    del section["region_name"]
    return section


def uwsgi_argv(port: int, module: str, processes: int = 1, threads: int = 2) -> list[str | Path]:
    # --http11-socket: plain --http-socket resets pooled keep-alive connections at random.
    return [
        venv_bin("uwsgi"),
        "--master",
        "--die-on-term",
        "--need-app",
        "--lazy-apps",
        "--enable-threads",
        "--http11-socket",
        f"{HOST}:{port}",
        "--processes",
        str(processes),
        "--threads",
        str(threads),
        "--buffer-size",
        "65535",
        "--hook-master-start",
        "unix_signal:15 gracefully_kill_them_all",
        "--module",
        module,
        "--home",
        str(venv_bin("uwsgi").parent.parent),
    ]
