"""The schema of the Glance image properties osprov reads, and their provider-neutral translation.

Glance's standard properties (`architecture`, `os_type`, `os_distro`, `os_version`) and osprov's own,
under the `osprov:` prefix:

| property                    | becomes (ImageSpec)          | values                                  |
|-----------------------------|------------------------------|-----------------------------------------|
| architecture                | architecture                 | x86_64, aarch64, ppc64le, s390x, riscv64 |
| os_type                     | os.kernel                    | linux, windows                          |
| os_distro, os_version       | os.distro, os.version        | lower-case word; free text              |
| osprov:os:family|variant|codename | os.family, …           | lower-case word                         |
| osprov:package:<name>       | packages[<name>]             | a version                               |
| osprov:gpu:vendor           | gpu.vendor                   | NVIDIA, AMD, Intel                      |
| osprov:gpu:driver, :models  | gpu.driver, gpu.models       | a version; comma-separated models       |
| osprov:virtualization       | virtualization               | virtualized, baremetal, any             |
| osprov:tag:<key>            | tags[<key>]                  | free text                               |
| osprov:signature            | (verified)                   | base64 ECDSA signature of os_hash_value |

Any other `osprov:` property, a value outside its set, or GPU details without a vendor make the image
invalid: it is not offered, and the inventory run reports why. Properties without the prefix (hw_*,
os_hash_*, …) are Glance's or Nova's business and are ignored.

Pure: workflows import it inside Temporal's sandbox.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from osprov.api.region import (
    Architecture,
    GPUVendor,
    ImageGPU,
    ImageOS,
    OSKernel,
    Virtualization,
)

PREFIX = "osprov:"
SIGNATURE = "osprov:signature"
PACKAGE_PREFIX = "osprov:package:"
TAG_PREFIX = "osprov:tag:"
GPU_VENDOR, GPU_DRIVER, GPU_MODELS = "osprov:gpu:vendor", "osprov:gpu:driver", "osprov:gpu:models"
VIRTUALIZATION = "osprov:virtualization"
OS_WORDS = {"osprov:os:family": "family", "osprov:os:variant": "variant", "osprov:os:codename": "codename"}
VALUE_MAX = 255
_WORD = re.compile(r"^[a-z0-9][-a-z0-9._]{0,62}$")
_KEY = re.compile(r"^[A-Za-z0-9][-A-Za-z0-9_.+]{0,62}$")
_TEXT = re.compile(r"^[^\x00-\x1f\x7f-\x9f]{1,255}$")


@dataclass(frozen=True)
class Translated:
    """The neutral metadata of one image, or the problems that keep it from being offered."""

    architecture: Architecture | None = None  # None: the image does not say
    os: ImageOS = field(default_factory=ImageOS)
    packages: dict[str, str] = field(default_factory=dict)
    gpu: ImageGPU | None = None
    virtualization: Virtualization = Virtualization.ANY
    tags: dict[str, str] = field(default_factory=dict)
    signature: str | None = None
    problems: tuple[str, ...] = ()


class _Reader:
    def __init__(self, properties: dict[str, str]) -> None:
        self.props = properties
        self.problems: list[str] = []

    def choice(
        self, key: str, allowed: type[Architecture | OSKernel | GPUVendor | Virtualization]
    ) -> str | None:
        value = self.props.get(key)
        if value is None:
            return None
        if value not in {m.value for m in allowed}:
            known = ", ".join(m.value for m in allowed)
            self.problems.append(f"{key}={value[:64]!r} is not one of {known}")
            return None
        return value

    def matching(self, key: str, pattern: re.Pattern[str], what: str) -> str | None:
        value = self.props.get(key)
        if value is not None and not pattern.fullmatch(value):
            self.problems.append(f"{key} must be {what}")
            return None
        return value


def translate(properties: dict[str, str]) -> Translated:
    """Validate the properties against the schema above and translate them (problems: not offered)."""
    r = _Reader(properties)
    arch = r.choice("architecture", Architecture)
    kernel = r.choice("os_type", OSKernel)
    os_fields = {
        "distro": r.matching("os_distro", _WORD, "a lower-case word (letters, digits, - . _)"),
        "version": r.matching("os_version", _TEXT, "text of at most 255 characters"),
    }
    packages: dict[str, str] = {}
    tags: dict[str, str] = {}
    for key, value in sorted(properties.items()):
        if not key.startswith(PREFIX):
            continue
        if key in OS_WORDS:
            os_fields[OS_WORDS[key]] = r.matching(key, _WORD, "a lower-case word (letters, digits, - . _)")
        elif key.startswith((PACKAGE_PREFIX, TAG_PREFIX)):
            name = key.split(":", 2)[2]
            if not _KEY.fullmatch(name) or not _TEXT.fullmatch(value):
                r.problems.append(f"{key}: a name of letters, digits, - _ . + and a value of text are needed")
            else:
                (packages if key.startswith(PACKAGE_PREFIX) else tags)[name] = value
        elif key not in (SIGNATURE, GPU_VENDOR, GPU_DRIVER, GPU_MODELS, VIRTUALIZATION):
            r.problems.append(f"{key} is not an osprov image property")
    vendor = r.choice(GPU_VENDOR, GPUVendor)
    driver = r.matching(GPU_DRIVER, _TEXT, "text of at most 255 characters")
    models_text = r.matching(GPU_MODELS, _TEXT, "a comma-separated list of models")
    gpu = None
    if vendor is not None:
        models = [m.strip() for m in (models_text or "").split(",") if m.strip()]
        gpu = ImageGPU(vendor=GPUVendor(vendor), driver=driver, models=models)
    elif GPU_DRIVER in properties or GPU_MODELS in properties:
        r.problems.append(f"{GPU_DRIVER} and {GPU_MODELS} need {GPU_VENDOR}")
    virtualization = r.choice(VIRTUALIZATION, Virtualization)
    signature = properties.get(SIGNATURE)
    if signature is not None and len(signature) > 1024:
        r.problems.append(f"{SIGNATURE} is longer than 1024 characters")
        signature = None
    return Translated(
        architecture=Architecture(arch) if arch else None,
        os=ImageOS(kernel=OSKernel(kernel) if kernel else None, **{k: v for k, v in os_fields.items() if v}),
        packages=packages,
        gpu=gpu,
        virtualization=Virtualization(virtualization) if virtualization else Virtualization.ANY,
        tags=tags,
        signature=signature,
        problems=tuple(r.problems),
    )


# What a signature signs: Glance's own digest of the image data (os_hash_algo, os_hash_value: computed by
# Glance at upload, so a signature is bound to the bits Glance serves, not to a property anyone can edit).
# ECDSA with SHA-256 over these bytes; the property holds the DER signature, base64-encoded.
SIGNED_HASH_ALGOS = frozenset({"sha256", "sha384", "sha512"})


def signed_message(hash_algo: str, hash_value: str) -> bytes:
    return f"{hash_algo}:{hash_value}".encode()
