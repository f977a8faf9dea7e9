"""The placement preflight's request and verdict (activities/placement.py), row by row: what a flavor's
extra specs and the operator's required traits ask of the pinned node's resource provider, and what is
reported missing."""

from __future__ import annotations

from typing import Any

import pytest

from osprov.activities.placement import Wanted, misses, wanted


def test_only_positive_unnumbered_resources_and_trait_verdicts_are_asked() -> None:
    specs = {
        "resources:CUSTOM_GPU": "2",
        "resources:VCPU": "0",  # a flavor dropping a class: not asked
        "resources1:CUSTOM_FPGA": "1",  # a numbered group: not the seed's resources:*
        "resources:CUSTOM_BAD": "x",
        "trait:CUSTOM_FAST": "required",
        "trait:CUSTOM_SLOW": "forbidden",
        "trait:CUSTOM_ODD": "preferred",
        "hw:cpu_policy": "dedicated",
    }
    assert wanted(specs, ["CUSTOM_TENANT"]) == Wanted(
        {"CUSTOM_GPU": 2}, frozenset({"CUSTOM_FAST", "CUSTOM_TENANT"}), frozenset({"CUSTOM_SLOW"})
    )


def test_no_trait_inputs_mean_no_trait_filter() -> None:
    assert wanted({}, []) == Wanted()


INV = {"CUSTOM_GPU": {"total": 4, "reserved": 1, "allocation_ratio": 1.0, "max_unit": 2}}
ROWS: list[tuple[str, Wanted, dict[str, int], set[str], list[str]]] = [
    ("fits", Wanted({"CUSTOM_GPU": 2}, frozenset({"T"})), {"CUSTOM_GPU": 1}, {"T"}, []),
    ("no-inventory", Wanted({"CUSTOM_NPU": 1}), {}, set(), ["no CUSTOM_NPU inventory"]),
    ("used-up", Wanted({"CUSTOM_GPU": 2}), {"CUSTOM_GPU": 2}, set(), ["CUSTOM_GPU: needs 2, 1 free"]),
    (
        "over-max-unit",
        Wanted({"CUSTOM_GPU": 3}),
        {},
        set(),
        ["CUSTOM_GPU: needs 3, at most 2 per allocation"],
    ),
    ("lacks-trait", Wanted(required=frozenset({"T"})), {}, set(), ["lacks required trait T"]),
    ("forbidden-trait", Wanted(forbidden=frozenset({"F"})), {}, {"F"}, ["has forbidden trait F"]),
]


@pytest.mark.parametrize(("row", "want", "usages", "traits", "missing"), ROWS, ids=[r[0] for r in ROWS])
def test_what_the_provider_lacks(
    row: str, want: Wanted, usages: dict[str, int], traits: set[str], missing: list[str]
) -> None:
    inventories: dict[str, dict[str, Any]] = INV
    assert misses(want, inventories, usages, traits) == missing
