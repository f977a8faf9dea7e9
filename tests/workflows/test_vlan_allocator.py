"""The VLAN allocator's rule (workflows/vlan_allocator.allocate), row by row: pure, no Temporal."""

from __future__ import annotations

from osprov.api import vlan_io as io
from osprov.workflows.vlan_allocator import allocate

RANGE = io.VlanRange(first=10, last=12)


def ask(owner: str, seq: int = 1, vlan_range: io.VlanRange = RANGE) -> io.Allocate:
    return io.Allocate(owner=owner, physical_network="physnet1", range=vlan_range, seq=seq)


def test_the_lowest_free_id_is_given_and_recorded() -> None:
    table: dict[str, int] = {"a": 10}
    grant = allocate(table, ask("b"), "physnet1")
    assert (grant.segmentation_id, grant.seq, grant.owner) == (11, 1, "b") and table == {"a": 10, "b": 11}


def test_a_repeated_request_gets_the_same_id_exactly_once() -> None:
    table: dict[str, int] = {}
    first = allocate(table, ask("a"), "physnet1")
    again = allocate(table, ask("a", seq=2), "physnet1")
    assert first.segmentation_id == again.segmentation_id == 10 and table == {"a": 10} and again.seq == 2


def test_an_id_already_held_is_kept_even_when_the_range_moved() -> None:
    table = {"a": 5}
    assert allocate(table, ask("a"), "physnet1").segmentation_id == 5


def test_exhaustion_names_the_range_and_records_nothing() -> None:
    table = {"a": 10, "b": 11, "c": 12}
    grant = allocate(table, ask("d"), "physnet1")
    assert (
        grant.segmentation_id is None
        and "no free VLAN ID in range 10-12 on physical network physnet1" in (grant.message)
    )
    assert "d" not in table


def test_a_released_id_is_given_again() -> None:
    table = {"a": 10, "b": 11, "c": 12}
    table.pop("b")
    assert allocate(table, ask("d"), "physnet1").segmentation_id == 11


def test_an_id_neutron_shows_in_use_is_never_given() -> None:
    table: dict[str, int] = {"a": 10}
    req = io.Allocate(owner="b", physical_network="physnet1", range=RANGE, seq=1, taken=[10, 11])
    assert allocate(table, req, "physnet1").segmentation_id == 12
