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


def test_the_ca_file_must_hold_public_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "ca.pub"
    monkeypatch.setenv(nova_ssh.SSH_CA_FILE_ENV, str(path))
    path.write_text(f"# the ops CA\n{CA}\n")
    assert nova_ssh.ca_keys() == [CA]
    path.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    with pytest.raises(ApplicationError) as caught:
        nova_ssh.ca_keys()
    assert caught.value.type == "Invalid"
