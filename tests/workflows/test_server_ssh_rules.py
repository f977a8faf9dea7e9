"""K1–K4 (workflows/server_ssh.py) row by row: what a Server's create sends Nova for each SSH mode."""

from __future__ import annotations

from typing import Any

import pytest

from osprov.api.nova import ServerSpec
from osprov.workflows.server_ssh import SshInjection, ssh_injection

BASE: dict[str, Any] = {"flavor": "m1.tiny", "imageID": "img-1"}
IDENTITY = {"identityRef": {"name": "team"}}
PROJECT = {"project": {"name": "p", "domain": "Default"}}

ROWS = [
    ("K1-unset-keypair", PROJECT | {"keypair": "mine"}, SshInjection("K1", key_name="mine")),
    ("K1-unset-no-keypair", PROJECT, SshInjection("K1")),
    ("K1-explicit", IDENTITY | {"keypair": "mine", "ssh": {"mode": "keypair"}}, SshInjection("K1", key_name="mine")),
    ("K2", IDENTITY | {"ssh": {"mode": "identityKeypair"}}, SshInjection("K2", identity_keypair=True)),
    ("K3", PROJECT | {"ssh": {"mode": "ca"}, "userData": "#!/bin/sh\n"}, SshInjection("K3", ssh_ca=True)),
    ("K4", IDENTITY | {"ssh": {"mode": "none"}, "userData": "#!/bin/sh\n"}, SshInjection("K4")),
]  # fmt: skip


@pytest.mark.parametrize(("row", "spec", "want"), ROWS, ids=[r[0] for r in ROWS])
def test_each_mode_decides_key_name_and_ca(row: str, spec: dict[str, Any], want: SshInjection) -> None:
    assert ssh_injection(ServerSpec.model_validate(BASE | spec)) == want
