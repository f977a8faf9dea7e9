"""AES-GCM payload encryption for every Temporal payload (and failure attributes), with key rotation.

Keys come from the environment (a Kubernetes Secret in production): OSPROV_CODEC_KEYS is a
comma-separated list of `keyid:base64(32 bytes)`; OSPROV_CODEC_KEY_ID names the key used to encrypt.
Each encrypted payload records its key ID, so a rotated-out key keeps decrypting old histories until it
is removed. Without keys, payloads are stored as plain JSON (the local stack's default).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Sequence

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

ENCODING = b"binary/encrypted"
KEY_ID = "encryption-key-id"


class CodecConfigError(ValueError):
    """The codec keys are malformed (the message never contains key material)."""


def parse_keys(spec: str) -> dict[str, bytes]:
    keys: dict[str, bytes] = {}
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        kid, sep, b64 = item.partition(":")
        if not sep or not kid:
            raise CodecConfigError("OSPROV_CODEC_KEYS entries must look like keyid:base64key")
        try:
            key = base64.b64decode(b64, validate=True)
        except ValueError:
            raise CodecConfigError(f"key {kid!r} is not valid base64") from None
        if len(key) != 32:
            raise CodecConfigError(f"key {kid!r} must be 32 bytes (AES-256), got {len(key)}")
        keys[kid] = key
    return keys


class AesGcmCodec(PayloadCodec):
    def __init__(self, keys: dict[str, bytes], active: str) -> None:
        if active not in keys:
            raise CodecConfigError(f"OSPROV_CODEC_KEY_ID {active!r} is not among OSPROV_CODEC_KEYS")
        self._keys = {kid: AESGCM(k) for kid, k in keys.items()}
        self._active = active

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        out = []
        for p in payloads:
            nonce = os.urandom(12)
            sealed = self._keys[self._active].encrypt(nonce, p.SerializeToString(), None)
            out.append(
                Payload(metadata={"encoding": ENCODING, KEY_ID: self._active.encode()}, data=nonce + sealed)
            )
        return out

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        out = []
        for p in payloads:
            if p.metadata.get("encoding") != ENCODING:
                out.append(p)  # written before encryption was enabled: readable as is
                continue
            kid = p.metadata.get(KEY_ID, b"").decode()
            aes = self._keys.get(kid)
            if aes is None:
                raise CodecConfigError(
                    f"payload encrypted with unknown key {kid!r}; add it to OSPROV_CODEC_KEYS"
                )
            out.append(Payload.FromString(aes.decrypt(p.data[:12], p.data[12:], None)))
        return out


def codec_from_env() -> AesGcmCodec | None:
    spec = os.environ.get("OSPROV_CODEC_KEYS", "").strip()
    if not spec:
        return None
    keys = parse_keys(spec)
    active = os.environ.get("OSPROV_CODEC_KEY_ID", "").strip() or next(iter(keys))
    return AesGcmCodec(keys, active)


def new_key() -> str:
    """A fresh base64 AES-256 key (`python -m osprov.runtime.codec` prints one)."""
    return base64.b64encode(AESGCM.generate_key(bit_length=256)).decode()


if __name__ == "__main__":
    print(new_key())
