"""Headroom of a run: how close the facility came to its electrical feed and its plant to its capacity.

From a run's series and its system and plant descriptions (:func:`run_headroom`):

* **feed**: the peak interval-average facility power against the feed (``[facility.feed]``, else the transformers'
  ``count x rated_VA x power_factor``; power.facility.FacilitySpec.feed_W), and against the firm feed (the
  redundant unit out of service);
* **plant**: the run's peak heat to the CDUs against the plant's capacity (:func:`cooling_fmu.sizing.plant_capacity`:
  the largest heat, split over the CDUs as at the peak, that keeps every CDU supply within 1 K of its set point in
  steady state) at the run's worst hour (the hour of the highest mean wet-bulb) and at the design day (the 0.4 %
  annual wet-bulb of the site's weather, :func:`cooling_fmu.weather.design_conditions`); at the design day also the
  heat of the whole machine at full load (every node at its maximum power, through the power chain);
* **supply**: hours during which some CDU's secondary supply was above its set point + 1 K, and the CDU with the
  least margin (set point + 1 K minus its highest supply temperature of the run);
* **advice** when a margin is negative: how many tower cells of the same size would restore it
  (:func:`cooling_fmu.sizing.tower_cells_needed`; or that the CDUs limit), and how many kW of feed are missing;
* **N+1** at the design day (issue 22 item 8b, :func:`cooling_fmu.redundancy.n_plus_one`): whether the plant still
  holds its set points (facility and every CDU supply within 0.5 K) with the machine at full load (the heat of
  :func:`full_load_heat_w`, as the design-day capacity) at the design wet-bulb with one tower cell, one facility
  pump or one tower pump out;
* **hours below the data hall's dew point** (issue 22 item 3): hours during which some CDU's secondary supply (the
  water in the rack manifolds, in the data hall) was below :data:`DATA_HALL_DEW_POINT_K`, where uninsulated pipes
  and cold plates would sweat, and the coldest CDU supply of the run;
* **chiller-free hours** of the run per calendar month (UTC; :func:`cooling_fmu.redundancy.
  chiller_free_hours_by_month`: intervals whose mean chiller heat is below 1 W; every hour of a plant without a
  chiller).

The plant figures (capacities, N+1 cases, tower cells needed) are steady-state questions that cost seconds each;
they are cached beside the FMU, content-verified and exact (:mod:`cooling_fmu.figure_cache`), so a run that asks
again (the same plant, design day and peak) reads them back. The figures are computed from the run's outputs before
its file is sealed: printed with the summary, and written
to ``/headroom`` of the HDF5 file (:meth:`Headroom.write`, docs/output_schema.md) by ``hpctwin run``.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from cooling_fmu.figure_cache import cached_capacity, cached_cells_needed, cached_n_plus_one
from cooling_fmu.redundancy import chiller_free_hours_by_month
from power import PowerChain, System, node_power_w
from power.sizing import sized_facility
from .units import temperature_difference_text, temperature_text

__all__ = ["DATA_HALL_DEW_POINT_K", "Headroom", "full_load_heat_w", "run_headroom"]

#: Allowed rise of a CDU secondary supply above its set point [K] (the bound of the supply-hours count).
SUPPLY_TOLERANCE_K = 1.0

#: Dew point of the data hall's air [K]: 15 C, the upper dew point of the recommended envelope of ASHRAE TC 9.9,
#: "Thermal Guidelines for Data Processing Environments" (2015/2021: -9 C to 15 C dew point, 60 % RH). ASSUMPTION:
#: the hall is at that bound (the most humid air the envelope recommends; a drier hall has fewer hours).
DATA_HALL_DEW_POINT_K = 288.15


@dataclasses.dataclass
class Headroom:
    """Headroom figures of one run (SI; NaN where not known). See the module docstring.

    Attributes
    ----------
    peak_P_facility_W, feed_W, feed_firm_W : float
        Peak interval-average facility power, feed capacity and firm feed capacity [W].
    feed_source : str
        Where the feed figure comes from.
    peak_heat_W : float
        Peak interval-average heat to the CDUs [W].
    worst_hour_T_wb_K, capacity_worst_hour_W : float
        Highest hourly mean wet-bulb of the run [K] and the plant's capacity there [W].
    design_T_wb_K, capacity_design_W, full_load_heat_W : float
        Design wet-bulb [K], the plant's capacity there for the full-load heat split [W], full-load heat [W].
    design_source : str
        Where the design wet-bulb comes from.
    hours_supply_above : float
        Hours with some CDU supply above set point + 1 K [h].
    least_margin_cdu : int
        CDU (0-based) with the least supply margin (-1 when unknown).
    least_margin_K : float
        Its margin: set point + 1 K minus its highest supply temperature [K].
    hours_below_dew_point : float
        Hours with some CDU supply below the data hall's dew point :data:`DATA_HALL_DEW_POINT_K` [h].
    coldest_supply_K : float
        Coldest CDU secondary supply of the run [K].
    advice : list of str
        What the plant or the feed would need when a margin is negative.
    plant_note : str
        Why the plant's capacity and N+1 are not computed here ("" for towers): a dry or hybrid bank's design day
        is the dry-bulb, which ``hpctwin site check`` evaluates.
    n_plus_one : list of cooling_fmu.redundancy.RedundancyCase
        The N+1 cases at full-load heat and the design wet-bulb ([] without a plant or a design day).
    chiller_free : dict of str to (float, float)
        ``"YYYY-MM"`` -> (chiller-free hours, simulated hours) [h] ({} without a plant).
    has_chiller : bool
        The plant has a chiller (else every hour is chiller-free).
    """

    peak_P_facility_W: float = math.nan
    feed_W: float = math.nan
    feed_firm_W: float = math.nan
    feed_source: str = ""
    peak_heat_W: float = math.nan
    worst_hour_T_wb_K: float = math.nan
    capacity_worst_hour_W: float = math.nan
    design_T_wb_K: float = math.nan
    capacity_design_W: float = math.nan
    full_load_heat_W: float = math.nan
    design_source: str = ""
    hours_supply_above: float = math.nan
    least_margin_cdu: int = -1
    least_margin_K: float = math.nan
    hours_below_dew_point: float = math.nan
    coldest_supply_K: float = math.nan
    advice: list = dataclasses.field(default_factory=list)
    plant_note: str = ""
    n_plus_one: list = dataclasses.field(default_factory=list)
    chiller_free: dict = dataclasses.field(default_factory=dict)
    has_chiller: bool = False

    def write(self, w: object) -> None:
        """Write the figures to ``/headroom`` of an open run file (docs/output_schema.md).

        Parameters
        ----------
        w : object
            The file's :class:`scheduler_sim.io.schema.SchemaWriter`.
        """
        import h5py

        w.group("/headroom")
        w.attrs("/headroom", {
            "peak_P_facility_W": self.peak_P_facility_W, "feed_W": self.feed_W, "feed_firm_W": self.feed_firm_W,
            "peak_heat_W": self.peak_heat_W, "worst_hour_T_wb_K": self.worst_hour_T_wb_K,
            "capacity_worst_hour_W": self.capacity_worst_hour_W, "design_T_wb_K": self.design_T_wb_K,
            "capacity_design_W": self.capacity_design_W, "full_load_heat_W": self.full_load_heat_W,
            "hours_supply_above_h": self.hours_supply_above, "least_margin_cdu": float(self.least_margin_cdu),
            "least_margin_K": self.least_margin_K, "has_chiller": float(self.has_chiller),
            "hours_below_dew_point_h": self.hours_below_dew_point, "coldest_supply_K": self.coldest_supply_K,
            "dew_point_K": DATA_HALL_DEW_POINT_K})
        text = h5py.string_dtype("utf-8")
        c = self.n_plus_one
        w.dataset("/headroom/n_plus_one_case", np.array([x.name for x in c], dtype=text), units="")
        w.dataset("/headroom/n_plus_one_ok", np.array([x.ok for x in c], dtype=bool), units="1")
        w.dataset("/headroom/n_plus_one_T_fac_sup_K", np.array([x.T_fac_sup_K for x in c], dtype=float), units="K")
        w.dataset("/headroom/n_plus_one_T_sec_sup_max_K", np.array([x.T_sec_sup_max_K for x in c], dtype=float),
                  units="K")
        m = self.chiller_free
        w.dataset("/headroom/chiller_free_month", np.array(list(m), dtype=text), units="")
        w.dataset("/headroom/chiller_free_h", np.array([v[0] for v in m.values()], dtype=float), units="h")
        w.dataset("/headroom/simulated_h", np.array([v[1] for v in m.values()], dtype=float), units="h")

    def lines(self) -> list[str]:
        """The summary's headroom block (MW, kW, degC, h).

        Returns
        -------
        list of str
            Printable lines.
        """
        def mw(x: float) -> str:
            return "n/a" if not math.isfinite(x) else f"{x / 1e6:.3f} MW"

        def pct(a: float, b: float) -> str:
            return "" if not (math.isfinite(a) and math.isfinite(b) and b > 0) else f" ({100 * (b - a) / b:+.1f} %)"

        out = ["headroom:"]
        out.append(f"  feed                  peak facility {mw(self.peak_P_facility_W)} vs feed {mw(self.feed_W)}"
                   f"{pct(self.peak_P_facility_W, self.feed_W)}, firm {mw(self.feed_firm_W)}"
                   f"{pct(self.peak_P_facility_W, self.feed_firm_W)}" + (f"  [{self.feed_source}]"
                                                                        if self.feed_source else ""))
        if math.isfinite(self.capacity_worst_hour_W):
            out.append(f"  plant, worst hour     peak heat {mw(self.peak_heat_W)} vs capacity "
                       f"{mw(self.capacity_worst_hour_W)}{pct(self.peak_heat_W, self.capacity_worst_hour_W)} at "
                       f"wet-bulb {temperature_text(self.worst_hour_T_wb_K)}")
        if math.isfinite(self.capacity_design_W):
            out.append(f"  plant, design day     full-load heat {mw(self.full_load_heat_W)} vs capacity "
                       f"{mw(self.capacity_design_W)}{pct(self.full_load_heat_W, self.capacity_design_W)} at "
                       f"wet-bulb {temperature_text(self.design_T_wb_K)} ({self.design_source})")
        if self.plant_note:
            out.append(f"  plant                 {self.plant_note}")
        if math.isfinite(self.hours_supply_above):
            out.append(f"  CDU supply            {self.hours_supply_above:.2f} h above set point + "
                       f"{temperature_difference_text(SUPPLY_TOLERANCE_K, 'g')}; least margin CDU {self.least_margin_cdu} "
                       f"({temperature_difference_text(self.least_margin_K)})")
        if math.isfinite(self.hours_below_dew_point):
            out.append(f"  below dew point       {self.hours_below_dew_point:.2f} h with a CDU supply below the data "
                       f"hall's {temperature_text(DATA_HALL_DEW_POINT_K, 'g')} dew point (ASHRAE TC 9.9 upper bound); "
                       f"coldest supply {temperature_text(self.coldest_supply_K)}")
        if self.n_plus_one:
            cases = [c for c in self.n_plus_one if c.name != "all units" or not c.ok]  # all units: said if short
            out.append("  N+1, design day       " + ", ".join(
                f"{c.name} {'holds' if c.ok else 'FAILS'}" + ("" if c.ok else f" ({_why(c)})") for c in cases)
                + f" (set points within {temperature_difference_text(0.5, 'g')} at full load)")
        if self.chiller_free:
            free = sum(v[0] for v in self.chiller_free.values())
            tot = sum(v[1] for v in self.chiller_free.values())
            what = ", ".join(f"{k} {v[0]:,.1f} of {v[1]:,.1f} h" for k, v in self.chiller_free.items())
            out.append(f"  chiller-free          {free:,.1f} of {tot:,.1f} h"
                       + (f" ({what})" if self.has_chiller else " (the plant has no chiller: towers only)"))
        out += [f"  needs                 {a}" for a in self.advice]
        return out


def _why(c: object) -> str:
    """Why an N+1 case fails: its steady supply temperatures, or the note (no standby unit)."""
    if not math.isfinite(c.T_fac_sup_K):
        return c.note
    return f"facility supply {temperature_text(c.T_fac_sup_K)}, warmest CDU {temperature_text(c.T_sec_sup_max_K)}"


def full_load_heat_w(system: System) -> np.ndarray:
    """Heat to each CDU with every node at its maximum power (utilisation 1), through the power chain [W].

    Parameters
    ----------
    system : System
        The platform.

    Returns
    -------
    ndarray, shape (n_cdus,)
        ``liquid_fraction`` x rack input summed per CDU [W].
    """
    p = np.concatenate([np.full(q.n_nodes, float(node_power_w(1.0, 1.0, q.node))) for q in system.partitions])
    return PowerChain(system).evaluate(p).cdu_heat_W


def _worst_hour(time_s: np.ndarray, T_wb_K: np.ndarray) -> float:
    """Highest hourly mean wet-bulb of the series [K] (hours counted from the first interval)."""
    hour = np.floor((time_s - time_s[0]) / 3600.0).astype(np.int64)
    sums = np.bincount(hour, weights=T_wb_K)
    counts = np.bincount(hour)
    return float(np.max(sums[counts > 0] / counts[counts > 0]))


def _supply(cdu: dict, params, interval_s: float) -> tuple[float, int, float]:
    """Hours above set point + tolerance, least-margin CDU and its margin from the CDU supply series."""
    T = cdu.get("T_sec_sup")
    if T is None or params is None or not np.size(T):
        return math.nan, -1, math.nan
    limit = params.cdu.T_sec_sup_set_K + SUPPLY_TOLERANCE_K
    above = np.any(np.asarray(T) > limit, axis=1)
    margin = limit - np.nanmax(np.asarray(T), axis=0)
    k = int(np.argmin(margin))
    return float(above.sum() * interval_s / 3600.0), k, float(margin[k])


def _below_dew_point(cdu: dict, interval_s: float) -> tuple[float, float]:
    """Hours with some CDU supply below :data:`DATA_HALL_DEW_POINT_K` and the coldest supply [h, K] (NaN: none)."""
    T = cdu.get("T_sec_sup")
    if T is None or not np.size(T):
        return math.nan, math.nan
    T = np.asarray(T, dtype=float)
    below = np.any(T < DATA_HALL_DEW_POINT_K, axis=1)
    return float(below.sum() * interval_s / 3600.0), float(np.nanmin(T))


def _chiller_free(facility: dict, time_s: np.ndarray, params, origin_unix_s: float) -> tuple[dict, bool]:
    """Chiller-free hours per month of the run and whether the plant has a chiller ({} without the series)."""
    has = bool(getattr(getattr(params, "chiller", None), "enabled", False))
    t = np.asarray(time_s, dtype=float)
    if not t.size:
        return {}, has
    q = np.asarray(facility["Q_flow_chiller"], dtype=float) if has and "Q_flow_chiller" in facility else None
    if has and q is None:
        return {}, has
    interval_s = float(t[1] - t[0]) if t.size > 1 else 0.0
    origin = origin_unix_s if math.isfinite(origin_unix_s) else 0.0  # no calendar: months of 1970 (UTC)
    return chiller_free_hours_by_month(t, q if q is not None else np.zeros(t.size), origin, interval_s), has


def run_headroom(system: System, facility: dict, cdu: dict, time_s: np.ndarray, params: object = None,
                 design: object = None, origin_unix_s: float = math.nan) -> Headroom:
    """Headroom of a run (module docstring).

    Parameters
    ----------
    system : System
        The run's platform.
    facility : dict
        Facility series, str -> ndarray (n_intervals,): ``P_facility_W`` or ``P_it_W``, ``T_wb_K`` when cooling
        ran [W, K].
    cdu : dict
        CDU series, str -> ndarray (n_intervals, n_cdus): ``Q_flow_W``, ``T_sec_sup`` when the plant gives it
        [W, K].
    time_s : np.ndarray
        Interval starts [s], shape (n_intervals,).
    params : object
        The generated plant's description (cooling_fmu.params.PlantParams), or None: no plant figures.
    design : object
        The site's design conditions (cooling_fmu.weather.DesignConditions, or anything with ``wet_bulb_K`` and
        ``source``), or None: no design-day figures.
    origin_unix_s : float
        Unix time of ``time_s = 0`` [s], for the calendar months of the chiller-free hours (NaN: 1970).

    Returns
    -------
    Headroom
        The figures and the advice.
    """
    h = Headroom()
    P = facility.get("P_facility_W", facility.get("P_it_W"))
    h.peak_P_facility_W = float(np.nanmax(P)) if P is not None and np.size(P) else math.nan
    h.feed_W, h.feed_firm_W, h.feed_source = sized_facility(system).feed_W()  # counts from the system
    Q = np.asarray(cdu["Q_flow_W"])
    if Q.size:
        k = int(np.argmax(Q.sum(axis=1)))
        shape = Q[k]
        h.peak_heat_W = float(shape.sum())
    interval_s = float(time_s[1] - time_s[0]) if len(time_s) > 1 else 0.0
    h.hours_supply_above, h.least_margin_cdu, h.least_margin_K = _supply(cdu, params, interval_s)
    h.hours_below_dew_point, h.coldest_supply_K = _below_dew_point(cdu, interval_s)
    if params is not None and params.heat_rejection != "towers":
        # the capacity, N+1 and cell rules below are the towers' (at the wet-bulb); a dry or hybrid bank's design
        # day is the dry-bulb: said, not computed with the wrong rule (hpctwin site check sizes it)
        h.plant_note = (f"{params.heat_rejection} bank: capacity and N+1 at the design dry-bulb are printed by "
                        "`hpctwin site check` (the run's headroom rules are the towers')")
        params_towers = None
    else:
        params_towers = params
    design_advice = None
    if params_towers is not None and design is not None:
        full = full_load_heat_w(system)
        h.full_load_heat_W = float(full.sum())
        h.design_T_wb_K = float(design.wet_bulb_K)
        h.design_source = "0.4 % wet-bulb of " + str(getattr(design, "source", "")).split(":")[0]
        cap = cached_capacity(params, full, h.design_T_wb_K)
        h.capacity_design_W = cap.heat_W
        h.n_plus_one = cached_n_plus_one(params, h.design_T_wb_K, full)
        if h.full_load_heat_W > cap.heat_W:
            design_advice = _plant_advice(params, full, h.design_T_wb_K, h.full_load_heat_W, cap.heat_W,
                                          "full load at the design wet-bulb")
    if params_towers is not None and "T_wb_K" in facility and Q.size and h.peak_heat_W > 0:
        h.worst_hour_T_wb_K = _worst_hour(np.asarray(time_s), np.asarray(facility["T_wb_K"]))
        cap = cached_capacity(params, shape, h.worst_hour_T_wb_K)
        h.capacity_worst_hour_W = cap.heat_W
        if h.peak_heat_W > cap.heat_W:
            what = "the run's peak heat at its worst hour"
            if design is not None and h.worst_hour_T_wb_K > float(design.wet_bulb_K):
                what += _beyond_design_day(h, design, np.asarray(facility["T_wb_K"], dtype=float), interval_s)
            h.advice.append(_plant_advice(params, shape, h.worst_hour_T_wb_K, h.peak_heat_W, cap.heat_W, what))
    if design_advice is not None:
        h.advice.append(design_advice)
    if params is not None and "T_wb_K" in facility:  # a run with a plant
        h.chiller_free, h.has_chiller = _chiller_free(facility, time_s, params, origin_unix_s)
    if math.isfinite(h.feed_W) and h.peak_P_facility_W > h.feed_W:
        h.advice.append(f"{(h.peak_P_facility_W - h.feed_W) / 1e3:,.0f} kW more feed (peak facility "
                        f"{h.peak_P_facility_W / 1e6:.3f} MW > feed {h.feed_W / 1e6:.3f} MW)")
    elif math.isfinite(h.feed_firm_W) and h.peak_P_facility_W > h.feed_firm_W:
        h.advice.append(f"{(h.peak_P_facility_W - h.feed_firm_W) / 1e3:,.0f} kW more feed to keep the peak on the "
                        f"firm feed (one unit out of service)")
    return h


def _beyond_design_day(h: Headroom, design: object, T_wb_K: np.ndarray, interval_s: float) -> str:
    """Why the worst hour falls short when it is above the design wet-bulb: beyond the design day when the plant
    holds its design day (capacity and the N+1 "all units" case), a sizing defect when it does not (the N+1 line
    says the same).
    """
    hours = float(np.sum(T_wb_K > float(design.wet_bulb_K))) * interval_s / 3600.0
    head = (f" (wet-bulb {temperature_text(h.worst_hour_T_wb_K)}, above the "
            f"{temperature_text(float(design.wet_bulb_K))} 0.4 % design wet-bulb the plant is sized for: {hours:.1f} h "
            "of this run; ")
    allu = next((c for c in h.n_plus_one if c.name == "all units"), None)
    holds = h.full_load_heat_W <= h.capacity_design_W and (allu is None or allu.ok)
    if holds:
        # a plant sized for the 0.4 % design wet-bulb is expected to fall short above it (issue 22 item 8b)
        return head + ("the plant holds its design day, so falling short above it is a choice beyond the design "
                       "day, not a sizing defect)")
    why = (f"N+1 all units FAILS there ({_why(allu)})" if allu is not None and not allu.ok else
           "its capacity there is below the full-load heat")
    return head + f"but the plant does not hold its design day either: {why}, a sizing defect)"


def _plant_advice(params, shape: np.ndarray, T_wb_K: float, need_W: float, have_W: float, what: str) -> str:
    """What the plant needs to reject ``need_W`` at ``T_wb_K`` (extra tower cells, else the CDUs limit)."""
    k = cached_cells_needed(params, shape, T_wb_K, need_W, max_extra=4)
    short = f"{(need_W - have_W) / 1e3:,.0f} kW short for {what}"
    if k is not None:
        return f"{k} more tower cell(s) of the same size ({params.tower.n_cells} -> {params.tower.n_cells + k}); " \
               f"{short}"
    return f"larger CDU heat exchangers or flow (more tower cells alone do not suffice); {short}"
