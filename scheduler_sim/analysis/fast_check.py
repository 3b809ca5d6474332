"""The fast plant's error against the FMU, measured on the run itself (issue #22 item 9).

A run with ``--cooling fast`` (:class:`cooling_fmu.quasisteady.QuasiSteadyPlant`) is followed by short FMU
reference windows of ``window_h`` hours, chosen where the fast plant's error should be largest:

* around the interval where the fast run's CDU supply temperature peaks (``T_sec_sup``);
* around the run's steepest rise of the total CDU heat (the largest increase over ``RISE_S``): the fast plant follows
  its steady state there while the FMU's water lags and its supply overshoots, an excursion the fast run's own
  supply peak does not show (a fast plant that holds its set point peaks anywhere);

one window when the two overlap. In each, both plants are stepped from the same inputs: the run's interval-average
heat per CDU and wet-bulb, held over each cooling step (zero-order hold at ``step_s``), each started at its own
steady state of the first step of a warm-up of ``warmup_h`` hours before the window that is stepped but not compared
(``initialize``). The window with the largest peak-supply error (in magnitude) is reported, with its reason, in the
run summary and the file's ``info_json`` (``fast_plant_check``), which the report shows:

* the peak CDU supply temperature of each plant in the window, and its difference (fast - FMU) [K];
* the largest and the mean absolute difference of the supply temperature (every CDU, every step) [K];
* the peak liquid-plant power of each, and the window's cooling energy ratio fast / FMU - 1;
* ``windows``: every window checked (start, reason, peak error, largest error).

Why windows of the run, not a stored calibration per plant: the fast plant's error is largest exactly in the
excursions a stored calibration on another load would not contain (on the Frontier day: peak supply 32.0 degC fast
against 34.2 degC FMU, issue #22), and a window costs a few seconds once the plant's FMU is in the cache (the
first use of a plant builds it, as an FMU run would). The error of the rest of the run is not measured.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cooling_fmu.coupling import cdu_supply_columns

__all__ = ["WINDOW_H", "WARMUP_H", "RISE_S", "fast_plant_check", "fast_check_lines"]

#: Length of the FMU reference window [h].
WINDOW_H = 6.0
#: Plant stepping before the window, not compared [h] (the FMU's start-up transient: return t63 ~4 min, transport
#: ~6 min, issue #22; 2 h is many of both).
WARMUP_H = 2.0
#: Span over which the steepest rise of the total CDU heat is found [s] (30 min: a few of the plant's water transport
#: times, ~6 min on Frontier-like, issue #22).
RISE_S = 1800.0


def _windows(result: object, window_h: float) -> list[tuple[int, int, str]] | None:
    """Output rows ``[a, b)`` and reason of each window (module docstring); None: the run has no supply series."""
    T = (getattr(result, "cdu", None) or {}).get("T_sec_sup")
    if T is None or np.size(T) == 0 or len(result.time_s) < 2:
        return None
    dt = float(result.time_s[1] - result.time_s[0])
    n = len(result.time_s)
    w = max(1, int(round(window_h * 3600.0 / dt)))

    def span(centre: int) -> tuple[int, int]:
        a = max(0, min(centre - w // 2, n - w))
        return a, min(n, a + w)

    peak = int(np.nanargmax(np.nanmax(np.asarray(T, dtype=float).reshape(n, -1), axis=1)))
    out = [(*span(peak), "its peak supply")]
    heat = (getattr(result, "cdu", None) or {}).get("Q_flow_W")
    if heat is not None and np.size(heat):
        total = np.asarray(heat, dtype=float).reshape(n, -1).sum(axis=1)
        m = max(1, int(round(RISE_S / dt)))
        if n > m:
            rise = total[m:] - total[:-m]
            k = int(np.argmax(rise))
            if rise[k] > 0 and abs((k + m) - peak) >= w // 2:  # centred on the end of the rise; else one window
                out.append((*span(k + m), "the steepest rise of its heat"))
    return out


def _compare(result: object, a: int, b: int, make_fmu: Callable[[], object], make_fast: Callable[[], object],
             ratio: int, warmup_h: float) -> dict:
    """Both plants stepped over output rows ``[a, b)`` after their warm-up; the figures of one window."""
    dt = float(result.time_s[1] - result.time_s[0])
    w0 = max(0, a - int(round(warmup_h * 3600.0 / dt)))  # both plants settle before the compared window
    heat = np.repeat(np.asarray(result.cdu["Q_flow_W"][w0:b], dtype=float), ratio, axis=0)
    twb = np.repeat(np.asarray(result.facility["T_wb_K"][w0:b], dtype=float), ratio)
    skip = (a - w0) * ratio
    n_cdus = heat.shape[1]
    outs = []
    for make in (make_fast, make_fmu):
        plant = make()
        try:
            cols = cdu_supply_columns(list(plant.output_names), n_cdus)
            if cols is None:
                raise ValueError(f"{type(plant).__name__} has no per-CDU supply temperature output")
            plant.initialize(heat[0], float(twb[0]))
            out = np.asarray(plant.run(np.ascontiguousarray(heat), twb), dtype=float)
            outs.append((out[skip:, cols], out[skip:, plant.P_cooling_index]))
        finally:
            if hasattr(plant, "close"):
                plant.close()
    (T_fast, P_fast), (T_fmu, P_fmu) = outs
    err = T_fast - T_fmu
    return {
        "window_start_s": float(result.time_s[a]), "window_end_s": float(result.time_s[a] + (b - a) * dt),
        "window_h": float((b - a) * dt / 3600.0),
        "peak_supply_fast_K": float(T_fast.max()), "peak_supply_fmu_K": float(T_fmu.max()),
        "peak_supply_error_K": float(T_fast.max() - T_fmu.max()),
        "supply_error_max_K": float(np.abs(err).max()), "supply_error_mean_K": float(np.abs(err).mean()),
        "peak_cooling_fast_W": float(P_fast.max()), "peak_cooling_fmu_W": float(P_fmu.max()),
        "cooling_energy_ratio": float(P_fast.sum() / P_fmu.sum() - 1.0) if P_fmu.sum() > 0 else float("nan"),
    }


def fast_plant_check(result: object, make_fmu: Callable[[], object], make_fast: Callable[[], object], step_s: float,
                     window_h: float = WINDOW_H, warmup_h: float = WARMUP_H) -> dict | None:
    """Step both plants over each window of the run and report the worst (module docstring).

    Parameters
    ----------
    result : object
        The fast run's :class:`~scheduler_sim.kernel.results.SimulationResult` (``cdu["Q_flow_W"]`` [W],
        ``cdu["T_sec_sup"]`` [K], ``facility["T_wb_K"]`` [K], ``time_s`` [s]).
    make_fmu : Callable[[], object]
        Returns a fresh FMU plant (the :class:`cooling_fmu.coupling.Plant` protocol) of the run's plant
        description; called once per window, the plant closed after it (when it has ``close``).
    make_fast : Callable[[], object]
        Returns a fresh fast plant of the same description (same ``step_s`` and lag); once per window.
    step_s : float
        Cooling step of both [s]; the output interval is a whole multiple of it.
    window_h : float
        Window length [h].
    warmup_h : float
        Hours stepped before each window and not compared (as much as the run has before it), so the comparison
        starts from settled plants, not from the FMU's start-up transient [h].

    Returns
    -------
    dict or None
        The window with the largest ``|peak_supply_error_K|`` (the first on a tie): ``window_start_s``,
        ``window_end_s`` [s, simulation time], ``window_h``, ``window_reason``, ``peak_supply_fast_K``,
        ``peak_supply_fmu_K``, ``peak_supply_error_K`` (fast - FMU), ``supply_error_max_K``,
        ``supply_error_mean_K`` (absolute, every CDU and step), ``peak_cooling_fast_W``, ``peak_cooling_fmu_W``,
        ``cooling_energy_ratio`` (fast / FMU - 1), ``windows`` (every window's ``start_s``, ``reason``,
        ``peak_supply_error_K`` and ``supply_error_max_K``) and ``method``; None when the run has no supply temperature series.

    Raises
    ------
    ValueError
        If the output interval is not a whole multiple of ``step_s``, or a plant has no per-CDU supply output.
    """
    wins = _windows(result, window_h)
    if wins is None:
        return None
    dt = float(result.time_s[1] - result.time_s[0])
    ratio = int(round(dt / step_s))
    if ratio < 1 or abs(ratio * step_s - dt) > 1e-9 * dt:
        raise ValueError(f"output interval {dt} s is not a whole multiple of the cooling step {step_s} s")
    checked = [(_compare(result, a, b, make_fmu, make_fast, ratio, warmup_h), reason) for a, b, reason in wins]
    worst, reason = max(checked, key=lambda cr: abs(cr[0]["peak_supply_error_K"]))
    return {
        "method": f"FMU reference windows: {window_h:g} h around the fast run's peak CDU supply temperature and "
                  f"around the steepest rise of its heat (over {RISE_S / 60:g} min), both plants from the run's "
                  f"heat and wet-bulb (held over each {step_s:g} s step); the window with the largest peak error",
        **worst, "window_reason": reason,
        "windows": [{"start_s": c["window_start_s"], "reason": r, "peak_supply_error_K": c["peak_supply_error_K"],
                     "supply_error_max_K": c["supply_error_max_K"]} for c, r in checked],
    }


def fast_check_lines(check: dict | None) -> list[str]:
    """The run summary's lines for :func:`fast_plant_check` (none when there is no check).

    Parameters
    ----------
    check : dict | None
        The check's figures.

    Returns
    -------
    list of str
        Two lines: the peak supply temperatures and errors, and the cooling power and energy; one line with the
        reason when the check was not measured (``check`` holds only ``method``).
    """
    if not check:
        return []
    c = check
    if "window_h" not in c:  # not measured (the note says why)
        return [f"  fast plant vs FMU     {c.get('method', 'not measured')}"]
    return [f"  fast plant vs FMU     {c['window_h']:g} h window at t = {c['window_start_s'] / 86400:.2f} d "
            f"({c.get('window_reason', 'its peak supply')}; worst of {len(c.get('windows', [c]))} checked): peak "
            f"supply {c['peak_supply_fast_K'] - 273.15:.2f} degC fast vs "
            f"{c['peak_supply_fmu_K'] - 273.15:.2f} degC FMU ({c['peak_supply_error_K']:+.2f} K); supply error max "
            f"{c['supply_error_max_K']:.2f} K, mean {c['supply_error_mean_K']:.3f} K",
            f"                        peak cooling power {c['peak_cooling_fast_W'] / 1e3:.1f} kW fast vs "
            f"{c['peak_cooling_fmu_W'] / 1e3:.1f} kW FMU; window cooling energy fast / FMU - 1 = "
            f"{c['cooling_energy_ratio']:+.2e}"]
