"""Issue 18: spec.ssh's static rules, through the CRD's CEL offline and the pydantic model alike (a spec that
bypassed admission gets the same answer from the workflow). The transition rules are in
test_admission_immutable.py."""

from __future__ import annotations

from typing import Any

import pytest

from osprov.api.nova import SSH_IDENTITY_MESSAGE, SSH_KEYPAIR_MESSAGE
from tests.api.admission import PROJECT, model_errors
from tests.api.schema_check import violations
from tests.api.test_crds import spec_schema

BASE: dict[str, Any] = {"flavor": "m1.tiny", "imageID": "img-1"}
IDENTITY = {"identityRef": {"name": "team"}}
SCOPED = {"project": PROJECT}

REFUSED = [
    ("keypair-with-ca", SCOPED | {"keypair": "k", "ssh": {"mode": "ca"}}, SSH_KEYPAIR_MESSAGE),
    ("keypair-with-none", SCOPED | {"keypair": "k", "ssh": {"mode": "none"}}, SSH_KEYPAIR_MESSAGE),
    ("keypair-with-identity", IDENTITY | {"keypair": "k", "ssh": {"mode": "identityKeypair"}}, SSH_KEYPAIR_MESSAGE),
    ("identity-mode-on-a-project", SCOPED | {"ssh": {"mode": "identityKeypair"}}, SSH_IDENTITY_MESSAGE),
]  # fmt: skip
ACCEPTED = [
    ("unset-with-keypair", SCOPED | {"keypair": "k"}),
    ("keypair-mode", SCOPED | {"keypair": "k", "ssh": {"mode": "keypair"}}),
    ("identity-mode", IDENTITY | {"ssh": {"mode": "identityKeypair"}}),
    ("ca", SCOPED | {"ssh": {"mode": "ca"}, "userData": "#!/bin/sh\n"}),
    ("none", IDENTITY | {"ssh": {"mode": "none"}}),
]


@pytest.mark.parametrize(("case", "spec", "message"), REFUSED, ids=[r[0] for r in REFUSED])
def test_a_mode_that_does_not_fit_is_refused_by_the_crd_and_the_model(
    case: str, spec: dict[str, Any], message: str
) -> None:
    assert any(message in m for m in violations(spec_schema("Server"), BASE | spec))
    assert any(message in m for m in model_errors("Server", BASE | spec).values())


@pytest.mark.parametrize(("case", "spec"), ACCEPTED, ids=[r[0] for r in ACCEPTED])
def test_fitting_modes_are_accepted(case: str, spec: dict[str, Any]) -> None:
    assert violations(spec_schema("Server"), BASE | spec) == []
    assert model_errors("Server", BASE | spec) == {}


def test_an_unknown_mode_is_refused_by_the_model() -> None:
    assert model_errors("Server", BASE | SCOPED | {"ssh": {"mode": "password"}})
