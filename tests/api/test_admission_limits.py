"""Every bad input of issue 13 is rejected at admission, with Kubernetes' message, and by the pydantic model.

One row per bad input: its field, a nearby valid value, what the apiserver says and what the model says. Each
row runs three ways: the pydantic model, the generated CRD checked offline (OpenAPI keywords with RE2 as
kube-apiserver, CEL with celpy), and the kube emulator through the official client (a dry-run create, so
nothing is stored). The valid neighbour must pass all three, so no limit is tighter than it means to be.
On the old CRDs and models most rows are accepted everywhere (names were capped at 255 only, URLs at
nothing, userData at 65535 raw characters, tags and descriptions not at all).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client

from tests.api.admission import Path, create, emulator_with, model_errors, rejection, with_value
from tests.api.schema_check import admission_violations
from tests.api.test_crds import spec_schema

NS = "limits"
TRIM = "must not start or end with whitespace (Keystone strips names)"
CONTROL = "must not contain control characters"
URL = "must be an http(s) URL"
URL_SPACE = "must not contain spaces or control characters"
TAG_KEYS = "tag keys must be 1 to 244 letters"
USER_DATA = "must be at most 49149 bytes in UTF-8"
MATCH = "in body should match"  # a pattern's message


@dataclass(frozen=True)
class Row:
    id: str
    kind: str
    path: Path
    bad: Any
    good: Any
    apiserver: str | tuple[str, ...]  # in the apiserver's message for the field (a Kubernetes cause); any of
    # several where the emulator's regular expressions and RE2 disagree (see `emulator`)
    model: str  # in the pydantic model's message for the same field
    field: str = ""  # the field both name; default: spec + path
    # False where only RE2's `$` rejects the value: the kube emulator still matches patterns with Python's re
    # (whose `$` also matches before a final newline) until it moves to RE2; the model and the offline RE2
    # check still run. Names and URLs have a CEL rule that rejects a final newline in any engine.
    emulator: bool = True

    @property
    def field_path(self) -> str:
        if self.field:
            return self.field
        return "spec" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.path)


def too_long(limit: int) -> tuple[str, str]:
    return f"Too long: may not be more than {limit}", f"at most {limit} characters"


def should_match(message: str) -> tuple[str, str]:
    return MATCH, message


def tags(count: int) -> dict[str, str]:
    return {f"key-{i}": "value" for i in range(count)}


ROWS = [
    # Keystone names: 64 characters for domains, projects and groups, 255 for users, roles and services.
    Row("domain-name-65", "Domain", ["name"], "d" * 65, "d" * 64, *too_long(64)),
    Row("project-name-65", "Project", ["name"], "p" * 65, "p" * 64, *too_long(64)),
    Row("project-domain-65", "Project", ["domain"], "d" * 65, "d" * 64, *too_long(64)),
    Row("group-name-65", "Group", ["name"], "g" * 65, "g" * 64, *too_long(64)),
    Row("user-name-256", "User", ["name"], "u" * 256, "u" * 255, *too_long(255)),
    Row("role-name-256", "Role", ["name"], "r" * 256, "r" * 255, *too_long(255)),
    Row("service-name-256", "Service", ["name"], "s" * 256, "s" * 255, *too_long(255)),
    Row("grant-project-name-65", "RoleAssignment", ["project", "name"], "p" * 65, "p" * 64, *too_long(64)),
    Row("cloud-project-name-65", "Volume", ["project", "name"], "p" * 65, "p" * 64, *too_long(64)),
    # Control characters anywhere, whitespace at either end (Keystone strips names).
    Row("name-nul", "Domain", ["name"], "serv\x00ice", "serv ice", *should_match(CONTROL)),
    Row("name-tab", "Project", ["name"], "serv\tice", "serv ice", *should_match(CONTROL)),
    Row("name-c1-control", "User", ["name"], "cinder\x85x", "cinderéx", *should_match(CONTROL)),
    Row("name-newline-inside", "Role", ["name"], "mem\nber", "mem ber", *should_match(CONTROL)),
    Row("name-trailing-newline", "Group", ["name"], "admins\n", "admins", (TRIM, MATCH), CONTROL),
    Row("name-leading-space", "Service", ["name"], " cinderv3", "cinder v3", TRIM, TRIM),
    Row("name-nbsp-end", "User", ["domain"], "service\u00a0", "ser\u00a0vice", TRIM, TRIM),
    Row("email-control", "User", ["email"], "a@b.org\x07", "a@b.org", *should_match(CONTROL)),
    # Descriptions: Keystone's description type holds 255 characters.
    Row("domain-description-256", "Domain", ["description"], "x" * 256, "x" * 255, *too_long(255)),
    Row("project-description-256", "Project", ["description"], "x" * 256, "x" * 255, *too_long(255)),
    Row("user-description-256", "User", ["description"], "x" * 256, "x" * 255, *too_long(255)),
    Row("group-description-256", "Group", ["description"], "x" * 256, "x" * 255, *too_long(255)),
    Row("service-description-256", "Service", ["description"], "x" * 256, "x" * 255, *too_long(255)),
    # Service types as the service-types authority writes them.
    Row("service-type-space", "Service", ["type"], "volume v3", "volumev3", *should_match("lowercase letters")),
    Row("service-type-upper", "Endpoint", ["service", "type"], "VolumeV3", "volumev3", *should_match("lowercase")),
    # Endpoint URLs: Keystone's 225 characters, http(s), no NUL, markup or user:password@.
    Row("url-226", "Endpoint", ["urls", "public"], "http://x/" + "a" * 217, "http://x/" + "a" * 216, *too_long(225)),
    Row("url-nul", "Endpoint", ["urls", "public"], "http://x/v3\x00", "http://x/v3", *should_match(URL)),
    Row("url-markup-lt", "Endpoint", ["urls", "public"], "http://x/<script>", "http://x/script", *should_match(URL)),
    Row("url-quote", "Endpoint", ["urls", "internal"], 'http://x/"a"', "http://x/a", *should_match(URL)),
    Row("url-apostrophe", "Endpoint", ["urls", "admin"], "http://x/'a'", "http://x/(a)", *should_match(URL)),
    Row("url-userinfo", "Endpoint", ["urls", "public"], "http://u:p@x/v3", "http://x/v3?u=p@x", *should_match(URL)),
    Row("url-scheme-ftp", "Endpoint", ["urls", "public"], "ftp://x/v3", "https://x/v3", *should_match(URL)),
    Row("url-javascript", "Endpoint", ["urls", "public"], "javascript:alert(1)", "http://[::1]:5000/v3", *should_match(URL)),
    Row("url-trailing-newline", "Endpoint", ["urls", "public"], "http://x/v3\n", "http://x/v3", (URL_SPACE, MATCH), URL),
    # Region IDs go into a URL path (GET /v3/regions/{id}).
    Row("region-traversal", "Endpoint", ["region"], "a/../../users", "a.users", *should_match("letters, digits")),
    Row("region-256", "Endpoint", ["region"], "R" * 256, "R" * 255, *too_long(255)),
    Row("region-trailing-newline", "Endpoint", ["region"], "RegionOne\n", "RegionOne", *should_match("letters"), emulator=False),
    # Nova: userData is at most 65535 characters once base64-encoded: 49149 bytes of UTF-8.
    Row("user-data-ascii", "Server", ["userData"], "a" * 49150, "a" * 49149, *too_long(49149)),
    Row("user-data-utf8", "Server", ["userData"], "é" * 24575, "é" * 24574, USER_DATA, USER_DATA),
    Row("keypair-slash", "Server", ["keypair"], "demo/key", "demo-key@x.y", *should_match("Nova keypair name")),
    Row("keypair-edge-space", "Server", ["keypair"], "demo ", "de mo", *should_match("Nova keypair name")),
    Row("keypair-256", "Server", ["keypair"], "k" * 256, "k" * 255, *too_long(255)),
    # Tags become Nova/Cinder metadata "osprov.tag.<key>": keys of Nova's metadata charset, values <= 255.
    Row("server-tags-33", "Server", ["tags"], tags(33), tags(32), "Too many: 33", "at most 32 items"),
    Row("volume-tags-33", "Volume", ["tags"], tags(33), tags(32), "Too many: 33", "at most 32 items"),
    Row("tag-key-245", "Server", ["tags"], {"k" * 245: "v"}, {"k" * 244: "v"}, TAG_KEYS, TAG_KEYS),
    Row("tag-key-slash", "Volume", ["tags"], {"a/b": "v"}, {"a:b c.d_e-f": "v"}, TAG_KEYS, TAG_KEYS),
    Row("tag-key-empty", "Volume", ["tags"], {"": "v"}, {"k": "v"}, TAG_KEYS, TAG_KEYS),
    Row("tag-value-256", "Volume", ["tags", "app"], "v" * 256, "v" * 255, *too_long(255)),
    Row("volume-size-int32", "Volume", ["size"], 2**31, 2**31 - 1, "less than or equal to 2147483647", "less than or equal to 2147483647"),
    # Octavia: CIDRs and addresses as its CidrType/IPAddressType parse them; a bounded CIDR list.
    Row("cidr-octet", "LoadBalancer", ["listeners", 0, "allowedCIDRs", 0], "10.0.0.300/8", "10.0.0.30/8", *should_match("IPv4 or IPv6 CIDR")),
    Row("cidr-prefix", "LoadBalancer", ["listeners", 0, "allowedCIDRs", 0], "10.0.0.0/33", "10.0.0.0/32", *should_match("IPv4 or IPv6 CIDR")),
    Row("cidr-ipv6-prefix", "LoadBalancer", ["listeners", 0, "allowedCIDRs", 0], "2001:db8::/129", "2001:db8::/128", *should_match("IPv4 or IPv6 CIDR")),
    Row(
        "cidrs-65",
        "LoadBalancer",
        ["listeners", 0, "allowedCIDRs"],
        [f"10.0.{i}.0/24" for i in range(65)],
        [f"10.0.{i}.0/24" for i in range(64)],
        "Too many: 65",
        "at most 64 items",
    ),
    Row("member-address", "LoadBalancer", ["listeners", 0, "pool", "members", 0, "address"], "10.0.0.256", "10.0.0.255", *should_match("IPv4 or IPv6 address")),
    Row("vip-address-v6", "LoadBalancer", ["vipAddress"], "2001:db8::1::2", "2001:db8::1:2", *should_match("IPv4 or IPv6 address")),
    Row("member-port-0", "LoadBalancer", ["listeners", 0, "pool", "members", 0, "port"], 0, 1, "greater than or equal to 1", "greater than or equal to 1"),
    # An Identity creates its own project, user and credential: there is nothing existing to observe.
    Row("identity-unmanaged", "Identity", ["managementPolicy"], "unmanaged", "managed", 'Unsupported value: "unmanaged"', "'managed'"),
    Row("listener-port-65536", "LoadBalancer", ["listeners", 0, "port"], 65536, 65535, "less than or equal to 65535", "less than or equal to 65535"),
]  # fmt: skip


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.ApiClient]:
    with emulator_with(tmp_path_factory.mktemp("kube"), NS) as api:
        yield api


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_the_model_rejects_the_bad_value_and_accepts_its_neighbour(row: Row) -> None:
    errors = model_errors(row.kind, with_value(row.kind, row.path, row.bad))
    assert row.field_path in errors, errors
    assert row.model in errors[row.field_path]
    assert model_errors(row.kind, with_value(row.kind, row.path, row.good)) == {}


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_the_crd_rejects_the_bad_value_and_accepts_its_neighbour(row: Row) -> None:
    schema = spec_schema(row.kind)
    assert admission_violations(schema, with_value(row.kind, row.path, row.bad)) != []
    assert admission_violations(schema, with_value(row.kind, row.path, row.good)) == []


@pytest.mark.parametrize("row", [r for r in ROWS if r.emulator], ids=lambda r: r.id)
def test_the_apiserver_names_the_field_and_the_reason(emulator: client.ApiClient, row: Row) -> None:
    with pytest.raises(client.ApiException) as caught:
        create(emulator, NS, row.kind, row.id, with_value(row.kind, row.path, row.bad), dry=True)
    causes = rejection(caught.value)
    assert row.field_path in causes, causes
    expected = (row.apiserver,) if isinstance(row.apiserver, str) else row.apiserver
    assert any(fragment in causes[row.field_path] for fragment in expected), causes
    create(emulator, NS, row.kind, row.id, with_value(row.kind, row.path, row.good), dry=True)
