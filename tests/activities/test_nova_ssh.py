"""ssh mode ca's user data (activities/nova_ssh.py): the operator's CA trust first, then the author's
userData unchanged, as one multipart/mixed document cloud-init runs whole; no CA configured, or too long
with it, is a clear Invalid before any write."""

from __future__ import annotations

import email
import email.message
from pathlib import Path

import pytest
import yaml
from temporalio.exceptions import ApplicationError

from osprov.activities import nova_ssh
from osprov.api.identity_io import Credential
from osprov.api.limits import USER_DATA_MAX_BYTES

CA = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOv7kL6hWmzTP1n9qDP1o2T0bUZ1mYq8Hf0m4A2Nq9Zb ops-ca"


def _text(part: email.message.Message) -> str:
    payload = part.get_payload(decode=True)
    assert isinstance(payload, bytes)
    return payload.decode()


def parts(text: str) -> list[tuple[str, str]]:
    msg = email.message_from_string(text)
    assert msg.get_content_type() == "multipart/mixed"
    return [(p.get_content_type(), _text(p)) for p in msg.walk() if not p.is_multipart()]


def test_the_ca_part_comes_first_and_the_authors_user_data_follows_unchanged() -> None:
    script = "#!/bin/sh\necho héllo > /tmp/x\n"
    [(ca_type, ca_text), (user_type, user_text)] = parts(nova_ssh.with_ca_trust(script, [CA]))
    assert ca_type == "text/cloud-config" and ca_text.startswith("#cloud-config\n")
    config = yaml.safe_load(ca_text)
    assert config["write_files"] == [
        {"path": nova_ssh.CA_KEYS_PATH, "permissions": "0644", "content": CA + "\n"}
    ]
    assert f"TrustedUserCAKeys {nova_ssh.CA_KEYS_PATH}" in config["runcmd"][0][2]
    assert (user_type, user_text) == ("text/x-shellscript", script)


@pytest.mark.parametrize(
    ("user_data", "subtype"),
    [("#cloud-config\nruncmd: []\n", "text/cloud-config"), ("just text", "text/plain")],
)
def test_the_authors_part_is_typed_by_its_first_line(user_data: str, subtype: str) -> None:
    assert parts(nova_ssh.with_ca_trust(user_data, [CA]))[1] == (subtype, user_data)


def test_without_user_data_only_the_ca_part_is_sent() -> None:
    assert [t for t, _ in parts(nova_ssh.with_ca_trust(None, [CA]))] == ["text/cloud-config"]


def test_too_long_with_the_ca_part_is_invalid() -> None:
    with pytest.raises(ApplicationError) as caught:
        nova_ssh.with_ca_trust("a" * USER_DATA_MAX_BYTES, [CA])
    assert caught.value.type == "Invalid" and "shorten spec.userData" in str(caught.value)


def test_no_ca_configured_is_invalid_and_says_who_fixes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(nova_ssh.SSH_CA_FILE_ENV, raising=False)
    with pytest.raises(ApplicationError) as caught:
        nova_ssh.ca_keys()
    assert caught.value.type == "Invalid" and "the operator has not configured" in str(caught.value)


def test_a_ca_file_that_is_not_there_is_not_configured(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # deploy/ always sets the variable, to the optional ConfigMap's file: no ConfigMap, no file, no CA.
    monkeypatch.setenv(nova_ssh.SSH_CA_FILE_ENV, str(tmp_path / "ca.pub"))
    with pytest.raises(ApplicationError) as caught:
        nova_ssh.ca_keys()
    assert caught.value.type == "Invalid" and "osprov-ssh-ca" in str(caught.value)
    assert caught.value.non_retryable  # the pass fails with the message; no retry storm


def test_the_ca_file_must_hold_public_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "ca.pub"
    monkeypatch.setenv(nova_ssh.SSH_CA_FILE_ENV, str(path))
    path.write_text(f"# the ops CA\n{CA}\n")
    assert nova_ssh.ca_keys() == [CA]
    path.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    with pytest.raises(ApplicationError) as caught:
        nova_ssh.ca_keys()
    assert caught.value.type == "Invalid"


class _Resp:
    def __init__(self, status: int, body: dict[str, object] | None = None) -> None:
        self.status_code, self._body = status, body or {}

    def json(self) -> dict[str, object]:
        return self._body


class _Compute:
    """Nova's os-keypairs as the Identity's user sees them: name -> public key."""

    def __init__(self, keys: dict[str, str], race: bool = False) -> None:
        self.keys, self.race, self.posts = keys, race, 0

    def get(self, path: str, **_: object) -> _Resp:
        name = path.rsplit("/", 1)[1]
        return _Resp(200, {"keypair": {"public_key": self.keys[name]}}) if name in self.keys else _Resp(404)

    def post(self, path: str, json: dict[str, dict[str, str]], **_: object) -> _Resp:
        self.posts += 1
        kp = json["keypair"]
        if self.race:  # another Server of the Identity made it between our GET and POST
            self.keys[kp["name"]] = kp["public_key"]
            return _Resp(409)
        self.keys[kp["name"]] = kp["public_key"]
        return _Resp(201, {"keypair": kp})


class _Conn:
    def __init__(self, compute: _Compute) -> None:
        self.compute = compute


KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOv7kL6hWmzTP1n9qDP1o2T0bUZ1mYq8Hf0m4A2Nq9Zb team"


def test_the_identity_keypair_is_made_once_and_adopted_after(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nova_ssh.openstack.exceptions, "raise_from_response", lambda resp: None)
    compute = _Compute({})
    nova_ssh.ensure_keypair(_Conn(compute), "identity-u", KEY)  # type: ignore[arg-type]
    nova_ssh.ensure_keypair(_Conn(compute), "identity-u", KEY.replace(" team", " renamed"))  # type: ignore[arg-type]
    assert compute.keys == {"identity-u": KEY} and compute.posts == 1  # the comment is not the key


def test_a_concurrent_create_of_the_same_key_is_adopted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nova_ssh.openstack.exceptions, "raise_from_response", lambda resp: None)
    compute = _Compute({}, race=True)
    nova_ssh.ensure_keypair(_Conn(compute), "identity-u", KEY)  # type: ignore[arg-type]
    assert compute.posts == 1


def test_a_keypair_of_that_name_with_another_key_is_a_conflict_never_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(nova_ssh.openstack.exceptions, "raise_from_response", lambda resp: None)
    other = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB x"
    compute = _Compute({"identity-u": other})
    with pytest.raises(ApplicationError) as caught:
        nova_ssh.ensure_keypair(_Conn(compute), "identity-u", KEY)  # type: ignore[arg-type]
    assert caught.value.type == "Conflict" and compute.keys == {"identity-u": other} and compute.posts == 0


def test_an_identity_without_a_key_is_invalid_before_any_write(monkeypatch: pytest.MonkeyPatch) -> None:
    class Api:
        def get_namespaced_custom_object(self, *_: object) -> dict[str, object]:
            return {"metadata": {"uid": "u"}, "spec": {}}

    monkeypatch.setattr(nova_ssh.kubernetes.client, "CustomObjectsApi", lambda _: Api())
    monkeypatch.setattr(nova_ssh, "api_client", lambda: None)
    credential = Credential(identity="team", namespace="ns", secret="s", version="1", project_id="p")
    with pytest.raises(ApplicationError) as caught:
        nova_ssh.identity_public_key(credential)
    assert caught.value.type == "Invalid" and "has no spec.sshPublicKey" in str(caught.value)
