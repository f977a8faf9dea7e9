"""The six charts' CLI baseline (bench/identity_charts.py) is generated from the examples: it must make the
calls the hand-written Cinder sequence of P1 makes, grant each user only its own roles, and touch only
names that carry the run's suffix (the stack's own catalog is never written)."""

from __future__ import annotations

from bench.identity_charts import CHARTS, chart_calls
from bench.identity_cinder import cli_sequence
from bench.identity_common import example
from tests.support.osprov import REPO

TAG = "t0a1b2"
FREE_TEXT = {"--description", "--password"}  # values the two sequences word differently


def shape(calls: list[list[str]]) -> list[list[str]]:
    """Each call without its free text (descriptions, passwords) and without an endpoint's URL."""
    out = []
    for argv in calls:
        kept = [a for i, a in enumerate(argv) if i == 0 or argv[i - 1] not in FREE_TEXT]
        kept = [a for a in kept if a not in FREE_TEXT]
        out.append(kept[:-1] if kept[:2] == ["endpoint", "create"] else kept)
    return out


def test_the_generated_cinder_calls_are_p1s_hand_written_sequence() -> None:
    assert shape(chart_calls("cinder", TAG)) == shape(cli_sequence(TAG))


def test_heat_grants_each_user_only_its_roles_and_registers_both_services() -> None:
    calls = chart_calls("heat", TAG)
    added = [(c[c.index("--user") + 1], c[-1]) for c in calls if c[:2] == ["role", "add"]]
    assert added == [
        (f"heat-{TAG}", f"admin-{TAG}"),
        (f"heat-{TAG}", f"service-{TAG}"),
        (f"heat-{TAG}", f"member-{TAG}"),
        (f"heat_trustee-{TAG}", f"admin-{TAG}"),
        (f"heat_trustee-{TAG}", f"member-{TAG}"),
    ]
    endpoints = [(c[4], c[5]) for c in calls if c[:2] == ["endpoint", "create"]]
    assert endpoints == [
        (svc, interface)
        for svc in (f"heat-{TAG}", f"heat-cfn-{TAG}")
        for interface in ("admin", "internal", "public")
    ]
    # each endpoint's region is created (or found) before its endpoints
    assert calls.index(["region", "create", f"RegionOne-{TAG}"]) < calls.index(
        next(c for c in calls if c[:2] == ["endpoint", "create"])
    )


def test_every_name_the_calls_write_carries_the_suffix() -> None:
    for chart in CHARTS:
        for argv in chart_calls(chart, TAG):
            if argv[1] not in ("create", "add", "set"):
                continue
            named = argv[4] if argv[:2] == ["endpoint", "create"] else argv[-1]
            assert named.endswith(f"-{TAG}"), (chart, argv)
            for flag in ("--domain", "--project", "--project-domain", "--user", "--user-domain", "--region"):
                if flag in argv:
                    assert argv[argv.index(flag) + 1].endswith(f"-{TAG}"), (chart, flag, argv)


def test_the_figure_covers_every_chart_example() -> None:
    assert set(CHARTS) == {p.stem for p in (REPO / "examples" / "identity").glob("*.yaml")}
    resources = [d for chart in CHARTS for d in example(chart) if d["kind"] != "Secret"]
    assert len(resources) == 71
