"""The OpenStack services beyond Keystone (Glance, Placement, Nova, Neutron, Cinder, Octavia)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from devenv.config import Secrets

if TYPE_CHECKING:
    from devenv.stack import Service


def services() -> list[Service]:
    return []


def up(secrets: Secrets, ensure: Callable[[str], None]) -> None:
    raise NotImplementedError("the full stack is not there yet: use `osprov dev up --only identity`")
