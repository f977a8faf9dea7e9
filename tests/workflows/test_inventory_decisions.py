"""The region inventory's decisions, one row per rule by its label (workflows/inventory/*.py docstrings):
F (flavors), V (volume classes), K (a Volume's class check), I (images), P (image properties), and the
plan every inventory shares. Pure functions, no Temporal."""

from __future__ import annotations

from typing import Any

import pytest

from osprov.api import inventory_io as io
from osprov.api.image_properties import translate
from osprov.api.inventory_config import InventoryConfigSpec
from osprov.api.region import Architecture, GPUVendor, Virtualization
from osprov.workflows.inventory.flavors import flavor_export
from osprov.workflows.inventory.images import image_export
from osprov.workflows.inventory.plan import Export, Plan, plan
from osprov.workflows.inventory.volume_classes import check_class, volume_class_export


def config(**spec: Any) -> InventoryConfigSpec:
    return InventoryConfigSpec.model_validate(spec)


def flavor(fid: str = "f1", name: str = "m1.small", **extra: Any) -> io.NovaFlavor:
    fields: dict[str, Any] = {"vcpus": 2, "ram_mib": 2048, "disk_gib": 10, "is_public": True}
    return io.NovaFlavor(id=fid, name=name, **(fields | extra))


def only(export: Export) -> dict[str, Any]:
    [spec] = export.objects.values()
    return spec


# --- flavors ----------------------------------------------------------------------------------------------
ARCH = {"cpu.architecture": "aarch64"}
IRONIC = {"resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:CUSTOM_BAREMETAL_GOLD": "1"}

# id, flavor, configuration, the published spec's fields (a subset)
FLAVOR_ROWS: list[tuple[str, io.NovaFlavor, InventoryConfigSpec | None, dict[str, Any]]] = [
    ("F2-fallback-x86_64", flavor(), None, {"architecture": "x86_64", "baremetal": False}),
    ("F2-configured-default", flavor(), config(defaultArchitecture="s390x"), {"architecture": "s390x"}),
    (
        "F2-extra-spec-beats-default",
        flavor(extra_specs=ARCH),
        config(defaultArchitecture="s390x"),
        {"architecture": "aarch64"},
    ),
    (
        "F2-override-beats-extra-spec",
        flavor(extra_specs=ARCH),
        config(flavors=[{"id": "f1", "architecture": "x86_64"}]),
        {"architecture": "x86_64"},
    ),
    (
        "F3-unknown-extra-spec-overridden",
        flavor(extra_specs={"cpu.architecture": "sparc"}),
        config(flavors=[{"id": "f1", "architecture": "aarch64"}]),
        {"architecture": "aarch64"},
    ),
    ("F4-ironic-convention", flavor(extra_specs=IRONIC), None, {"baremetal": True}),
    (
        "F4-custom-class-with-vcpus-is-not-baremetal",
        flavor(extra_specs={"resources:CUSTOM_X": "1"}),
        None,
        {"baremetal": False},
    ),
    (
        "F4-override",
        flavor(extra_specs=IRONIC),
        config(flavors=[{"id": "f1", "baremetal": False}]),
        {"baremetal": False},
    ),
    (
        "F5-pci-alias-count",
        flavor(extra_specs={"pci_passthrough:alias": "a100:2"}),
        None,
        {"gpu": {"count": 2}},
    ),
    ("F5-vgpu", flavor(extra_specs={"resources:VGPU": "1"}), None, {"gpu": {"count": 1}}),
    (
        "F5-override-enriches-nova-count",
        flavor(extra_specs={"pci_passthrough:alias": "a100:2"}),
        config(flavors=[{"id": "f1", "gpu": {"vendor": "NVIDIA", "model": "A100", "memoryGiB": 80}}]),
        {"gpu": {"vendor": "NVIDIA", "model": "A100", "count": 2, "memoryGiB": 80}},
    ),
    (
        "F5-override-count-wins",
        flavor(extra_specs={"pci_passthrough:alias": "a100:2"}),
        config(flavors=[{"id": "f1", "gpu": {"model": "A100", "count": 4}}]),
        {"gpu": {"model": "A100", "count": 4}},
    ),
    ("F5-no-gpu", flavor(), None, {"gpu": None}),
]


@pytest.mark.parametrize(
    ("flav", "conf", "want"), [r[1:] for r in FLAVOR_ROWS], ids=[r[0] for r in FLAVOR_ROWS]
)
def test_flavor_rows(flav: io.NovaFlavor, conf: InventoryConfigSpec | None, want: dict[str, Any]) -> None:
    spec = only(flavor_export([flav], conf))
    assert {k: spec.get(k) for k in want} == want
    assert (spec["id"], spec["vcpus"], spec["memoryMiB"], spec["diskGiB"]) == ("f1", 2, 2048, 10)


def test_F1_private_and_disabled_flavors_are_not_offered() -> None:
    export = flavor_export([flavor("a", is_public=False), flavor("b", name="x", disabled=True)], None)
    assert export == Export()


def test_F3_unknown_architecture_is_left_out_with_the_reason() -> None:
    export = flavor_export([flavor(extra_specs={"cpu.architecture": "sparc"})], None)
    assert export.objects == {}
    assert export.left_out == ("flavor m1.small (f1): cpu.architecture='sparc' is not a known architecture",)


def test_F6_names_are_object_names_and_collisions_carry_the_id() -> None:
    flavors = [
        flavor("1", "M1.Small"),
        flavor("2", "gpu_large"),
        flavor("3", "Gpu-Large"),
        flavor("4", "!!!"),
    ]
    assert list(flavor_export(flavors, None).objects) == ["4", "gpu-large-2", "gpu-large-3", "m1.small"]


# --- volume classes ---------------------------------------------------------------------------------------
FAST = io.CinderType(id="t-fast", name="Fast", description="NVMe pool")
SLOW = io.CinderType(id="t-slow", name="slow")


@pytest.mark.parametrize(
    "conf",
    [
        None,
        config(),
        config(volumeClasses={}),
        config(volumeClasses={"selector": {}}),
        config(volumeClasses={"selector": {"ids": []}}),
    ],
    ids=["no-config", "no-volumeClasses", "no-selector", "no-ids", "empty-ids"],
)
def test_V1_fail_closed_offers_nothing(conf: InventoryConfigSpec | None) -> None:
    assert volume_class_export([FAST, SLOW], conf) == Export()


def test_V2_V4_V5_only_listed_types_enriched_and_named() -> None:
    conf = config(
        volumeClasses={
            "selector": {"ids": ["t-fast"]},
            "classes": [
                {
                    "id": "t-fast",
                    "name": "premium",
                    "minCapacityGiB": 10,
                    "maxCapacityGiB": 100,
                    "supportedFlavors": {"ids": ["f1"]},
                    "media": "nvme",
                    "performance": {"maxIOPS": 5000},
                    "encrypted": True,
                },
                {"id": "t-slow", "name": "cheap"},  # V4: not in the selector, whatever it says
            ],
        }
    )
    assert volume_class_export([FAST, SLOW], conf).objects == {
        "premium": {
            "volumeTypeID": "t-fast",
            "volumeType": "Fast",
            "description": "NVMe pool",
            "minCapacityGiB": 10,
            "maxCapacityGiB": 100,
            "supportedFlavors": ["f1"],
            "media": "nvme",
            "performance": {"maxIOPS": 5000},
            "encrypted": True,
        }
    }
    plain = config(
        volumeClasses={"selector": {"ids": ["t-slow"]}, "classes": [{"id": "t-slow", "supportedFlavors": {}}]}
    )
    assert volume_class_export([FAST, SLOW], plain).objects == {
        "slow": {"volumeTypeID": "t-slow", "volumeType": "slow", "encrypted": False}  # unrestricted
    }


def test_V3_an_unknown_id_is_reported() -> None:
    export = volume_class_export([FAST], config(volumeClasses={"selector": {"ids": ["t-gone", "t-fast"]}}))
    assert list(export.objects) == ["fast"]
    assert export.left_out == ("volume type t-gone: listed in selector.ids but Cinder has no such type",)


def test_capacity_bounds_are_positive_and_ordered() -> None:
    with pytest.raises(ValueError, match="maxCapacityGiB must be at least minCapacityGiB"):
        config(volumeClasses={"classes": [{"id": "t", "minCapacityGiB": 10, "maxCapacityGiB": 5}]})
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        config(volumeClasses={"classes": [{"id": "t", "minCapacityGiB": 0}]})


OFFER = io.Offer(
    enabled=True,
    volume_classes=[
        io.OfferedVolumeClass(
            name="premium", volume_type_id="t-fast", min_capacity_gib=10, max_capacity_gib=100
        ),
        io.OfferedVolumeClass(name="slow", volume_type_id="t-slow"),
    ],
)
OFF = io.Offer(enabled=False)

# id, volumeClass, volumeClassID, size, offer, rule, ok, volume type
CHECK_ROWS: list[tuple[str, str | None, str | None, int, io.Offer, str, bool, str | None]] = [
    ("K1-no-class", None, None, 5, OFFER, "K1", True, None),
    ("K2-type-id-without-inventory", None, "t-any", 5, OFF, "K2", True, "t-any"),
    ("K3-class-without-inventory", "premium", None, 5, OFF, "K3", False, None),
    ("K4-class-not-offered", "gold", None, 50, OFFER, "K4", False, None),
    ("K4-type-id-not-offered", None, "t-other", 50, OFFER, "K4", False, None),
    ("K5-below-min", "premium", None, 9, OFFER, "K5", False, None),
    ("K5-above-max", "premium", None, 101, OFFER, "K5", False, None),
    ("K5-type-id-above-max", None, "t-fast", 101, OFFER, "K5", False, None),
    ("K6-within-bounds", "premium", None, 10, OFFER, "K6", True, "t-fast"),
    ("K6-type-id-within-bounds", None, "t-fast", 100, OFFER, "K6", True, "t-fast"),
    ("K6-unbounded", "slow", None, 5000, OFFER, "K6", True, "t-slow"),
]


@pytest.mark.parametrize(
    ("cls", "cid", "size", "offer", "rule", "ok", "vtype"),
    [r[1:] for r in CHECK_ROWS],
    ids=[r[0] for r in CHECK_ROWS],
)
def test_volume_class_check_rows(
    cls: str | None, cid: str | None, size: int, offer: io.Offer, rule: str, ok: bool, vtype: str | None
) -> None:
    verdict = check_class(cls, cid, size, offer)
    assert (verdict.rule, verdict.ok, verdict.volume_type) == (rule, ok, vtype)
    assert bool(verdict.message) == (not ok)


def test_refusals_say_what_to_fix() -> None:
    assert check_class("gold", None, 5, OFFER).message == (
        "spec.volumeClass 'gold' is not a VolumeClass this region offers (offered: premium, slow; "
        "`kubectl get volumeclasses`); choose one of them"
    )
    assert check_class("premium", None, 101, OFFER).message == (
        "spec.size 101 GiB is outside VolumeClass 'premium''s bounds (10–100 GiB); change the size or the class"
    )


# --- images -----------------------------------------------------------------------------------------------
def image(iid: str = "img-1", **extra: Any) -> io.GlanceImage:
    fields: dict[str, Any] = {"name": "ubuntu", "status": "active", "visibility": "public", "min_disk_gib": 3}
    return io.GlanceImage(id=iid, **(fields | extra))


SIGNED = config(images={"signingPublicKey": "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"})
REQUIRED = config(
    images={
        "signingPublicKey": "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
        "requireSignature": True,
    }
)

# id, image, configuration, offered?, fields of the spec (when offered) or the reason's end
IMAGE_ROWS: list[tuple[str, io.GlanceImage, InventoryConfigSpec | None, bool, Any]] = [
    ("I1-private", image(visibility="private"), None, False, None),
    ("I1-queued", image(status="queued"), None, False, None),
    (
        "I2-bad-property",
        image(properties={"osprov:virtualization": "cloud"}),
        None,
        False,
        "is not one of virtualized, baremetal, any",
    ),
    (
        "I3-invalid-signature",
        image(signature="invalid"),
        SIGNED,
        False,
        "does not verify against the image signing key",
    ),
    (
        "I4-unsigned-but-required",
        image(signature="absent"),
        REQUIRED,
        False,
        "the configuration requires a signature",
    ),
    ("I5-valid-signature", image(signature="valid"), REQUIRED, True, {"verified": True}),
    ("I6-unsigned", image(signature="absent"), SIGNED, True, {"verified": False}),
    ("I6-no-key", image(signature="unchecked"), None, True, {"verified": False}),
    ("I7-fallback-x86_64", image(), None, True, {"architecture": "x86_64"}),
    (
        "I7-configured-default",
        image(),
        config(defaultArchitecture="aarch64"),
        True,
        {"architecture": "aarch64"},
    ),
    (
        "I7-glance-property-wins",
        image(properties={"architecture": "ppc64le"}),
        config(defaultArchitecture="aarch64"),
        True,
        {"architecture": "ppc64le", "minDiskGiB": 3},
    ),
]


@pytest.mark.parametrize(
    ("img", "conf", "offered", "want"), [r[1:] for r in IMAGE_ROWS], ids=[r[0] for r in IMAGE_ROWS]
)
def test_image_rows(img: io.GlanceImage, conf: InventoryConfigSpec | None, offered: bool, want: Any) -> None:
    export = image_export([img], conf)
    if offered:
        spec = export.objects["img-1"]
        assert {k: spec[k] for k in want} == want
        return
    assert export.objects == {}
    assert (export.left_out == ()) == (want is None), export.left_out
    if want:
        [reason] = export.left_out
        assert reason.startswith("image ubuntu (img-1): ") and reason.endswith(want)


# --- image properties (api/image_properties.py) -------------------------------------------------------------
FULL = {
    "architecture": "aarch64",
    "os_type": "linux",
    "os_distro": "ubuntu",
    "os_version": "24.04",
    "osprov:os:family": "debian",
    "osprov:os:codename": "noble",
    "osprov:package:kubernetes": "v1.31.2",
    "osprov:gpu:vendor": "NVIDIA",
    "osprov:gpu:driver": "550.90",
    "osprov:gpu:models": "A100, H100",
    "osprov:virtualization": "virtualized",
    "osprov:tag:team": "platform",
    "hw_disk_bus": "scsi",  # Nova's: ignored
}


def test_P_translation_into_neutral_metadata() -> None:
    t = translate(FULL)
    assert t.problems == ()
    assert t.architecture is Architecture.AARCH64
    assert t.os.to_k8s() == {
        "kernel": "linux",
        "family": "debian",
        "distro": "ubuntu",
        "codename": "noble",
        "version": "24.04",
    }
    assert t.packages == {"kubernetes": "v1.31.2"} and t.tags == {"team": "platform"}
    assert t.gpu is not None and t.gpu.vendor is GPUVendor.NVIDIA and t.gpu.models == ["A100", "H100"]
    assert t.virtualization is Virtualization.VIRTUALIZED


@pytest.mark.parametrize(
    ("props", "problem"),
    [
        (
            {"architecture": "sparc"},
            "architecture='sparc' is not one of x86_64, aarch64, ppc64le, s390x, riscv64",
        ),
        ({"os_type": "bsd"}, "os_type='bsd' is not one of linux, windows"),
        ({"os_distro": "Ubuntu Linux"}, "os_distro must be a lower-case word (letters, digits, - . _)"),
        ({"osprov:gpu:models": "A100"}, "osprov:gpu:driver and osprov:gpu:models need osprov:gpu:vendor"),
        ({"osprov:gpu:vendor": "3dfx"}, "osprov:gpu:vendor='3dfx' is not one of NVIDIA, AMD, Intel"),
        ({"osprov:kernel": "6.8"}, "osprov:kernel is not an osprov image property"),
        (
            {"osprov:package:bad name": "1"},
            "osprov:package:bad name: a name of letters, digits, - _ . + and a value of text are needed",
        ),
        ({"osprov:signature": "x" * 1025}, "osprov:signature is longer than 1024 characters"),
    ],
)
def test_P_schema_problems(props: dict[str, str], problem: str) -> None:
    assert translate(props).problems == (problem,)


# --- the plan ---------------------------------------------------------------------------------------------
def test_plan_creates_replaces_deletes_and_leaves_equal_objects_alone() -> None:
    wanted = Export(objects={"a": {"v": 1}, "b": {"v": 2}, "c": {"v": 3}})
    published = [
        io.Published(name="b", uid="u-b", spec={"v": 2}),
        io.Published(name="c", uid="u-c", spec={"v": 0}),
        io.Published(name="d", uid="u-d", spec={"v": 4}),
    ]
    assert plan(wanted, published) == Plan(
        create=(("a", {"v": 1}),), replace=(("c", {"v": 3}),), delete=(published[2],)
    )
    assert plan(wanted, [io.Published(name=n, uid=n, spec=s) for n, s in wanted.objects.items()]).empty
