"""Image signatures: ECDSA (SHA-256) over Glance's digest of the image data (api/image_properties.py).

The operator configures the public key (InventoryConfig images.signingPublicKey); whoever publishes images
signs `signed_message(os_hash_algo, os_hash_value)` with the private key and stores the DER signature,
base64-encoded, in the image's osprov:signature property. Only verification happens here.
"""

from __future__ import annotations

import base64
import binascii
from functools import lru_cache

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from osprov.api.image_properties import SIGNED_HASH_ALGOS, signed_message
from osprov.api.inventory_io import SignatureCheck


class SigningKeyError(ValueError):
    """The configured key is not a PEM ECDSA public key."""


@lru_cache(maxsize=8)
def load_key(pem: str) -> ec.EllipticCurvePublicKey:
    try:
        key = serialization.load_pem_public_key(pem.encode())
    except (ValueError, UnsupportedAlgorithm):
        raise SigningKeyError("images.signingPublicKey is not a PEM public key") from None
    if not isinstance(key, ec.EllipticCurvePublicKey):
        raise SigningKeyError("images.signingPublicKey is not an ECDSA public key")
    return key


def check(
    key: ec.EllipticCurvePublicKey | None, signature: str | None, hash_algo: str, hash_value: str
) -> SignatureCheck:
    """valid | invalid | absent (no signature) | unchecked (no key configured)."""
    if not signature:
        return "absent"
    if key is None:
        return "unchecked"
    if hash_algo not in SIGNED_HASH_ALGOS or not hash_value:
        return "invalid"  # Glance kept no digest we trust: the signature cannot bind to the data
    try:
        der = base64.b64decode(signature, validate=True)
        key.verify(der, signed_message(hash_algo, hash_value), ec.ECDSA(hashes.SHA256()))
    except (binascii.Error, ValueError, InvalidSignature):
        return "invalid"
    return "valid"
