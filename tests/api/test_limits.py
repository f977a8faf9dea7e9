"""The limit types themselves: patterns read the same in RE2 (kube-apiserver) and in the models, the IP and
CIDR patterns accept exactly what Python's ipaddress does, the userData limit is Nova's after base64, and every
rule a model declares reaches its CRD."""

from __future__ import annotations

import base64
import ipaddress
import random
import typing
from typing import Any

import pytest
import re2
from pydantic import BaseModel, TypeAdapter, ValidationError

from osprov.api import limits
from osprov.api.limits import Pattern, Rule
from osprov.api.registry import ALL_KINDS, KindInfo
from tests.api.schema_check import all_rules
from tests.api.test_crds import load_crd

PATTERNS = {name: value for name, value in vars(limits).items() if isinstance(value, Pattern)}
# Strings near every pattern's edges: control characters, a final newline, the characters each one excludes.
PROBES = [
    "",
    "a",
    "RegionOne",
    "RegionOne\n",
    "\nRegionOne",
    "Region One",
    "a/../../users",
    "volumev3",
    "load-balancer",
    "volume_v3-",
    "demo key",
    "demo@x.y",
    " demo",
    "http://x/v3",
    "http://x/v3\n",
    "https://[::1]:5000/v3/%(project_id)s",
    "http://u:p@x/",
    "http://x/?a=b@c",
    "http://x/<a>",
    "http://x/'",
    "ftp://x/",
    "ser\x00vice",
    "ser\x85vice",
    "servicé",
    "10.0.0.1",
    "10.0.0.1\n",
    "10.0.0.0/8",
    "::1",
    "::1/128",
]


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_a_pattern_means_the_same_to_the_apiserver_and_the_model(name: str) -> None:
    pattern: Pattern = PATTERNS[name]
    adapter = TypeAdapter(typing.Annotated[str, pattern])
    for probe in PROBES:
        by_re2 = re2.search(pattern.regex, probe) is not None
        try:
            adapter.validate_python(probe)
            by_model = True
        except ValidationError as err:
            assert pattern.message in str(err)
            by_model = False
        assert by_re2 == by_model, (name, probe)


def _addresses() -> list[str]:
    """Every "::" position over random groups, embedded IPv4 tails, random and malformed addresses."""
    rng = random.Random(13)
    out = [
        "::",
        "1::",
        "::1",
        "1::2::3",
        "1:2:3:4:5:6:7:8:9",
        ":::",
        "1:::2",
        "12345::",
        "g::1",
        "fe80::1%eth0",
    ]
    out += ["1.2.3.4", "255.255.255.255", "256.1.1.1", "01.2.3.4", "1.2.3", "1.2.3.4.5", "::ffff:1.2.3.4"]
    for gap in range(9):
        for start in range(9 - gap):
            groups = [format(rng.getrandbits(16), "x") for _ in range(8)]
            head, tail = groups[:start], groups[start + gap :]
            out.append(":".join(head) + "::" + ":".join(tail) if gap else ":".join(groups))
            if len(tail) >= 2:
                out.append(":".join(head) + "::" + ":".join([*tail[:-2], "10.1.2.3"]))
    for _ in range(500):
        six = ipaddress.IPv6Address(
            rng.getrandbits(128) & rng.choice([(1 << 128) - 1, (1 << 64) - 1, 0xFFFF])
        )
        four = ipaddress.IPv4Address(rng.getrandbits(32))
        out += [str(six), six.exploded, str(four), f"64:ff9b::{four}"]
    return out


def _accepts(adapter: TypeAdapter[Any], value: str) -> bool:
    try:
        adapter.validate_python(value)
    except ValidationError:
        return False
    return True


def test_ip_addresses_are_what_ipaddress_and_octavia_accept() -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(limits.IpAddress)
    for text in _addresses():
        try:
            ipaddress.ip_address(text)
            parsed = "%" not in text  # ipaddress takes IPv6 scope IDs, which no Octavia address has
        except ValueError:
            parsed = False
        assert parsed == _accepts(adapter, text) == (re2.search(limits.IP_PATTERN, text) is not None), text


def test_cidrs_are_what_ip_network_accepts_in_prefix_form() -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(limits.Cidr)
    for address in _addresses():
        for prefix in (0, 8, 32, 33, 64, 128, 129):
            text = f"{address}/{prefix}"
            try:
                ipaddress.ip_network(text, strict=False)
                parsed = "%" not in text
            except ValueError:
                parsed = False
            assert parsed == _accepts(adapter, text) == (re2.search(limits.CIDR_PATTERN, text) is not None), (
                text
            )


def test_the_user_data_limit_is_novas_after_base64() -> None:
    fits, too_big = b"x" * limits.USER_DATA_MAX_BYTES, b"x" * (limits.USER_DATA_MAX_BYTES + 1)
    assert len(base64.b64encode(fits)) <= 65535 < len(base64.b64encode(too_big))


def _rules_of(model: type[BaseModel]) -> list[Rule]:
    """Every Rule in the Annotated metadata of a model's fields, nested models included."""
    found: list[Rule] = []
    for info in model.model_fields.values():
        found += [meta for meta in info.metadata if isinstance(meta, Rule)]
        for arg in typing.get_args(info.annotation) or (info.annotation,):
            for inner in (arg, *typing.get_args(arg)):
                if typing.get_origin(inner) is typing.Annotated:
                    found += [m for m in inner.__metadata__ if isinstance(m, Rule)]
                    inner = typing.get_args(inner)[0]
                if isinstance(inner, type) and issubclass(inner, BaseModel):
                    found += _rules_of(inner)
    return found


@pytest.mark.parametrize("info", ALL_KINDS, ids=lambda i: i.kind)
def test_every_rule_of_a_model_reaches_its_crd(info: KindInfo) -> None:
    """A field's own json_schema_extra would overwrite the rules its type brings; none may be lost."""
    crd_rules = all_rules(load_crd(info)["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    declared = _rules_of(info.spec_model)
    # An Identity names nothing in Keystone: its project and user are named after its UID.
    assert declared or info.kind == "Identity", "every kind has at least its names' rules"
    assert {rule.cel for rule in declared} <= set(crd_rules)
