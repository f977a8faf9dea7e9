"""`python -m bench`: every figure of the performance goals (P1…P5), each next to its baseline from the same run.

Starts the full local stack if it is not running (and stops it again if it started it), runs the scripts
one after another, prints one table, writes bench/results/latest.jsonl (one JSON object per figure) and
regenerates the "Latest run" section of docs/benchmarks.md from it, after every script (a long run that is
interrupted keeps what it measured). `--only` re-measures some metrics and replaces only their rows. A
script that fails is reported as a figure that says so; the others still run.

    .venv/bin/python -m bench                     # P1-P5; P3 at 500 resources
    .venv/bin/python -m bench --only P3 --scale 500 2000   # some of them: their rows are replaced
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import (
    failover,
    identity_charts,
    identity_cinder,
    identity_scale,
    identity_steady,
    loadbalancer,
    rebuild,
    temporal_floor,
    volume,
)
from bench.report import RESULTS, Figure, print_figures, ratio_text, read, save
from devenv.testing import provide_stack

DOC = Path(__file__).parent.parent / "docs" / "benchmarks.md"
BEGIN, END = "<!-- bench:latest -->", "<!-- /bench:latest -->"
GOALS = {
    "P1": "Cinder identity example: at least 20x faster than the ks-* CLI sequence; the six charts reported",
    "P2": "steady state: <= 1 Keystone request, 0 writes, 0 failed logins, <= 4 history events per resource/tick",
    "P3": "identity resources -> Ready: <= 1.5x the plain openstacksdk loop",
    "P4": "Volume, LoadBalancer, Server create, member change, rebuild: <= 1.3x the plain openstacksdk script",
    "P5": "kill -9 of a worker mid-step: the step resumes on another worker within 5 s",
}


def runs(args: argparse.Namespace) -> dict[str, Callable[[], list[Figure]]]:
    return {
        "P1": lambda: identity_cinder.measure(repeat=args.repeat) + identity_charts.measure(),
        "P2": lambda: identity_steady.measure(),
        "P3": lambda: identity_scale.measure(args.scale) + temporal_floor.measure(min(args.scale)),
        "P4": lambda: volume.measure([1, 20]) + loadbalancer.measure(repeat=5) + rebuild.measure(rounds=3),
        "P5": lambda: failover.measure(rounds=3),
    }


def failed(metric: str, err: BaseException) -> Figure:
    return Figure(metric, f"failed: {type(err).__name__}: {err}"[:120], None, None, GOALS[metric], met=False)


def markdown(figures: list[Figure], when: str) -> str:
    lines = [
        BEGIN,
        f"## Latest run (`python -m bench`, {when}; bench/results/latest.jsonl)",
        "",
        "| | figure | osprov s | baseline s | ratio | goal | met | load |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for f in figures:
        cells = [
            f.metric,
            f.what,
            "-" if f.osprov_s is None else f"{f.osprov_s:.2f}",
            "-" if f.baseline_s is None else f"{f.baseline_s:.2f}",
            "-" if f.ratio is None else ratio_text(f.ratio),
            f.goal,
            {True: "yes", False: "**no**", None: "-"}[f.met],
            f"{f.load:.1f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    details = [
        f"- {f.metric} {f.what}: " + "; ".join(f"{k} {v}" for k, v in f.extra.items()) for f in figures
    ]
    lines += ["", "Counts behind the figures:", "", *details, END]
    return "\n".join(lines)


def regenerate_doc(figures: list[Figure], when: str, doc: Path = DOC) -> None:
    """Replace the Latest run section (or insert it after the introduction)."""
    text = doc.read_text()
    section = markdown(figures, when)
    if BEGIN in text:
        head, rest = text.split(BEGIN, 1)
        text = head + section + rest.split(END, 1)[1]
    else:
        intro, rest = text.split("\n## ", 1)
        text = f"{intro}\n{section}\n\n## {rest}"
    doc.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=sorted(GOALS), help="run only these")
    parser.add_argument("--scale", type=int, nargs="+", default=[500], help="P3 sizes (2,000 takes ~20 min)")
    parser.add_argument("--repeat", type=int, default=3, help="P1 runs (median)")
    args = parser.parse_args(argv)
    chosen = args.only or sorted(GOALS)
    # Rows of the metrics not run now are kept from the last run (each row says when via its load).
    kept = [Figure(**row) for row in read_rows() if row["metric"] not in chosen]
    figures: list[Figure] = []
    with contextmanager(provide_stack)(full=True):
        for metric, run in runs(args).items():
            if metric not in chosen:
                continue
            print(f"\n== {metric}: {GOALS[metric]}", flush=True)
            try:
                found = run()
            except Exception as err:  # one broken script must not hide the other figures
                traceback.print_exc()
                found = [failed(metric, err)]
            print_figures(found)
            figures.extend(found)
            everything = sorted(kept + figures, key=lambda f: f.metric)
            save(everything)
            regenerate_doc(everything, datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))
    print("\n== all figures of this run")
    print_figures(figures)
    return 0 if all(f.met is not False for f in figures) else 1


def read_rows() -> list[dict[str, Any]]:
    """The saved figures' fields (the derived ratio left out), none before the first run."""
    if not RESULTS.exists():
        return []
    return [{k: v for k, v in row.items() if k != "ratio"} for row in read(RESULTS)]


if __name__ == "__main__":
    sys.exit(main())
