"""SecurityGroups of an Identity on the real local stack: every Neutron call runs on the Identity's application
credential, in its project (the controller's user holds no role there), and a rule may name another
SecurityGroup of the same Identity.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openstack.connection
import pytest

from devenv.testing import StackEnv
from tests.integration.test_security_group import neutron_rows, row
from tests.support.osprov import Osprov
from tests.support.tenants import tenant_domain, tenant_osprov
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.stack, pytest.mark.fullstack]

AVAILABLE = "Available"
USES = {"identityRef": {"name": "team"}, "deletionPolicy": "delete"}
WEB = {"direction": "ingress", "protocol": "tcp", "portRangeMin": 80, "portRangeMax": 80}


@pytest.fixture(scope="module")
def domain(admin: openstack.connection.Connection) -> Iterator[Any]:
    yield from tenant_domain(admin)


@pytest.fixture(scope="module")
def osprov(full_stack: StackEnv, tmp_path_factory: pytest.TempPathFactory, domain: Any) -> Iterator[Osprov]:
    tmp = tmp_path_factory.mktemp("secgroup-identity")
    yield from tenant_osprov(full_stack, tmp, domain.name, ("Identity", "SecurityGroup"))


def test_groups_are_made_with_the_identitys_credential_and_removed_with_it(
    osprov: Osprov, admin: openstack.connection.Connection
) -> None:
    osprov.apply("Identity", "team", {})
    project_id = osprov.wait_ready("Identity", "team", timeout_s=90)["status"]["projectID"]
    ident: Any = admin.identity
    assert list(ident.role_assignments(user_id=admin.current_user_id, scope_project_id=project_id)) == []
    osprov.apply("SecurityGroup", "lb", USES | {"rules": [WEB]})
    osprov.apply("SecurityGroup", "app", USES | {"rules": [WEB | {"remoteGroup": "lb"}]})
    lb = osprov.wait_ready("SecurityGroup", "lb", 90, ctype=AVAILABLE)["status"]["securityGroupID"]
    app = osprov.wait_ready("SecurityGroup", "app", 90, ctype=AVAILABLE)["status"]["securityGroupID"]
    assert admin.network.get_security_group(lb).project_id == project_id
    assert admin.network.get_security_group(app).project_id == project_id
    assert neutron_rows(admin, lb) == {row(WEB)}
    assert neutron_rows(admin, app) == {row(WEB, remote_group=lb)}

    for name in ("app", "lb"):
        osprov.delete("SecurityGroup", name)
    osprov.delete("Identity", "team")  # waits (InUse) until both are gone, then removes itself
    resources = [("SecurityGroup", "app"), ("SecurityGroup", "lb"), ("Identity", "team")]
    wait_for(lambda: all(osprov.get(k, n) is None for k, n in resources), "all three deleted", 180)
    assert admin.network.find_security_group(lb) is None and admin.network.find_security_group(app) is None
    assert ident.find_project(project_id, ignore_missing=True) is None
