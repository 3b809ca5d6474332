"""The progress display can never fail a run (issue #13, item 1).

The crash it guards against: the run's bar had the submission window as its total and a custom format
``{total:.0f}``; the run goes on past the window to drain the queue, tqdm then sets ``total`` to ``None`` and
the format raised ``TypeError`` in a terminal. These tests drive the bar past its total deterministically
(``mininterval=0`` redraws on every update).
"""

from __future__ import annotations

import io

import pytest
import tqdm

from scheduler_sim.kernel.progress import RunProgress, Spinner


def test_old_format_fails_past_total_the_way_the_field_report_says():
    """The reproduction: a bar format with ``{total:.0f}`` raises once the count passes total + 0.5."""
    bar = tqdm.tqdm(total=10, file=io.StringIO(), mininterval=0, bar_format="{n:.0f}/{total:.0f} h")
    bar.update(5)
    with pytest.raises(TypeError):
        bar.update(6)
    bar.disable = True  # keep __del__ quiet


def test_run_progress_goes_past_the_window_into_a_drain_phase():
    f = io.StringIO()
    p = RunProgress(72.0, file=f, mininterval=0)
    for h in range(0, 200):  # far past the 72 h window, as a run that drains its queue does
        p.update(float(h), jobs_left=max(0, 20 - max(0, h - 72) // 5))
    assert p.enabled and p.phase == "drain"
    p.close()
    text = f.getvalue()
    assert "72/72 h simulated" in text           # window phase filled exactly, whole hours
    assert "20/20 jobs ended" in text
    assert "None" not in text


def test_short_window_counts_minutes():
    f = io.StringIO()
    p = RunProgress(1.0, file=f, mininterval=0)
    p.update(0.5, 3)
    p.update(2.0, 0)
    p.close()
    assert "30/60 min simulated" in f.getvalue()


def test_a_failing_display_disables_itself_and_never_raises(monkeypatch):
    def boom(self, n=1):
        raise RuntimeError("display broke")

    f = io.StringIO()
    p = RunProgress(10.0, file=f, mininterval=0)
    monkeypatch.setattr(tqdm.tqdm, "update", boom)
    p.update(3.0, 5)          # must not raise
    assert not p.enabled
    p.update(4.0, 5)          # further calls are no-ops
    p.close()


def test_spinner_counts_and_survives_errors():
    f = io.StringIO()
    with Spinner("figures", total=3, file=f) as s:
        s.step()
        s.step(2)
    assert "figures" in f.getvalue()
    with Spinner("silent", enabled=False) as s:
        s.step()
