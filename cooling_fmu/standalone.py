"""Cooling-only mode: drive the plant from a measured IT power series instead of a scheduler run.

The series (CSV ``timestamp_secs, measured_kW``, e.g. HLRS Hawk 15-min whole-system power, Patki et al., ICS 2025)
is read as piecewise constant: each sample holds until the next one (the mean over its interval). All IT power is
heat, split evenly over the CDUs. The plant is stepped with exact step averages (zero-order hold), the wet-bulb is
interpolated at mid-step. :func:`run_standalone` returns the interval averages as a :class:`StandaloneRun`; the
application layer writes it to HDF5 (:func:`scheduler_sim.app.cooling.write_standalone`).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from jobs.memory import check_span
from jobs.textfiles import InputFileError, read_input

from .coupling import StepAverager
from .params import load_plant_params
from .plant import CoolingPlant
from .supervisory import StagedPlant
from .weather import DEFAULT_TMY3, Weather, resolve_weather_file

__all__ = ["PowerSeriesReport", "StandaloneRun", "load_power_series", "run_standalone"]


@dataclass
class PowerSeriesReport:
    """What was found in a measured power series.

    Attributes
    ----------
    path : str
        File read.
    n_rows : int
        Data rows.
    interval_s : float
        Sampling interval [s] (most common difference).
    leading_zero_rows : int
        Rows of 0 kW at the start (Hawk: 1,502, left so by the authors); skipped unless asked otherwise.
    zero_rows : int
        All rows of 0 kW.
    gaps : int
        Differences between consecutive stamps other than ``interval_s`` (the value is held over a gap).
    notes : list of str
        Human-readable notes.
    """

    path: str
    n_rows: int = 0
    interval_s: float = float("nan")
    leading_zero_rows: int = 0
    zero_rows: int = 0
    gaps: int = 0
    notes: list[str] = field(default_factory=list)


def load_power_series(path: str | Path) -> tuple[np.ndarray, np.ndarray, PowerSeriesReport]:
    """Read a ``timestamp_secs, measured_kW`` CSV.

    Parameters
    ----------
    path : str | Path
        CSV with a header row; first column Unix time [s], second column power [kW].

    Returns
    -------
    t_unix_s : ndarray, shape (n,)
        Sample times [s], increasing.
    P_W : ndarray, shape (n,)
        IT power [W] (kW x 1000, converted here at the edge).
    report : PowerSeriesReport
        Interval, zero rows, gaps.

    Raises
    ------
    ValueError
        If the file has fewer than 2 rows, non-numeric or negative values, or times that do not increase.
    """
    path = Path(path)
    try:  # the one input opener: bounded decompression, encodings, line lengths
        data = read_input(path, "power series")
    except InputFileError as exc:
        raise ValueError(str(exc)) from None
    try:
        df = pd.read_csv(io.BytesIO(data))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a CSV of timestamp_secs, measured_kW ({type(exc).__name__}: "
                         f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''})") from None
    if len(df) >= 2 and df.shape[1] >= 2:
        t_first_last = pd.to_numeric(df.iloc[[0, -1], 0], errors="coerce").to_numpy(float)
        if np.all(np.isfinite(t_first_last)):
            check_span(t_first_last[1] - t_first_last[0], 1.0, f"{path}: the power series", 0.0, ValueError)
    if df.shape[1] < 2 or len(df) < 2:
        raise ValueError(f"{path}: need two columns (timestamp_secs, measured_kW) and at least 2 rows")
    t = pd.to_numeric(df.iloc[:, 0], errors="coerce").to_numpy(float)
    p = pd.to_numeric(df.iloc[:, 1], errors="coerce").to_numpy(float) * 1e3
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(p))) or np.any(p < 0):
        raise ValueError(f"{path}: non-numeric, missing or negative values")
    if np.any(np.diff(t) <= 0):
        bad = int(np.argmax(np.diff(t) <= 0)) + 2
        raise ValueError(f"{path}: timestamps do not increase at data row {bad} (expected column 1 = Unix time [s], "
                         f"column 2 = power [kW])")
    if not np.any(p > 0):
        raise ValueError(f"{path}: every power value is 0 kW; nothing to cool")
    if p.max() > 1e9:  # 1 TW: no facility; a unit mix-up (W given as kW?)
        raise ValueError(f"{path}: power up to {p.max() / 1e3:.3g} kW; expected kW of a facility (< 1e6 kW)")
    if np.max(np.diff(t)) > 30 * 86400:
        k = int(np.argmax(np.diff(t)))
        raise ValueError(f"{path}: a gap of {np.diff(t)[k] / 86400:.0f} days after data row {k + 2}; split the series")
    rep = PowerSeriesReport(path=str(path), n_rows=len(t))
    d = np.diff(t)
    vals, counts = np.unique(d, return_counts=True)
    rep.interval_s = float(vals[np.argmax(counts)])
    rep.gaps = int(np.count_nonzero(d != rep.interval_s))
    nz = np.flatnonzero(p > 0)
    rep.leading_zero_rows = int(nz[0]) if nz.size else len(p)
    rep.zero_rows = int(np.count_nonzero(p == 0))
    if rep.leading_zero_rows:
        rep.notes.append(f"{rep.leading_zero_rows} leading rows of 0 kW (until Unix time {t[rep.leading_zero_rows]:.0f})")
    if rep.gaps:
        rep.notes.append(f"{rep.gaps} irregular intervals: the previous value is held")
    return t, p, rep


@dataclass
class StandaloneRun:
    """What a cooling-only run produced (all SI).

    Attributes
    ----------
    plant : str
        Plant name.
    step_s : float
        Communication step [s].
    interval_s : float
        Output averaging interval [s].
    time_origin_unix_s : float
        Unix time of the first simulated sample [s].
    facility : dict of str -> (ndarray, shape (n_intervals,), str)
        Facility series: interval averages and their unit (``P_it_W``, ``T_wb_K`` first, then every scalar plant
        output in the plant's order).
    cdu : dict of str -> (ndarray, shape (n_intervals, n_cdus), str)
        Per-CDU plant outputs (interval averages) and their unit.
    summary : dict of str -> float
        Energies [J], ``PUE``, ``WUE_L_per_kWh``, fan share, scale factor, report counts.
    report : PowerSeriesReport
        What was found in the power series.
    fmu_path : pathlib.Path
        The FMU that ran.
    pue_counts : str
        What the PUE counts (``"liquid plant only"``, or the system's facility stages).
    fmu_sha256 : str
        SHA-256 of the FMU, as verified against the cache record before it ran.
    """

    plant: str
    step_s: float
    interval_s: float
    time_origin_unix_s: float
    facility: dict[str, tuple[np.ndarray, str]]
    cdu: dict[str, tuple[np.ndarray, str]]
    summary: dict[str, float]
    report: PowerSeriesReport
    fmu_path: Path
    pue_counts: str = "liquid plant only"
    fmu_sha256: str = ""

    @property
    def n_intervals(self) -> int:
        """Number of output intervals."""
        return len(next(iter(self.facility.values()))[0])


def site_weather_file(weather_file: str | Path | None, system: object = None) -> Path:
    """The weather file a cooling-only run uses: ``weather_file``, else the system's site, else NREL Golden.

    Parameters
    ----------
    weather_file : str | Path | None
        EPW / TMY3 file or shipped site name (:func:`cooling_fmu.weather.resolve_weather_file`).
    system : object
        A loaded system description (``power.load_system``) with ``site_weather`` and ``source``, or None.

    Returns
    -------
    pathlib.Path
        The file.
    """
    if weather_file:
        return resolve_weather_file(weather_file)
    if system is not None and getattr(system, "site_weather", ""):  # the system's site
        return resolve_weather_file(system.site_weather, Path(system.source).parent if system.source else None)
    return DEFAULT_TMY3


def run_standalone(power_csv: str | Path, *, plant: str = "frontier", step_s: float = 15.0,
                   days: float | None = None, start_day: float = 0.0, scale_to_design: float | None = None,
                   weather: Weather | None = None, keep_leading_zeros: bool = False, interval_s: float = 900.0,
                   cache_dir: str | Path | None = None, weather_file: str | Path | None = None,
                   system: str | Path | None = None, cells: int | None = None) -> StandaloneRun:
    """Drive a cooling plant from a measured IT power series.

    The plant gets plant v5's inputs as a scheduled run gives them (:mod:`scheduler_sim.kernel.coupler`): its tower
    cells staged by the supervisory controller (:class:`~cooling_fmu.supervisory.StagedPlant`, the one wrapper
    ``hpctwin run`` uses too, :func:`scheduler_sim.app.runner.build_plant`), the weather's dry-bulb where the FMU
    takes ``T_db``, and, with ``system``, the air side's heat into the tower water
    (:meth:`power.facility.FacilityOverheads.air_side_rejected_W`). With ``cells`` the bank runs that many cells
    throughout instead (the FMU input ``n_cells_cmd`` held): the stager's hysteresis lets the same demand run at
    either of two stages, so two runs compare fan energy at one cell rule only this way (docs/cooling.md).

    Parameters
    ----------
    power_csv : str | Path
        Power series (see :func:`load_power_series`).
    plant : str
        Plant name or TOML path.
    step_s : float
        Communication step [s]; must divide the series interval.
    days : float | None
        Length simulated [d] (default: the whole series).
    start_day : float
        Start, days after the first non-zero sample (or the first sample with ``keep_leading_zeros``).
    scale_to_design : float | None
        Scale the power so its peak over the window equals this fraction of the plant's design heat
        (``n_cdu * Q_flow_nominal``); default: no scaling.
    weather : Weather | None
        Wet-bulb source, used as given (e.g. :meth:`Weather.constant`). Default: ``weather_file``.
    keep_leading_zeros : bool
        Simulate the leading 0 kW rows too.
    interval_s : float
        Output averaging interval [s] (a multiple of ``step_s``).
    cache_dir : str | Path | None
        FMU cache folder (None: the default of :class:`~cooling_fmu.plant.CoolingPlant`).
    weather_file : str | Path | None
        EPW / TMY3 file or shipped site name (:func:`cooling_fmu.weather.resolve_weather_file`), aligned to the
        calendar of the series (its timestamps are Unix seconds; month / day / hour lookup, UTC offset from the
        file header, :meth:`Weather.at_calendar`). Default: the site of ``system`` when given, else the shipped Golden, CO TMY3.
    system : str | Path | None
        A system description whose ``[facility]`` stages (electrical chain, air side, lighting; see
        :mod:`power.facility`) are counted on top of the plant, step by step, and its ``liquid_fraction`` of the
        IT power is the plant's heat (the rest goes to room air, with the UPS / PDU losses and lighting). Without
        it the whole IT power is the plant's heat and ``PUE`` counts the liquid plant only (file attribute
        ``pue_counts`` says which).
    cells : int | None
        Tower cells run throughout (1 .. ``tower.n_cells``, standby cells included); None (default): staged by the
        supervisory controller, as in ``hpctwin run``.

    Returns
    -------
    StandaloneRun
        Interval averages of the power, the wet-bulb and every plant output, and the summary: energies [J],
        ``PUE``, ``WUE_L_per_kWh``, fan share, scale factor, report counts, ``tower_cells_held`` (``cells``, 0 when
        staged), ``tower_cell_switches`` (the stager's stage changes) and ``tower_cells_min`` / ``_max`` / ``_mean``
        (cells running over the steps); with ``system`` also ``E_<stage>_J``,
        ``E_facility_J``, ``pPUE_mechanical``, ``pPUE_electrical`` and ``PUE_liquid_plant`` (the plant-only ratio).

    Raises
    ------
    ValueError
        If steps do not divide the series interval, the window is empty or ``cells`` is outside the bank.
    """
    t, P, rep = load_power_series(power_csv)
    first = 0 if keep_leading_zeros else rep.leading_zero_rows
    k = rep.interval_s / step_s
    if abs(k - round(k)) > 1e-9 or interval_s % step_s:
        raise ValueError(f"step_s = {step_s} s must divide the series interval {rep.interval_s} s and interval_s")
    k = int(round(k))
    t0 = t[first] + start_day * 86400.0
    t_end = t[-1] + rep.interval_s if days is None else t0 + days * 86400.0
    # ~10 float64 arrays per step at once (times, indices, power, plant inputs and outputs before averaging)
    check_span(t_end - t0, step_s, f"{power_csv}: the cooling-only window", 10 * 8.0, ValueError)
    n_steps = int(math.floor((t_end - t0) / step_s))
    n_steps -= n_steps % int(interval_s // step_s)
    if n_steps <= 0:
        raise ValueError("empty window")
    t_mid = t0 + (np.arange(n_steps) + 0.5) * step_s
    P_step = P[np.clip(np.searchsorted(t, t_mid, side="right") - 1, 0, len(P) - 1)]  # piecewise constant
    params = load_plant_params(plant)
    if cells is not None and not (isinstance(cells, (int, np.integer)) and 1 <= cells <= params.tower.n_cells):
        raise ValueError(f"plant {params.name}: cells = {cells!r}; expected a whole number of tower cells in "
                         f"1..{params.tower.n_cells}")
    design = params.n_cdu * params.cdu.Q_flow_nominal_W
    scale = 1.0 if scale_to_design is None else scale_to_design * design / max(P_step.max(), 1.0)
    P_step = P_step * scale
    lf, sysm = 1.0, None
    if system is not None:  # the system's liquid share of IT power goes to the plant, the rest to room air
        from power import load_system

        sysm = load_system(system)
        lf = sysm.liquid_fraction
    if weather is None:
        # DEFAULT_TMY3 and resolve_weather_file are imported at module level

        w = Weather.from_file(site_weather_file(weather_file, sysm))
        weather = w.at_calendar(t0, w.report.utc_offset_h)
    T_wb = weather.wet_bulb_K(t_mid - t0)
    heat = np.repeat((lf * P_step / params.n_cdu)[:, None], params.n_cdu, axis=1)
    fo = None
    if system is not None:
        from power.facility import FacilityOverheads
        from power.sizing import sized_facility

        fo = FacilityOverheads(sized_facility(sysm), liquid_fraction=lf)
    with CoolingPlant(params, step_s=step_s, cache_dir=cache_dir) as raw:
        # plant v5's inputs, as a run gives them (scheduler_sim.kernel.coupler): tower cells staged by the
        # supervisory controller (or held at ``cells``), the outdoor dry-bulb, and the air side's heat into the
        # tower water
        pl = StagedPlant(raw) if cells is None else raw
        held = {} if cells is None else {"n_cells_cmd": float(cells)}
        rows: dict[str, np.ndarray] = {}
        T_db = weather.dry_bulb_K(t_mid - t0) if raw.uses_dry_bulb else None
        if T_db is not None:
            rows["T_db_K"] = np.asarray(T_db, dtype=float)
        if fo is not None and raw.uses_air_side_heat and fo.spec.air_side is not None:
            rows["Q_air_side_W"] = np.asarray(fo.air_side_rejected_W(P_step, T_wb), dtype=float)
        y0 = pl.initialize(heat[0], float(T_wb[0]), **{k: float(v[0]) for k, v in rows.items()})
        y = pl.run(heat, T_wb, **held, **rows)
        switches = len(pl.switch_times_s) if cells is None else 0
        names, units = pl.output_names, pl.output_units
        fmu_path, fmu_sha256 = pl.fmu_path, pl.fmu_sha256
    col = {n: i for i, n in enumerate(names)}
    averager = StepAverager(names, step_s)  # exact step averages of powers and flows from the running totals
    averager.start(y0)
    averager.apply(y)
    m = int(interval_s // step_s)
    avg = y.reshape(-1, m, y.shape[1]).mean(axis=1)
    E_it = float(P_step.sum() * step_s)
    E_cool = float(y[-1, col["E_cooling_out"]])
    water = float(y[-1, col["M_makeup_out"]])
    summary = {
        "duration_s": n_steps * step_s, "E_it_J": E_it, "E_cooling_J": E_cool,
        "E_fan_J": float(y[-1, col["E_fan_out"]]),
        "E_pump_sec_J": float(sum(y[-1, i] for n, i in col.items() if n.startswith("E_pump_sec_out["))),
        "E_pump_fac_J": float(y[-1, col["E_pump_fac_out"]]), "E_pump_tower_J": float(y[-1, col["E_pump_tower_out"]]),
        "E_chiller_elec_J": float(y[-1, col["E_chiller_elec_out"]]),
        "E_tower_rejected_J": float(y[-1, col["E_tower_out"]]),
        "PUE": (E_it + E_cool) / E_it if E_it > 0 else float("nan"),
        "pPUE_mech": (E_it + E_cool) / E_it if E_it > 0 else float("nan"),
        "water_makeup_kg": water, "WUE_L_per_kWh": (water / 0.997) / (E_it / 3.6e6) if E_it > 0 else float("nan"),
        "fan_share_of_cooling": float(y[-1, col["E_fan_out"]]) / E_cool if E_cool > 0 else float("nan"),
        "power_scale": scale, "mean_P_it_W": E_it / (n_steps * step_s),
        "leading_zero_rows_skipped": float(0 if keep_leading_zeros else rep.leading_zero_rows),
        "tower_cells_held": float(cells or 0), "tower_cell_switches": float(switches),
    }
    if "n_cells_on" in col:  # cells with the fan running, step by step (the command, or the FMU's own rule at 0)
        n_on = y[:, col["n_cells_on"]]
        summary.update({"tower_cells_min": float(n_on.min()), "tower_cells_max": float(n_on.max()),
                        "tower_cells_mean": float(n_on.mean())})
    ovh_series: dict[str, np.ndarray] = {}
    counts = "liquid plant only"
    if fo is not None:
        from power.facility import SERIES

        ov = fo.evaluate(P_step, y[:, col["P_cooling"]], T_wb)
        for name in SERIES:
            key = "E_air_heat_J" if name == "Q_air_W" else "E" + name[1:-2] + "_J"
            summary[key] = float(ov[name].sum() * step_s)
            ovh_series[name] = ov[name].reshape(-1, m).mean(axis=1)
        E_el = sum(summary[k] for k in ("E_transformer_loss_J", "E_switchgear_loss_J", "E_ups_loss_J",
                                        "E_pdu_loss_J"))
        E_mech = E_cool + summary["E_air_fan_J"] + summary["E_air_chiller_J"]
        E_fac = E_it + E_mech + E_el + summary["E_lighting_J"]
        summary.update({"PUE_liquid_plant": summary["PUE"], "E_electrical_loss_J": E_el, "E_mechanical_J": E_mech,
                        "E_facility_J": E_fac, "PUE": E_fac / E_it if E_it > 0 else float("nan"),
                        "pPUE_mechanical": (E_it + E_mech) / E_it if E_it > 0 else float("nan"),
                        "pPUE_electrical": (E_it + E_el) / E_it if E_it > 0 else float("nan")})
        present = sysm.facility.present()
        counts = "liquid plant" + "".join(", " + p for p in present) + (
            f" (system {sysm.name}; left out: {', '.join(sysm.facility.absent()) or 'none'})")
    facility: dict[str, tuple[np.ndarray, str]] = {"P_it_W": (P_step.reshape(-1, m).mean(axis=1), "W"),
                                                    "T_wb_K": (T_wb.reshape(-1, m).mean(axis=1), "K")}
    for name, data in ovh_series.items():
        facility[name] = (data, "W")
    groups: dict[str, list[int]] = {}
    for i, n in enumerate(names):
        if n.endswith("]"):
            groups.setdefault(n.split("[")[0], []).append(i)
        else:
            facility[n] = (avg[:, i], units[i])
    cdu = {base: (avg[:, idx], units[idx[0]]) for base, idx in groups.items()}
    return StandaloneRun(plant=params.name, step_s=step_s, interval_s=interval_s, time_origin_unix_s=t0,
                         facility=facility, cdu=cdu, summary=summary, report=rep, fmu_path=Path(fmu_path),
                         pue_counts=counts, fmu_sha256=fmu_sha256)
