"""Issue 18: SSH key modes on a Server's create, asserted on what the real Nova stored.

identityKeypair sends the key_name of the Identity's keypair (a keypair of the Identity's user, made with its
credential from its spec.sshPublicKey); ca sends no key_name and user data whose first part trusts the
operator's SSH CA, the author's userData after it; none sends neither. Nova's stored server (admin GET,
microversion >= 2.3 shows OS-EXT-SRV-ATTR:user_data) is the evidence; a rebuild (imageRef only) leaves both
key_name and user_data as the create made them.
"""

from __future__ import annotations

import base64
import email
import email.message
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openstack.connection
import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from devenv.openstack.catalog import IMAGE_NAMES
from devenv.testing import StackEnv
from osprov.activities.nova_ssh import CA_KEYS_PATH, SSH_CA_FILE_ENV
from osprov.api.identity import keypair_name
from tests.support.osprov import Osprov, ensure_crd, run_osprov
from tests.support.tenants import tenant_domain
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.stack, pytest.mark.fullstack]

AVAILABLE = "Available"
USES = {"identityRef": {"name": "team"}, "deletionPolicy": "delete"}
SCRIPT = "#!/bin/sh\necho created > /tmp/osprov-ssh-test\n"


def _text(part: email.message.Message) -> str:
    payload = part.get_payload(decode=True)
    assert isinstance(payload, bytes)
    return payload.decode()


def public_key(comment: str) -> str:
    """A fresh OpenSSH public key line; the private half is thrown away (osprov never sees one)."""
    raw = (
        Ed25519PrivateKey.generate()
        .public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    )
    return f"{raw.decode()} {comment}"


CA_KEY = public_key("ops-ca")


@pytest.fixture(scope="module")
def domain(admin: openstack.connection.Connection) -> Iterator[Any]:
    yield from tenant_domain(admin)


@pytest.fixture(scope="module")
def osprov(full_stack: StackEnv, tmp_path_factory: pytest.TempPathFactory, domain: Any) -> Iterator[Osprov]:
    for kind in ("Identity", "Server"):
        ensure_crd(full_stack, kind)
    tmp = tmp_path_factory.mktemp("server-ssh")
    ca = tmp / "ssh-ca.pub"  # the operator's setting (a mounted ConfigMap in a cluster)
    ca.write_text(CA_KEY + "\n")
    tenancy = tmp / "tenancy.yaml"
    tenancy.write_text(yaml.safe_dump({"namespaces": {}}))
    env = {"OSPROV_TENANCY_FILE": str(tenancy), SSH_CA_FILE_ENV: str(ca)}
    for o in run_osprov(full_stack, tmp, extra_env=env):
        _map(tenancy, o.namespace, domain.name)
        yield o


def _map(path: Path, namespace: str, domain: str) -> None:
    path.write_text(yaml.safe_dump({"namespaces": {namespace: {"domain": domain}}}))


def stored(admin: openstack.connection.Connection, server_id: str) -> dict[str, Any]:
    """Nova's stored server as admin sees it (2.3+: the create-time user_data, base64)."""
    resp = admin.compute.get(f"/servers/{server_id}", microversion="2.60")
    resp.raise_for_status()
    return resp.json()["server"]  # type: ignore[no-any-return]


def user_data(server: dict[str, Any]) -> str | None:
    raw = server.get("OS-EXT-SRV-ATTR:user_data")
    return base64.b64decode(raw).decode() if raw else None


def test_each_ssh_mode_creates_the_nova_server_the_seed_describes_and_a_rebuild_keeps_it(
    osprov: Osprov, admin: openstack.connection.Connection
) -> None:
    key = public_key("team@example")
    osprov.apply("Identity", "team", {"sshPublicKey": key})
    identity = osprov.wait_ready("Identity", "team", timeout_s=90)["status"]
    uid = osprov.get("Identity", "team")["metadata"]["uid"]  # type: ignore[index]
    a, b = (admin.image.find_image(n, ignore_missing=False).id for n in IMAGE_NAMES)
    base = USES | {"flavor": "m1.tiny", "imageID": a, "userData": SCRIPT}
    osprov.apply("Server", "keyed", base | {"ssh": {"mode": "identityKeypair"}})
    osprov.apply("Server", "trusted", base | {"ssh": {"mode": "ca"}})
    osprov.apply("Server", "bare", USES | {"flavor": "m1.tiny", "imageID": a, "ssh": {"mode": "none"}})
    ids = {
        n: osprov.wait_ready("Server", n, 180, ctype=AVAILABLE)["status"]["serverID"]
        for n in ("keyed", "trusted", "bare")
    }

    # identityKeypair: the Identity's keypair, its user's own (made with its credential), with its public key.
    keyed = stored(admin, ids["keyed"])
    assert keyed["key_name"] == keypair_name(uid) and user_data(keyed) == SCRIPT
    resp = admin.compute.get(
        f"/os-keypairs/{keypair_name(uid)}", params={"user_id": identity["userID"]}, microversion="2.10"
    )
    resp.raise_for_status()
    assert resp.json()["keypair"]["public_key"].split()[:2] == key.split()[:2]
    assert resp.json()["keypair"]["user_id"] == identity["userID"]

    # ca: no key_name; the CA trust first, the author's script after it, unchanged.
    trusted = stored(admin, ids["trusted"])
    assert trusted["key_name"] is None
    doc = email.message_from_string(user_data(trusted) or "")
    parts = [(p.get_content_type(), _text(p)) for p in doc.walk() if not p.is_multipart()]
    assert [t for t, _ in parts] == ["text/cloud-config", "text/x-shellscript"]
    config = yaml.safe_load(parts[0][1])
    assert config["write_files"][0]["path"] == CA_KEYS_PATH and CA_KEY in config["write_files"][0]["content"]
    assert parts[1][1] == SCRIPT

    # none: neither.
    bare = stored(admin, ids["bare"])
    assert bare["key_name"] is None and user_data(bare) is None

    # A rebuild sends imageRef only: Nova keeps the create-time key_name and user_data.
    osprov.apply("Server", "keyed", base | {"ssh": {"mode": "identityKeypair"}, "imageID": b})
    osprov.wait_ready("Server", "keyed", timeout_s=180, generation=2, ctype=AVAILABLE)
    wait_for(
        lambda: not (osprov.get("Server", "keyed") or {}).get("status", {}).get("rebuild"), "rebuilt", 90
    )
    after = stored(admin, ids["keyed"])
    assert after["id"] == ids["keyed"] and after["image"]["id"] == b
    assert after["key_name"] == keypair_name(uid) and user_data(after) == SCRIPT

    for name in ids:
        osprov.delete("Server", name)
    osprov.delete("Identity", "team")
    wait_for(lambda: osprov.get("Identity", "team") is None, "the Identity and its servers deleted", 240)
    assert all(admin.compute.find_server(i, ignore_missing=True) is None for i in ids.values())
    # X6: the Identity deleted its keypair as its own user before its credential was revoked (Nova keeps a
    # deleted user's keypairs: without this it would stay behind, seen by admin only).
    gone = admin.compute.get(
        f"/os-keypairs/{keypair_name(uid)}", params={"user_id": identity["userID"]}, microversion="2.10"
    )
    assert gone.status_code == 404, gone.text
