"""SSH access for a Server's create (workflows/server_ssh.py decides the mode): the Identity's Nova keypair
(identityKeypair) and the cloud-init trust of the operator's SSH certificate authority (ca).

Helpers of activities/nova.py's create, not activities of their own: each runs inside the one
create-if-absent call, before the server is made, so a retried create repeats them harmlessly.
"""

from __future__ import annotations

import base64
import os
import re
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from pathlib import Path
from typing import Any

import kubernetes.client
import openstack.connection
import openstack.exceptions
import structlog
import yaml

from osprov.activities.errors import conflict, error, invalid
from osprov.activities.kube import api_client
from osprov.api.identity import SSH_PUBLIC_KEY_PATTERN, keypair_name
from osprov.api.identity_io import Credential
from osprov.api.limits import USER_DATA_MAX_BYTES
from osprov.api.registry import kind_info

log = structlog.get_logger("osprov.activities.nova_ssh")

# Worker configuration (a mounted ConfigMap in a cluster): the OpenSSH public key line(s) of the SSH
# certificate authorities that servers of ssh mode ca trust. The operator's, never a resource author's.
SSH_CA_FILE_ENV = "OSPROV_SSH_CA_FILE"
CA_KEYS_PATH = "/etc/ssh/osprov_trusted_user_ca_keys.pub"
KEYPAIR_MICROVERSION = "2.2"  # keypair type in the answer; the key is the caller's (its user's) own
_KEY = re.compile(SSH_PUBLIC_KEY_PATTERN)
# cloud-init's own part types, by the first line of a user-data document (anything else: text/plain, and
# cloud-init decides from its first line itself).
_STARTS = (
    ("#cloud-config", "cloud-config"),
    ("#!", "x-shellscript"),
    ("#cloud-boothook", "cloud-boothook"),
    ("#include", "x-include-url"),
    ("#part-handler", "part-handler"),
)


def ca_keys() -> list[str]:
    """The operator's CA public keys; Invalid (before any cloud call) when none are configured."""
    path = os.environ.get(SSH_CA_FILE_ENV, "")
    if not path:
        raise invalid(
            "spec.ssh.mode ca: the operator has not configured an SSH certificate authority "
            f"({SSH_CA_FILE_ENV} on the worker); ask them to, or use mode identityKeypair, keypair or none "
            "— no server was created"
        )
    try:
        lines = [ln.strip() for ln in Path(path).read_text().splitlines() if ln.strip()]
    except FileNotFoundError:
        # deploy/ always points the variable at the optional ConfigMap osprov-ssh-ca: absent means unset.
        raise invalid(
            f"spec.ssh.mode ca: the operator has not configured an SSH certificate authority (no {path}: the "
            "ConfigMap osprov-ssh-ca, key ca.pub); ask them to, or use mode identityKeypair, keypair or none "
            "— no server was created"
        ) from None
    except OSError as exc:
        raise error("Transient", f"cannot read the SSH CA file {path} ({type(exc).__name__})") from None
    keys = [ln for ln in lines if not ln.startswith("#")]
    bad = [i + 1 for i, k in enumerate(keys) if not _KEY.match(k)]
    if not keys or bad:
        raise invalid(
            f"the operator's SSH CA file {path} holds no OpenSSH public key line"
            + (f" (line(s) {bad} are not one)" if bad else "")
            + "; no server was created"
        )
    return keys


def ca_cloud_config(keys: list[str]) -> str:
    """cloud-config: write the CA keys and make sshd trust certificates they signed. The directive goes
    first in sshd_config, so a Match block at its end cannot swallow it; reloading picks it up."""
    directive = f"TrustedUserCAKeys {CA_KEYS_PATH}"
    script = (
        f"grep -qxF '{directive}' /etc/ssh/sshd_config || sed -i '1i {directive}' /etc/ssh/sshd_config; "
        "systemctl try-reload-or-restart ssh sshd 2>/dev/null || service ssh reload 2>/dev/null || true"
    )
    doc = {
        "write_files": [{"path": CA_KEYS_PATH, "permissions": "0644", "content": "\n".join(keys) + "\n"}],
        "runcmd": [["sh", "-c", script]],
    }
    return "#cloud-config\n" + yaml.safe_dump(doc, sort_keys=False)


def _subtype(user_data: str) -> str:
    first = user_data.lstrip().split("\n", 1)[0]
    return next((sub for start, sub in _STARTS if first.startswith(start)), "plain")


def with_ca_trust(user_data: str | None, keys: list[str]) -> str:
    """multipart/mixed: osprov's CA part first, then the author's userData as it was (one part, its type
    from its first line), so cloud-init runs both. Invalid when the whole exceeds Nova's limit."""
    msg = MIMEMultipart("mixed", boundary="osprov-ssh-ca")
    msg.attach(MIMEText(ca_cloud_config(keys), "cloud-config", "utf-8"))
    if user_data:
        part = MIMEText(user_data, _subtype(user_data), "utf-8")
        part.add_header("Content-Disposition", "attachment", filename="user-data")
        msg.attach(part)
    text = msg.as_string()
    if len(text.encode()) > USER_DATA_MAX_BYTES:
        raise invalid(
            f"spec.userData with the SSH CA trust of ssh mode ca is {len(text.encode())} bytes, more than "
            f"Nova's {USER_DATA_MAX_BYTES}: shorten spec.userData — no server was created"
        )
    return text


def encode(user_data: str) -> str:
    return base64.b64encode(user_data.encode()).decode()


def identity_public_key(credential: Credential | None) -> tuple[str, str]:
    """(keypair name, public key) of the Identity whose credential the create runs on."""
    if credential is None:  # the CRD and the model refuse this: mode identityKeypair needs identityRef
        raise invalid("spec.ssh.mode identityKeypair needs spec.identityRef")
    info = kind_info("Identity")
    try:
        obj: Any = kubernetes.client.CustomObjectsApi(api_client()).get_namespaced_custom_object(
            info.group, info.version, credential.namespace, info.plural, credential.identity
        )
    except kubernetes.client.exceptions.ApiException as err:
        raise error(
            "Transient",
            f"cannot read Identity {credential.namespace}/{credential.identity} (HTTP {err.status})",
        ) from None
    key = (obj.get("spec") or {}).get("sshPublicKey")
    if not key:
        raise invalid(
            f"spec.ssh.mode identityKeypair: Identity {credential.identity} has no spec.sshPublicKey; set it "
            "(an OpenSSH public key line), or use mode ca or none — no server was created"
        )
    return keypair_name(str(obj["metadata"]["uid"])), str(key).strip()


def _same_key(a: str, b: str) -> bool:
    return a.split()[:2] == b.split()[:2]  # type and blob; the comment is not part of the key


def ensure_keypair(
    conn: openstack.connection.Connection, name: str, public_key: str, *, again: bool = True
) -> None:
    """Create-if-absent the caller's keypair `name`: Nova keypairs belong to the user whose token makes
    them, here the Identity's user. One of that name with another key is a conflict, never replaced."""
    resp = conn.compute.get(f"/os-keypairs/{name}", microversion=KEYPAIR_MICROVERSION)
    if resp.status_code != 404:
        openstack.exceptions.raise_from_response(resp)
        if not _same_key(str(resp.json()["keypair"].get("public_key") or ""), public_key):
            raise conflict(
                f"Nova keypair {name} holds another public key than the Identity's spec.sshPublicKey"
            )
        return
    body = {"keypair": {"name": name, "public_key": public_key}}
    made = conn.compute.post("/os-keypairs", json=body, microversion=KEYPAIR_MICROVERSION)
    if made.status_code == 409 and again:  # another Server of this Identity made it just now: check it
        ensure_keypair(conn, name, public_key, again=False)
        return
    openstack.exceptions.raise_from_response(made)
    log.info("keypair created", name=name)
