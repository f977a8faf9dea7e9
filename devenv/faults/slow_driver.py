"""A slowable Nova fake virt driver, so tests can observe rebuild task_states.

Nova loads virt drivers only from the `nova.virt` package, so install() writes the module into the
OpenStack venv's nova/virt/. The stack always runs nova-compute with it; by default it behaves exactly
like fake.FakeDriverWithoutFakeNodes. The delay is read from a file at every spawn, so a test can switch
it on for its own duration without restarting nova-compute:

    with slow_spawn(5.0):
        ...  # a rebuild now shows rebuilding -> rebuild_block_device_mapping -> rebuild_spawning -> None
"""

from __future__ import annotations

import contextlib
import sysconfig
from collections.abc import Iterator
from pathlib import Path

from devenv.config import state_dir, venv_bin

MODULE_NAME = "osprov_slow_fake"
COMPUTE_DRIVER = f"{MODULE_NAME}.SlowFakeDriver"
DELAY_FILE_ENV = "OSPROV_FAKE_SPAWN_DELAY_FILE"

DRIVER_SOURCE = f'''"""Installed by osprov (devenv.faults.slow_driver): FakeDriverWithoutFakeNodes that can be slowed."""

import os
import time

from nova.virt import fake


def _delay():
    path = os.environ.get("{DELAY_FILE_ENV}")
    if not path:
        return 0.0
    try:
        with open(path) as fh:
            return float(fh.read().strip() or 0)
    except (OSError, ValueError):
        return 0.0


class SlowFakeDriver(fake.FakeDriverWithoutFakeNodes):
    def spawn(self, *args, **kwargs):
        delay = _delay()
        if delay > 0:
            time.sleep(delay)
        return super().spawn(*args, **kwargs)

    def destroy(self, context, instance, *args, **kwargs):
        # During a rebuild the old guest is destroyed while task_state is still "rebuilding".
        delay = _delay()
        if delay > 0 and getattr(instance, "task_state", None) == "rebuilding":
            time.sleep(delay / 2)
        return super().destroy(context, instance, *args, **kwargs)
'''


def _nova_virt_dir() -> Path:
    python = venv_bin("python")
    # purelib of the OpenStack venv: <venv>/lib/pythonX.Y/site-packages
    version = sysconfig.get_python_version()
    return python.parent.parent / "lib" / f"python{version}" / "site-packages" / "nova" / "virt"


def install() -> None:
    target = _nova_virt_dir() / f"{MODULE_NAME}.py"
    if not target.parent.is_dir():
        raise RuntimeError(f"nova is not installed in the OpenStack venv ({target.parent} missing)")
    if not target.exists() or target.read_text() != DRIVER_SOURCE:
        target.write_text(DRIVER_SOURCE)


def delay_file() -> Path:
    return state_dir() / "nova" / "spawn-delay"


def set_spawn_delay(seconds: float) -> None:
    """Every following spawn (create or rebuild) on the stack's nova-compute sleeps this long first."""
    path = delay_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{seconds}\n")


@contextlib.contextmanager
def slow_spawn(seconds: float) -> Iterator[None]:
    set_spawn_delay(seconds)
    try:
        yield
    finally:
        set_spawn_delay(0)
