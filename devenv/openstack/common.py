"""Helpers shared by the service modules: config files, DB URLs, uwsgi command lines."""

from __future__ import annotations

import sysconfig
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
    # uwsgi's --http11-socket binds a keep-alive connection to a worker thread for the connection's
    # lifetime: a few pooled client connections then starve everyone else. Plain --http-socket resets
    # pooled connections at random unless clients are told not to reuse them, hence Connection: close.
    return [
        venv_bin("uwsgi"),
        "--master",
        "--die-on-term",
        "--need-app",
        "--lazy-apps",
        "--enable-threads",
        "--http-socket",
        f"{HOST}:{port}",
        "--add-header",
        "Connection: close",
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


def copy_paste_ini(service: str, filename: str) -> Path:
    """Copy a paste.deploy file shipped in the venv's etc/ next to the generated config."""
    source = venv_bin("python").parent.parent / "etc" / service / filename
    target = etc_dir(service) / filename
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source.read_text())
    return target


def lock_path(service: str) -> str:
    path = state_dir() / service / "lock"
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


def wait_http(
    service: str, port: int, path: str = "/", timeout: float = 90, process: str | None = None
) -> None:
    """Wait until an API answers its unauthenticated version document (any non-5xx status)."""
    from devenv import procs

    url = f"http://{HOST}:{port}{path}"
    procs.wait_until(
        lambda: 0 < procs.http_status(url) < 500, timeout, f"{service} at {url}", process or service
    )


def site_packages() -> Path:
    """purelib of the OpenStack venv: <venv>/lib/pythonX.Y/site-packages."""
    version = sysconfig.get_python_version()
    return venv_bin("python").parent.parent / "lib" / f"python{version}" / "site-packages"


def install_plugin(module: str, source: str, entry_points: str) -> None:
    """Write a one-module plugin into the OpenStack venv with a minimal dist-info.

    OpenStack services find drivers only through stevedore entry points, so the dist-info is what
    makes `module` loadable by name (idempotent: files are rewritten only when they differ)."""
    site = site_packages()
    dist = site / f"{module}-1.0.dist-info"
    files = {
        site / f"{module}.py": source,
        dist / "METADATA": f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 1.0\n",
        dist / "entry_points.txt": entry_points,
        dist / "top_level.txt": f"{module}\n",
    }
    for path, text in files.items():
        if not path.exists() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
