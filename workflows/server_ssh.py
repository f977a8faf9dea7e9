"""How SSH access reaches a new server: the Server's create-time rows (the seed: "SSH injection is a
create-time server decision"). Pure: the workflow copies the answer into its CreateServer request.

  K1 mode keypair (or spec.ssh unset)  -> key_name = spec.keypair (unset: none); userData as given
  K2 mode identityKeypair              -> key_name = the Identity's keypair (ensured by the create activity)
  K3 mode ca                           -> no key_name; the operator's CA trust goes before userData
  K4 mode none                         -> no key_name; userData as given

A rebuild sends neither key_name nor user_data (workflows/rebuild.py submits imageRef only), so Nova keeps
what the create chose and a rebuilt guest boots as the created one did.
"""

from __future__ import annotations

from dataclasses import dataclass

from osprov.api.nova import ServerSpec, SshMode


@dataclass(frozen=True)
class SshInjection:
    rule: str
    key_name: str | None = None
    identity_keypair: bool = False
    ssh_ca: bool = False


def ssh_injection(spec: ServerSpec) -> SshInjection:
    mode = spec.ssh_mode
    if mode is SshMode.IDENTITY_KEYPAIR:
        return SshInjection("K2", identity_keypair=True)
    if mode is SshMode.CA:
        return SshInjection("K3", ssh_ca=True)
    if mode is SshMode.NONE:
        return SshInjection("K4")
    return SshInjection("K1", key_name=spec.keypair)
