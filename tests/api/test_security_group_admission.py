"""A SecurityGroup rule Neutron would refuse is refused at admission (the CRD's schema and CEL rules, in the
kube emulator through the official client) and by the pydantic model, before any Neutron call; the valid
neighbour of each row passes both, so no rule is tighter than it means to be.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from osprov.api import security_group as sg
from tests.api.admission import create, emulator_with, model_errors, rejection

NS = "secgroups"
PROJECT = {"name": "service", "domain": "service"}
SSH = {"direction": "ingress", "protocol": "tcp", "portRangeMin": 22, "portRangeMax": 22}


def spec(*rules: dict[str, Any]) -> dict[str, Any]:
    return {"project": PROJECT, "description": "web", "rules": list(rules)}


# (id, bad rule, its valid neighbour, what the apiserver says)
ROWS = [
    (
        "ports-without-tcp-udp",
        {"direction": "ingress", "portRangeMin": 22, "portRangeMax": 22},
        SSH,
        sg.PORTS_NEED_PROTOCOL_MESSAGE,
    ),
    (
        "one-port-bound",
        {"direction": "ingress", "protocol": "tcp", "portRangeMin": 22},
        SSH,
        sg.PORTS_BOTH_MESSAGE,
    ),
    ("min-above-max", SSH | {"portRangeMin": 23}, SSH | {"portRangeMax": 23}, sg.PORT_ORDER_MESSAGE),
    (
        "prefix-and-group",
        {"direction": "ingress", "remoteIPPrefix": "10.0.0.0/8", "remoteGroup": "self"},
        {"direction": "ingress", "remoteGroup": "self"},
        sg.ONE_REMOTE_MESSAGE,
    ),
    (
        "ipv4-prefix-on-ipv6",
        {"direction": "ingress", "ethertype": "IPv6", "remoteIPPrefix": "10.0.0.0/8"},
        {"direction": "ingress", "ethertype": "IPv6", "remoteIPPrefix": "fd00::/8"},
        sg.FAMILY_MESSAGE,
    ),
    (
        "protocol-out-of-range",
        {"direction": "ingress", "protocol": "256"},
        {"direction": "ingress", "protocol": "255"},
        "should match",
    ),
    ("unknown-direction", {"direction": "inbound"}, {"direction": "ingress"}, "Unsupported value"),
    (
        "port-zero",
        SSH | {"portRangeMin": 0},
        SSH | {"portRangeMin": 1},
        "should be greater than or equal to 1",
    ),
]


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.ApiClient]:
    with emulator_with(tmp_path_factory.mktemp("kube"), NS) as api:
        yield api


@pytest.mark.parametrize(("bad", "good", "says"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_a_bad_rule_is_refused_at_admission_and_by_the_model(
    api: client.ApiClient, bad: dict[str, Any], good: dict[str, Any], says: str
) -> None:
    with pytest.raises(client.ApiException) as err:
        create(api, NS, "SecurityGroup", "bad", spec(bad), dry=True)
    assert says in " | ".join(rejection(err.value).values())
    assert model_errors("SecurityGroup", spec(bad)) != {}
    create(api, NS, "SecurityGroup", "good", spec(good), dry=True)
    assert model_errors("SecurityGroup", spec(good)) == {}


def test_what_only_the_model_can_check_is_a_clear_message_before_any_call() -> None:
    # Host bits set: Neutron stores the prefix as given, a different rule from the network's.
    host_bits = model_errors("SecurityGroup", spec({"direction": "ingress", "remoteIPPrefix": "10.0.0.1/8"}))
    assert "is not a network CIDR" in " ".join(host_bits.values())
    icmp = {"direction": "ingress", "protocol": "icmp"}
    twice = model_errors("SecurityGroup", spec(icmp, icmp | {"protocol": "1"}))  # Neutron: the same rule
    assert "rules 0 and 1 are the same rule" in " ".join(twice.values())


def test_more_rules_than_the_bound_are_refused(api: client.ApiClient) -> None:
    many = [SSH | {"portRangeMin": p, "portRangeMax": p} for p in range(1, sg.MAX_RULES + 2)]
    with pytest.raises(client.ApiException) as err:
        create(api, NS, "SecurityGroup", "many", spec(*many), dry=True)
    assert "spec.rules" in rejection(err.value)
    create(api, NS, "SecurityGroup", "enough", spec(*many[: sg.MAX_RULES]), dry=True)


def test_an_unmanaged_group_takes_no_rules(api: client.ApiClient) -> None:
    observed = {"project": PROJECT, "managementPolicy": "unmanaged", "import": {"id": "sg-1"}}
    with pytest.raises(client.ApiException) as err:
        create(api, NS, "SecurityGroup", "observed", observed | {"rules": [SSH]}, dry=True)
    assert sg.OBSERVED_RULES_MESSAGE in " | ".join(rejection(err.value).values())
    assert model_errors("SecurityGroup", observed | {"rules": [SSH]}) != {}
    create(api, NS, "SecurityGroup", "observed", observed, dry=True)
