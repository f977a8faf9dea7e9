"""`osprov dev install`: Debian servers, the pinned OpenStack virtualenv, Octavia certificates.

Idempotent and fast when already installed: each step checks a marker before doing anything.
Everything goes under install_dir() (git-ignored `.state/install/` by default), kept apart from the
project's own .venv.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from devenv.config import install_dir, write_private

APT_PACKAGES = ("mariadb-server", "mariadb-client", "rabbitmq-server", "openssl", "gcc", "libc6-dev")

# Pinned: the workarounds in the stack are specific to these releases (see spec/minicloud.md).
OPENSTACK_REQUIREMENTS = (
    "keystone==30.0.0",
    "glance==33.0.0",
    "openstack-placement==16.0.0",
    "nova==34.0.0",
    "neutron==29.0.0",
    "cinder==29.0.0",
    "octavia==19.0.0",
    "python-openstackclient",
    "python-octaviaclient",
    "openstacksdk",
    "fixtures",
    "uwsgi",
    "PyMySQL",
)


def venv_dir() -> Path:
    return install_dir() / "openstack-venv"


def certs_dir() -> Path:
    return install_dir() / "octavia-certs"


def _step(what: str, started: float) -> None:
    print(f"  {what} ({time.monotonic() - started:.1f}s)", flush=True)


def apt_packages_missing() -> list[str]:
    missing = []
    for pkg in APT_PACKAGES:
        result = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True, check=False
        )
        if "install ok installed" not in result.stdout:
            missing.append(pkg)
    return missing


def install_apt() -> None:
    missing = apt_packages_missing()
    if not missing:
        return
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    # The stack starts its own MariaDB/RabbitMQ; keep the packages' system services from starting.
    policy = Path("/usr/sbin/policy-rc.d")
    added_policy = False
    if os.geteuid() == 0 and not policy.exists():
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
        added_policy = True
    try:
        subprocess.run([*sudo, "apt-get", "update", "-q"], env=env, check=True)
        subprocess.run(
            [*sudo, "apt-get", "install", "-y", "-q", "--no-install-recommends", *missing],
            env=env,
            check=True,
        )
    finally:
        if added_policy:
            policy.unlink()


def install_venv() -> None:
    marker = venv_dir() / "osprov-requirements.txt"
    wanted = "\n".join(OPENSTACK_REQUIREMENTS) + "\n"
    if marker.exists() and marker.read_text() == wanted and (venv_dir() / "bin" / "uwsgi").exists():
        return
    base_python = getattr(sys, "_base_executable", sys.executable)
    if not (venv_dir() / "bin" / "python").exists():
        subprocess.run([base_python, "-m", "venv", str(venv_dir())], check=True)
    pip = [str(venv_dir() / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "install", "--upgrade", "pip"], check=True)
    subprocess.run([*pip, "install", *OPENSTACK_REQUIREMENTS], check=True)
    marker.write_text(wanted)


def install_octavia_certs() -> None:
    """A CA with an *encrypted* key (Octavia's local cert generator insists) and a controller client cert."""
    d = certs_dir()
    if (d / "client.cert-and-key.pem").exists():
        return
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    passphrase = d / "ca_passphrase"
    if not passphrase.exists():
        import secrets

        write_private(passphrase, secrets.token_hex(16))

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    pw = f"file:{passphrase}"
    openssl("genrsa", "-aes256", "-passout", pw, "-out", "ca.key.pem", "2048")
    openssl(
        "req", "-x509", "-new", "-key", "ca.key.pem", "-passin", pw, "-days", "3650",
        "-subj", "/CN=osprov-local-octavia-ca", "-out", "ca.cert.pem",
    )  # fmt: skip
    openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "client.key.pem",
        "-subj", "/CN=octavia-controller", "-out", "client.csr",
    )  # fmt: skip
    openssl(
        "x509", "-req", "-in", "client.csr", "-CA", "ca.cert.pem", "-CAkey", "ca.key.pem", "-passin", pw,
        "-CAcreateserial", "-days", "3650", "-out", "client.cert.pem",
    )  # fmt: skip
    combined = (d / "client.cert.pem").read_text() + (d / "client.key.pem").read_text()
    write_private(d / "client.cert-and-key.pem", combined)
    for name in ("ca.key.pem", "client.key.pem"):
        (d / name).chmod(0o600)


def install() -> None:
    started = time.monotonic()
    install_dir().mkdir(parents=True, exist_ok=True)
    if shutil.which("dpkg-query") is None:
        raise SystemExit("osprov dev install needs a Debian-based system (dpkg/apt)")
    install_apt()
    _step("Debian packages: " + ", ".join(APT_PACKAGES), started)
    install_venv()
    _step(f"OpenStack virtualenv: {venv_dir()}", started)
    install_octavia_certs()
    _step(f"Octavia certificates: {certs_dir()}", started)
    from devenv.faults import slow_driver

    slow_driver.install()
    _step("slow fake virt driver in nova.virt", started)
    from devenv.openstack import octavia_vip

    octavia_vip.install()
    _step("Octavia network driver with real VIP ports", started)
    from devenv.openstack import port_binding

    port_binding.install()
    _step("Neutron ML2 driver that binds ports without agents", started)
