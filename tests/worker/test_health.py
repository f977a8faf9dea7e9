"""The worker's liveness judged from its pollers' last successful polls (worker/health.py's rule)."""

from __future__ import annotations

from osprov.worker.health import PollerView, assess

START, WINDOW = 1_000.0, 300.0


def view(workflow: float | None, activity: float | None, supported: bool | None = True) -> PollerView:
    return PollerView(supported=supported, last_poll={"workflow": workflow, "activity": activity})


def test_recent_polls_are_alive_and_their_ages_are_reported() -> None:
    report = assess(view(1_500.0, 1_450.0), running=True, started=START, now=1_510.0, window_s=WINDOW)
    assert report.ok
    assert report.details["last_poll_age_s"] == {"workflow": 10.0, "activity": 60.0}


def test_one_stale_poller_fails_liveness_and_says_which() -> None:
    report = assess(view(1_500.0, 1_100.0), running=True, started=START, now=1_510.0, window_s=WINDOW)
    assert not report.ok
    assert report.details["problems"] == ["no successful activity task poll for 410s"]


def test_no_poll_yet_is_alive_during_the_first_window_only() -> None:
    assert assess(view(None, None), running=True, started=START, now=START + 200, window_s=WINDOW).ok
    late = assess(view(None, None), running=True, started=START, now=START + 301, window_s=WINDOW)
    assert not late.ok and len(late.details["problems"]) == 2  # type: ignore[arg-type]


def test_a_stopped_worker_is_not_alive_whatever_the_polls() -> None:
    report = assess(view(1_500.0, 1_500.0), running=False, started=START, now=1_510.0, window_s=WINDOW)
    assert not report.ok and report.details["problems"] == ["the worker is not running"]


def test_a_server_without_worker_heartbeats_leaves_only_the_running_check() -> None:
    report = assess(
        view(None, None, supported=False), running=True, started=START, now=START + 900, window_s=WINDOW
    )
    assert report.ok
    assert report.details["last_poll_age_s"] == "not reported by this Temporal server"
