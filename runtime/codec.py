"""AES-GCM payload encryption for every Temporal payload (and failure attributes), with key rotation.

Keys come from the environment (a Kubernetes Secret in production): OSPROV_CODEC_KEYS is a
comma-separated list of `keyid:base64(32 bytes)`; OSPROV_CODEC_KEY_ID names the key used to encrypt.
Each encrypted payload records its key ID, so a rotated-out key keeps decrypting old histories until it
is removed. Without keys, payloads are stored as plain JSON (the local stack's default).

Format 2 (written now) authenticates the encoding, the format and the key ID as AES-GCM associated
data, so a payload re-labelled with another key ID or format fails to decrypt. Format 1 (no
`encryption-format` metadata, no associated data) is what osprov wrote before; it stays readable so
running workflows keep replaying. A process holding keys accepts only encrypted payloads (fail closed):
a client without the codec cannot make the worker act. Only the codec server, which merely shows
histories, passes plaintext through (`accept_plaintext`).
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

ENCODING = b"binary/encrypted"
KEY_ID = "encryption-key-id"
FORMAT = "encryption-format"
CURRENT_FORMAT = b"2"
NONCE_BYTES = 12
TAG_BYTES = 16
KEY_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class CodecConfigError(ValueError):
    """The codec keys are malformed (the message never contains key material)."""


class PayloadRejected(ValueError):
    """A payload this process will not decode: plaintext, unknown key, unknown format or tampered."""


def parse_keys(spec: str) -> dict[str, bytes]:
    keys: dict[str, bytes] = {}
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        kid, sep, b64 = item.partition(":")
        if not sep or not kid:
            raise CodecConfigError("OSPROV_CODEC_KEYS entries must look like keyid:base64key")
        if not KEY_ID_PATTERN.fullmatch(kid):
            raise CodecConfigError(
                f"key ID {kid[:64]!r} must be 1-64 letters, digits, '.', '_' or '-' (starting alphanumeric)"
            )
        if kid in keys:
            raise CodecConfigError(
                f"key ID {kid!r} appears twice in OSPROV_CODEC_KEYS: every key needs its own ID"
            )
        try:
            key = base64.b64decode(b64, validate=True)
        except binascii.Error:
            raise CodecConfigError(f"key {kid!r} is not valid base64") from None
        if len(key) != 32:
            raise CodecConfigError(f"key {kid!r} must be 32 bytes (AES-256), got {len(key)}")
        keys[kid] = key
    return keys


def associated_data(fmt: bytes, kid: str) -> bytes | None:
    """What AES-GCM authenticates besides the ciphertext: nothing in format 1."""
    if fmt == b"1":
        return None
    return b"\x00".join((b"osprov-payload", ENCODING, fmt, kid.encode()))


class AesGcmCodec(PayloadCodec):
    def __init__(self, keys: dict[str, bytes], active: str, *, accept_plaintext: bool = False) -> None:
        if active not in keys:
            raise CodecConfigError(f"OSPROV_CODEC_KEY_ID {active!r} is not among OSPROV_CODEC_KEYS")
        self._keys = {kid: AESGCM(k) for kid, k in keys.items()}
        self._active = active
        self._accept_plaintext = accept_plaintext

    @property
    def key_id(self) -> str:
        """The key new payloads are encrypted with."""
        return self._active

    @property
    def key_ids(self) -> list[str]:
        """Every key this codec decrypts with (IDs only: safe to log)."""
        return sorted(self._keys)

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        aad = associated_data(CURRENT_FORMAT, self._active)
        out = []
        for p in payloads:
            nonce = os.urandom(NONCE_BYTES)
            sealed = self._keys[self._active].encrypt(nonce, p.SerializeToString(), aad)
            metadata = {"encoding": ENCODING, KEY_ID: self._active.encode(), FORMAT: CURRENT_FORMAT}
            out.append(Payload(metadata=metadata, data=nonce + sealed))
        return out

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self._decode_one(p) for p in payloads]

    def _decode_one(self, p: Payload) -> Payload:
        if p.metadata.get("encoding") != ENCODING:
            if self._accept_plaintext:
                return p
            raise PayloadRejected(
                "payload is not encrypted: with OSPROV_CODEC_KEYS set, only payloads encrypted by osprov "
                "are accepted (a client without the codec wrote it)"
            )
        kid = p.metadata.get(KEY_ID, b"").decode("utf-8", "replace")
        aes = self._keys.get(kid)
        if aes is None:
            raise PayloadRejected(
                f"payload encrypted with unknown key {kid[:64]!r}; add it to OSPROV_CODEC_KEYS"
            )
        fmt = p.metadata.get(FORMAT, b"1")
        if fmt not in (b"1", CURRENT_FORMAT):
            raise PayloadRejected(f"payload in unknown encryption format {fmt[:16]!r}")
        if len(p.data) < NONCE_BYTES + TAG_BYTES:
            raise PayloadRejected(f"payload under key {kid!r} is truncated")
        try:
            plain = aes.decrypt(p.data[:NONCE_BYTES], p.data[NONCE_BYTES:], associated_data(fmt, kid))
        except InvalidTag:
            raise PayloadRejected(
                f"payload under key {kid!r} failed authentication (altered, or labelled with another key ID)"
            ) from None
        return Payload.FromString(plain)


def codec_from_env(*, accept_plaintext: bool = False) -> AesGcmCodec | None:
    spec = os.environ.get("OSPROV_CODEC_KEYS", "").strip()
    if not spec:
        return None
    keys = parse_keys(spec)
    if not keys:
        raise CodecConfigError("OSPROV_CODEC_KEYS is set but names no key")
    active = os.environ.get("OSPROV_CODEC_KEY_ID", "").strip() or next(iter(keys))
    return AesGcmCodec(keys, active, accept_plaintext=accept_plaintext)


def new_key() -> str:
    """A fresh base64 AES-256 key (`python -m osprov.runtime.codec` prints one)."""
    return base64.b64encode(AESGCM.generate_key(bit_length=256)).decode()


if __name__ == "__main__":
    print(new_key())
