"""bench/report.py and the docs regeneration of `python -m bench` (no stack: figures made up here)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.__main__ import BEGIN, END, regenerate_doc
from bench.report import Figure, read, save


def test_a_figure_is_osprov_over_its_baseline_and_saved_as_one_json_object(tmp_path: Path) -> None:
    fast = Figure("P4", "create", 2.6, 2.0, "ratio <= 1.3", extra={"requests": 4})
    bound = Figure("P5", "resume", 4.2, None, "<= 5 s", met=True)
    assert fast.ratio == 1.3 and bound.ratio is None
    save([fast, bound], tmp_path / "latest.jsonl")
    rows = read(tmp_path / "latest.jsonl")
    assert [r["metric"] for r in rows] == ["P4", "P5"]
    assert rows[0]["ratio"] == 1.3 and rows[0]["osprov_s"] == 2.6 and rows[0]["baseline_s"] == 2.0
    assert rows[0]["extra"] == {"requests": 4} and isinstance(rows[0]["load"], float)
    assert json.loads((tmp_path / "latest.jsonl").read_text().splitlines()[1])["met"] is True
    # A later `--only` run keeps the other metrics' rows: each row makes its Figure again.
    assert [Figure(**{k: v for k, v in r.items() if k != "ratio"}) for r in rows] == [fast, bound]


def test_the_latest_run_section_is_inserted_once_then_replaced(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\nIntro.\n\n## Volume\n\nOlder analysis.\n")
    regenerate_doc([Figure("P1", "cinder example", 3.0, 60.0, "ratio <= 0.05", met=True)], "then", doc)
    first = doc.read_text()
    assert first.index("Intro.") < first.index(BEGIN) < first.index(END) < first.index("## Volume")
    assert "| P1 | cinder example | 3.00 | 60.00 | 0.050 |" in first
    regenerate_doc([Figure("P1", "cinder example", 6.0, 60.0, "ratio <= 0.05", met=False)], "now", doc)
    second = doc.read_text()
    assert second.count(BEGIN) == 1 and "6.00" in second and "3.00" not in second and "**no**" in second
    assert second.endswith("## Volume\n\nOlder analysis.\n")


def test_a_ratio_is_judged_unrounded_and_printed_with_the_digits_that_tell() -> None:
    # the full run of 2026-12-06 13:00 UTC: 2.08 s against 38.87 s is 0.0535, printed as 0.05 it read as met
    p1 = Figure("P1", "cinder example", 2.08, 38.87, "ratio <= 0.05").judged(0.05)
    assert p1.met is False and p1.ratio == 0.054
    assert "0.054" in p1.line()
    assert Figure("P1", "cinder example", 1.94, 38.87, "ratio <= 0.05").judged(0.05).met is True
    assert Figure("P4", "create", 1.304, 1.0, "ratio <= 1.3").judged(1.3).met is False
    assert Figure("P4", "create", 1.3, 1.0, "ratio <= 1.3").judged(1.3).met is True
