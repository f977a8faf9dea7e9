"""Where the local stack keeps its files and which loopback ports it uses.

Ports are deliberately non-default (3xxxx) so a system MariaDB/RabbitMQ or a developer's own
Temporal on the default ports can never clash with the stack.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"


@dataclass(frozen=True)
class Ports:
    """Loopback ports; OSPROV_PORT_OFFSET shifts them all (a second, isolated stack for lifecycle tests)."""

    mariadb: int = 33306
    epmd: int = 34369
    rabbitmq: int = 35672
    rabbitmq_dist: int = 35673
    keystone: int = 35000
    glance: int = 39292
    placement: int = 38778
    nova: int = 38774
    neutron: int = 39696
    cinder: int = 38776
    octavia: int = 39876
    temporal: int = 37233
    temporal_ui: int = 38233
    temporal_http: int = 37243
    temporal_metrics: int = 37244
    kube: int = 36443
    codec: int = 38081


def _ports_from_env() -> Ports:
    offset = int(os.environ.get("OSPROV_PORT_OFFSET", "0"))
    base = Ports()
    return Ports(**{name: port + offset for name, port in base.__dict__.items()})


PORTS = _ports_from_env()


def state_dir() -> Path:
    """The runtime state dir: `.state/` at the repo root unless OSPROV_STATE_DIR is set."""
    return Path(os.environ.get("OSPROV_STATE_DIR") or REPO_ROOT / ".state").resolve()


def install_dir() -> Path:
    """Installed software (OpenStack venv, Octavia CA). Survives `down --wipe`."""
    return Path(os.environ.get("OSPROV_INSTALL_DIR") or REPO_ROOT / ".state" / "install").resolve()


def venv_bin(name: str) -> Path:
    return install_dir() / "openstack-venv" / "bin" / name


def project_bin(name: str) -> Path:
    return REPO_ROOT / ".venv" / "bin" / name


@dataclass
class Secrets:
    """Passwords generated once per state dir; stored mode 0600, never logged."""

    admin_password: str = field(default_factory=lambda: secrets.token_urlsafe(18))
    service_password: str = field(default_factory=lambda: secrets.token_urlsafe(18))
    db_password: str = field(default_factory=lambda: secrets.token_urlsafe(18))
    rabbit_password: str = field(default_factory=lambda: secrets.token_urlsafe(18))
    # AES-256 key of the payload codec (osprov/codec.py): worker, bridge and the UI's codec server share it.
    codec_key: str = field(default_factory=lambda: base64.b64encode(secrets.token_bytes(32)).decode())

    def __repr__(self) -> str:  # keep values out of tracebacks and logs
        return "Secrets(<redacted>)"


def load_secrets() -> Secrets:
    path = state_dir() / "secrets.json"
    stored = json.loads(path.read_text()) if path.exists() else None
    created = Secrets(**stored) if stored else Secrets()
    if stored is not None and set(stored) == set(created.__dict__):
        return created
    # New or grown (a field added since): write it back, so every later load sees the same values.
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(created.__dict__, fh)
    return created


def write_private(path: Path, text: str) -> None:
    """Write a file that may hold credentials (config files, clouds.yaml) with mode 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
