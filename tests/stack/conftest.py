"""Fixtures for the local-stack tests: an admin openstacksdk connection on the full stack."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openstack
import pytest
from openstack.config.loader import OpenStackConfig

from devenv.testing import StackEnv


@pytest.fixture(scope="session")
def admin_conn(full_stack: StackEnv) -> Iterator[Any]:
    region = OpenStackConfig(config_files=[str(full_stack.clouds_yaml)]).get_one(cloud=full_stack.cloud)
    conn = openstack.connection.Connection(config=region)
    yield conn
    conn.close()
