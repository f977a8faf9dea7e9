"""pytest plugin: session fixtures that provide the local stack (`pytest_plugins = ["devenv.testing"]`).

A stack that is already up and healthy is reused. Otherwise the fixture brings it up and takes it
down at session end, but only if it started it and no other live pytest session registered as a user
(engineers share one state dir on a machine).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import pytest

from devenv import procs, stack
from devenv.config import PORTS, state_dir

T = TypeVar("T")


@dataclass(frozen=True)
class StackEnv:
    temporal_address: str
    temporal_namespace: str
    temporal_ui_url: str
    kubeconfig: Path
    clouds_yaml: Path
    cloud: str
    keystone_url: str
    state_dir: Path
    full: bool
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls, env: dict[str, str]) -> StackEnv:
        return cls(
            temporal_address=env["OSPROV_TEMPORAL_ADDRESS"],
            temporal_namespace=env["OSPROV_TEMPORAL_NAMESPACE"],
            temporal_ui_url=env["OSPROV_TEMPORAL_UI_URL"],
            kubeconfig=Path(env["KUBECONFIG"]),
            clouds_yaml=Path(env["OS_CLIENT_CONFIG_FILE"]),
            cloud=env["OS_CLOUD"],
            keystone_url=env["OSPROV_KEYSTONE_URL"],
            state_dir=Path(env["OSPROV_STATE_DIR"]),
            full=env.get("OSPROV_STACK_LEVEL") == "full",
            env=dict(env),
        )


def _healthy(full: bool) -> bool:
    if not stack.env_file().exists():
        return False
    if full and stack.load_env().get("OSPROV_STACK_LEVEL") != "full":
        return False
    names = ["mariadb", "keystone", "temporal", "kube"] + (stack.full_service_names() if full else [])
    if not all(stack.is_running(n) for n in names if n != "kube" or stack.kube_available()):
        return False
    return procs.http_status(f"http://127.0.0.1:{PORTS.keystone}/v3") == 200 and procs.tcp_open(
        PORTS.temporal
    )


def _users_dir() -> Path:
    return state_dir() / "run" / "test-sessions"


def _live_other_users() -> list[int]:
    alive = []
    for entry in _users_dir().glob("*") if _users_dir().exists() else []:
        pid = int(entry.name)
        if pid != os.getpid() and Path(f"/proc/{pid}").exists():
            alive.append(pid)
    return alive


def _provide(full: bool) -> Iterator[StackEnv]:
    with stack.locked():
        started_from_nothing = not stack.env_file().exists()
        if not _healthy(full):
            try:
                stack.up(only_identity=not full)
            except BaseException:
                if started_from_nothing:  # leave no half-started stack behind (ports, MariaDB, RabbitMQ)
                    stack.down(wipe=False)
                raise
        elif full:
            # Tests may publish endpoints into this Keystone: put the stack's own URLs back.
            from devenv.config import load_secrets
            from devenv.openstack.catalog import bootstrap_catalog

            bootstrap_catalog(load_secrets())
        _users_dir().mkdir(parents=True, exist_ok=True)
        (_users_dir() / str(os.getpid())).touch()
    env = stack.load_env()
    # openstacksdk, kubernetes and temporal helpers read these; the ownership policy is the started
    # worker's, not this process's (in-process tests set their own).
    os.environ.update({k: v for k, v in env.items() if not k.startswith("OSPROV_OWNERSHIP_")})
    try:
        yield StackEnv.from_env(env)
    finally:
        with stack.locked():
            (_users_dir() / str(os.getpid())).unlink(missing_ok=True)
            if started_from_nothing and not _live_other_users():
                stack.down(wipe=False)


def provide_stack(full: bool) -> Iterator[StackEnv]:
    """The local stack for a process that is not pytest (benchmarks): started if it is not running, and
    stopped at the end if this process started it and no other user remains."""
    yield from _provide(full)


@pytest.fixture(scope="session")
def identity_stack() -> Iterator[StackEnv]:
    """MariaDB + Keystone + Temporal + kube emulator (a running full stack serves too)."""
    yield from _provide(full=False)


@pytest.fixture(scope="session")
def full_stack() -> Iterator[StackEnv]:
    """The whole OpenStack mini cloud plus Temporal and the kube emulator."""
    yield from _provide(full=True)


def eventually(check: Callable[[], T | None], timeout: float, what: str, interval: float = 0.2) -> T:
    """Poll check() until it returns something truthy (returned); fail the test after timeout."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout}s waiting for {what} (last: {last!r})")
