"""`osprov dev down` leaves none of its processes behind and a second `up` works.

Runs an isolated identity-only stack (own state dir, ports shifted by OSPROV_PORT_OFFSET) so it never
disturbs the shared stack other tests use.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import openstack
import pytest
from openstack.config.loader import OpenStackConfig

from devenv import procs

pytestmark = pytest.mark.stack

OSPROV = [sys.executable, "-m", "osprov.cli", "dev"]
PORT_OFFSET = "200"
RESTART_KEYSTONE = """
from devenv import procs, stack
from devenv.config import PORTS
stack.stop_service("keystone")
print("up" if procs.tcp_open(PORTS.keystone) else "down")
stack.start_service("keystone")
print("up" if procs.http_status(f"http://127.0.0.1:{PORTS.keystone}/v3") == 200 else "down")
"""


def _osprov(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*OSPROV, *args], env=env, capture_output=True, text=True, timeout=300)


def _recorded_groups(state: Path) -> dict[str, int]:
    return {p.stem: json.loads(p.read_text())["pid"] for p in (state / "pids").glob("*.json")}


def _admin_projects(state: Path) -> list[str]:
    region = OpenStackConfig(config_files=[str(state / "clouds.yaml")]).get_one(cloud="osprov-admin")
    conn = openstack.connection.Connection(config=region)
    try:
        return [p["name"] for p in conn.identity.get("/projects").json()["projects"]]
    finally:
        conn.close()


def test_down_leaves_no_process_and_up_again_works(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = dict(os.environ, OSPROV_STATE_DIR=str(state), OSPROV_PORT_OFFSET=PORT_OFFSET)

    try:
        first = _osprov(env, "up", "--only", "identity")
        assert first.returncode == 0, first.stderr
        groups = _recorded_groups(state)
        assert {"mariadb", "keystone", "temporal"} <= set(groups)
        assert "admin" in _admin_projects(state)

        down = _osprov(env, "down")
        assert down.returncode == 0, down.stderr
        leftovers = {name: procs.group_members(pgid) for name, pgid in groups.items()}
        assert all(not members for members in leftovers.values()), leftovers
        assert not list((state / "pids").glob("*.json"))
        assert not (state / "env").exists()

        second = _osprov(env, "up", "--only", "identity")
        assert second.returncode == 0, second.stderr
        # Same MariaDB data dir: the admin created by the first up still authenticates.
        assert "admin" in _admin_projects(state)

        # The outage switch other tests use: Keystone really goes away and really comes back.
        restart = subprocess.run(
            [sys.executable, "-c", RESTART_KEYSTONE], env=env, capture_output=True, text=True, timeout=120
        )
        assert restart.returncode == 0, restart.stderr
        assert restart.stdout.split() == ["down", "up"]
    finally:
        wiped = _osprov(env, "down", "--wipe")
    assert wiped.returncode == 0, wiped.stderr
    assert not (state / "mysql").exists()
    for pgid in _recorded_groups(state).values():
        assert not procs.group_members(pgid)
