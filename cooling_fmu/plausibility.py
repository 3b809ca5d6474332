"""Physical plausibility of a cooling plant: a design check at load and a guard on the plant's outputs at run time.

Water in the loops must stay liquid: above its freezing point and below its boiling point at the loop pressure.
Heat must flow from hot to cold: a water stream cooled by another medium cannot leave colder than that medium
(positive *approach* temperature).

*At load* (:func:`check_design_heat`): a plant description that cannot reject its design heat with liquid water is
refused. At design heat ``Q`` per CDU, every valve open (full flows ``m_sec``, ``m_fac``) and the facility supply at
its setpoint ``T_fs``, the steady state of one CDU is, by energy balance and the effectiveness-NTU relation of a
*counterflow* heat exchanger (Incropera & DeWitt, Fundamentals of Heat and Mass Transfer, 6th ed., Table 11.3,
eq. 11.29a; counterflow is the most effective arrangement for a given UA, so any other plate or shell arrangement
needs larger temperature differences)::

    C_sec = m_sec cp,  C_fac = m_fac cp,  C_min = min, Cr = C_min / C_max,  NTU = UA / C_min
    eps   = (1 - exp(-NTU (1 - Cr))) / (1 - Cr exp(-NTU (1 - Cr)))      (Cr < 1; NTU / (1 + NTU) at Cr = 1)
    T_sec_ret = T_fs + Q / (eps C_min)        hottest water: secondary return (CDU inlet from the racks)
    T_fac_ret = T_fs + Q / C_fac              facility return

The plant is refused when a setpoint is not a liquid-water temperature, when the secondary supply setpoint is not
above the facility supply setpoint (the CDU's design approach must be positive), or when either return is at or
above the boiling point at :data:`LOOP_PRESSURE_PA`: it could only move
its design heat as steam. (A facility flow of 0.1 kg/s for 266.7 kW gives a 637 K rise; field case
``plant-impossible`` of issue #12.) The tower bank's capacity is not checked here (it depends on the tower model);
the run-time guard catches a plant whose basin water heats past the bounds.

*At run time* (:class:`OutputGuard`): the coupling checks every plant output step, by output *name and unit*, so
the guard holds for any plant model or a site's own FMU:

* every output whose unit is ``K`` and whose name starts with ``T_`` (a water temperature of the plant: CDU supply
  and return, facility supply and return, tower leaving water) must lie in ``(T_FREEZE_K, T_boil)``;
* approach temperatures, where the names exist: a CDU's secondary supply ``T_sec_sup[i]`` is cooled by the
  facility supply ``T_fac_sup``, and the towers' leaving water ``T_tower_out`` by outdoor air at the wet-bulb
  temperature; both differences must stay above ``-APPROACH_TOLERANCE_K``.

Constants
---------
``T_FREEZE_K`` = 273.15 K: the ice point of water at 101.325 kPa (ITS-90; the pressure shift, -74 nK/Pa, is
negligible at loop pressures). ``LOOP_PRESSURE_PA`` = 101,325 Pa: the lowest pressure in the plant is the open
tower basin, at atmospheric pressure; closed loops run higher, so boiling there is only later (this bound is the
conservative one). The boiling point at a pressure is the saturation temperature of water, found by inverting the
ASHRAE Handbook Fundamentals 2017 ch. 1 eq. 6 saturation pressure (:func:`psychrolib.GetSatVapPres`): 373.12 K at
101,325 Pa.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["T_FREEZE_K", "LOOP_PRESSURE_PA", "APPROACH_TOLERANCE_K", "saturation_temperature_K",
           "design_steady_state", "check_design_heat", "OutputGuard", "Violation"]

#: Freezing point of water [K] (ice point at 101.325 kPa, ITS-90).
T_FREEZE_K = 273.15
#: Pressure at which the boiling bound is taken [Pa]: atmospheric, the open tower basin (the lowest in the plant).
LOOP_PRESSURE_PA = 101325.0
#: Approach temperatures below ``-APPROACH_TOLERANCE_K`` are a violation [K]. A small negative margin lets
#: step-averaged outputs of a dynamic model (mixed volumes lag each other by one step) pass; a reversed heat flow
#: of more than this is not a lag.
APPROACH_TOLERANCE_K = 0.5


def saturation_temperature_K(p_Pa: float) -> float:
    """Boiling point of water at pressure ``p_Pa`` [K]: the root of ``GetSatVapPres(T) = p`` (bisection to 1e-9 K).

    Source: ASHRAE Handbook Fundamentals 2017 ch. 1 eq. 5-6 (Hyland-Wexler), via :mod:`psychrolib`; valid for
    0-200 degC, i.e. 611 Pa to 1.55 MPa.

    Parameters
    ----------
    p_Pa : float
        Absolute pressure [Pa].

    Returns
    -------
    float
        Saturation temperature [K].

    Raises
    ------
    ValueError
        If ``p_Pa`` is outside 612 Pa .. 1.5 MPa.
    """
    import psychrolib

    psychrolib.SetUnitSystem(psychrolib.SI)
    if not 612.0 <= p_Pa <= 1.5e6:
        raise ValueError(f"loop pressure {p_Pa} Pa outside 612 Pa .. 1.5 MPa (0-200 degC saturation range)")
    lo, hi = 0.01, 200.0
    while hi - lo > 1e-9:
        mid = 0.5 * (lo + hi)
        if psychrolib.GetSatVapPres(mid) < p_Pa:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi) + 273.15


def design_steady_state(params: object) -> dict[str, float]:
    """Steady state of one CDU at design heat, valves open, facility supply at its setpoint (module docstring).

    Parameters
    ----------
    params : object
        A :class:`cooling_fmu.params.PlantParams` (not imported: the loader calls this module). Uses
        ``cdu.Q_flow_nominal_W``, ``cdu.m_flow_sec_nominal_kg_s``, ``cdu.m_flow_fac_nominal_kg_s``,
        ``cdu.UA_hx_W_K``, ``tower.T_fac_sup_set_K`` and ``cp_water_J_kgK``.

    Returns
    -------
    dict
        ``eps`` [1], ``NTU`` [1], ``T_sec_ret_K``, ``T_sec_sup_K``, ``T_fac_ret_K``, ``T_fac_sup_K`` [K].
    """
    cdu = params.cdu
    cp = params.cp_water_J_kgK
    Q = cdu.Q_flow_nominal_W
    c_sec, c_fac = cdu.m_flow_sec_nominal_kg_s * cp, cdu.m_flow_fac_nominal_kg_s * cp
    c_min, c_max = min(c_sec, c_fac), max(c_sec, c_fac)
    cr = c_min / c_max
    ntu = cdu.UA_hx_W_K / c_min
    if abs(1.0 - cr) < 1e-12:
        eps = ntu / (1.0 + ntu)
    else:
        e = math.exp(-ntu * (1.0 - cr))
        eps = (1.0 - e) / (1.0 - cr * e)
    t_fs = params.tower.T_fac_sup_set_K
    t_sr = t_fs + Q / (eps * c_min)
    return {"eps": eps, "NTU": ntu, "T_sec_ret_K": t_sr, "T_sec_sup_K": t_sr - Q / c_sec,
            "T_fac_ret_K": t_fs + Q / c_fac, "T_fac_sup_K": t_fs}


def check_design_heat(params: object, source: str = "", p_Pa: float = LOOP_PRESSURE_PA,  # noqa: DOC503
                      error: type[Exception] = ValueError) -> None:
    """Refuse a plant that can only reject its design heat with water at or above its boiling point.

    Also refused: a setpoint (``cdu.T_sec_sup_set_K``, ``tower.T_fac_sup_set_K``) outside liquid water, and a
    secondary supply setpoint at or below the facility supply setpoint (a non-positive design approach).

    Parameters
    ----------
    params : object
        The plant description (a :class:`cooling_fmu.params.PlantParams`).
    source : str
        File name for the message.
    p_Pa : float
        Loop pressure of the boiling bound [Pa].
    error : type[Exception]
        The exception class raised (the caller's: :class:`cooling_fmu.params.PlantParamsError` when loading a plant
        file; passed in so that this module does not import the loader, which calls it).

    Raises
    ------
    error
        Naming the file, the fields involved and the steady-state temperature reached.
    """
    PlantParamsError = error  # noqa: N806 - the caller's error class

    s = design_steady_state(params)
    t_boil = saturation_temperature_K(p_Pa)
    where = f"{source}: " if source else ""
    cdu = params.cdu
    t_fs = params.tower.T_fac_sup_set_K
    for field_name, T in (("cdu.T_sec_sup_set_K", cdu.T_sec_sup_set_K), ("tower.T_fac_sup_set_K", t_fs)):
        if not T_FREEZE_K < T < t_boil:
            raise PlantParamsError(f"{where}{field_name} = {T:g} K is not a liquid-water temperature (between "
                                   f"{T_FREEZE_K} K and {t_boil:.2f} K at {p_Pa / 1e3:g} kPa)")
    if not cdu.T_sec_sup_set_K > t_fs:
        raise PlantParamsError(f"{where}cdu.T_sec_sup_set_K = {cdu.T_sec_sup_set_K:g} K must be above "
                               f"tower.T_fac_sup_set_K = {t_fs:g} K: a CDU cannot cool its racks' water below the "
                               f"facility water that cools it (the design approach would be "
                               f"{cdu.T_sec_sup_set_K - t_fs:+g} K)")
    q = f"{cdu.Q_flow_nominal_W / 1e3:g} kW"
    if s["T_fac_ret_K"] >= t_boil:
        raise PlantParamsError(
            f"{where}cannot reject its design heat: cdu.Q_flow_nominal_W = {q} through cdu.m_flow_fac_nominal_kg_s = "
            f"{cdu.m_flow_fac_nominal_kg_s:g} kg/s heats the facility water by "
            f"{s['T_fac_ret_K'] - s['T_fac_sup_K']:.0f} K to {s['T_fac_ret_K'] - 273.15:.0f} degC, above its boiling "
            f"point ({t_boil - 273.15:.1f} degC at {p_Pa / 1e3:g} kPa); check the facility flow")
    if s["T_sec_ret_K"] >= t_boil:
        raise PlantParamsError(
            f"{where}cannot reject its design heat: moving cdu.Q_flow_nominal_W = {q} through the CDU heat exchanger "
            f"(cdu.UA_hx_W_K = {cdu.UA_hx_W_K:g} W/K, counterflow effectiveness {s['eps']:.3f}, flows "
            f"{cdu.m_flow_sec_nominal_kg_s:g} / {cdu.m_flow_fac_nominal_kg_s:g} kg/s) needs a secondary return of "
            f"{s['T_sec_ret_K'] - 273.15:.0f} degC, above the boiling point ({t_boil - 273.15:.1f} degC at "
            f"{p_Pa / 1e3:g} kPa)")


@dataclass
class Violation:
    """The first output step outside the bounds, and how many steps were."""

    name: str
    value: float
    bound: str
    t_s: float
    steps: int = 0
    worst: float = float("nan")

    def message(self) -> str:
        """One line: what left which bound, when, how far and for how many steps."""
        return (f"plant output {self.name} = {self.value:.2f} (first at t = {self.t_s:.0f} s) is outside physical "
                f"bounds: {self.bound}; {self.steps} cooling step(s) out of bounds (worst {self.worst:.2f}); "
                f"results after that time are not physical")

    def to_dict(self) -> dict:
        """JSON-ready record (written to the run file)."""
        return {"name": self.name, "first_value": self.value, "bound": self.bound, "first_t_s": self.t_s,
                "steps": self.steps, "worst_value": self.worst}


@dataclass
class OutputGuard:
    """Check plant output steps against the physical bounds of the module docstring, by output name and unit.

    Parameters
    ----------
    output_names, output_units : sequence of str
        The plant's outputs (``CoolingPlant.output_names`` / ``output_units``).
    p_Pa : float
        Loop pressure of the boiling bound [Pa].

    Attributes
    ----------
    violations : dict of str -> Violation
        One record per quantity and bound that was left (key: ``"<output without [i]> <kind>"``, so the CDUs of a
        plant share one record: the first CDU output to leave it is named), in order of first occurrence.
    """

    output_names: list[str]
    output_units: list[str]
    p_Pa: float = LOOP_PRESSURE_PA
    violations: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = list(self.output_names)
        self.t_boil_K = saturation_temperature_K(self.p_Pa)
        self._water = [i for i, (n, u) in enumerate(zip(names, self.output_units))
                       if u == "K" and n.startswith("T_")]
        idx = {n: i for i, n in enumerate(names)}
        fs = idx.get("T_fac_sup")
        self._approach = [(idx[n], fs, n, "T_fac_sup") for n in names
                          if fs is not None and n.split("[", 1)[0] == "T_sec_sup"]
        self._tower = idx.get("T_tower_out")
        self._water_idx = np.array(self._water, dtype=np.intp)
        self._appr_i = np.array([i for i, _, _, _ in self._approach], dtype=np.intp)
        self._appr_j = np.array([j for _, j, _, _ in self._approach], dtype=np.intp)

    def violates(self, out: np.ndarray, T_wb_K: np.ndarray | None = None) -> bool:
        """True if some row leaves a bound that :meth:`check` tests (all columns at once; no record made).

        The same comparisons as the per-quantity loop of :meth:`check` (NaN compares false there as here), so
        ``False`` means the loop would record nothing (issue #16: the per-column loop was 35 % of a 257-CDU day).
        The water temperatures are tested through their minimum and maximum: every one is finite, above freezing
        and below boiling exactly when ``min > T_freeze`` and ``max < T_boil`` (a NaN makes both false, an
        infinity fails one).

        Parameters
        ----------
        out : np.ndarray
            Shape (m, n_outputs): plant output rows (SI).
        T_wb_K : np.ndarray | None
            Shape (m,): wet-bulb of each row [K]; None skips the tower-approach bound.

        Returns
        -------
        bool
            Whether :meth:`check` would record a violation for these rows.
        """
        if self._water_idx.size and out.shape[0]:
            w = out[:, self._water_idx]
            if not (w.min() > T_FREEZE_K and w.max() < self.t_boil_K):
                return True
        if self._appr_i.size and ((out[:, self._appr_i] - out[:, self._appr_j]) < -APPROACH_TOLERANCE_K).any():
            return True
        if self._tower is not None and T_wb_K is not None:
            if ((out[:, self._tower] - np.asarray(T_wb_K, dtype=float)) < -APPROACH_TOLERANCE_K).any():
                return True
        return False

    def check(self, t_end_s: np.ndarray, out: np.ndarray, T_wb_K: np.ndarray | None = None) -> int | None:
        """Check output rows ``out`` (m, n_out) ending at times ``t_end_s`` (m,) [s]; record what is out of bounds.

        Parameters
        ----------
        t_end_s : np.ndarray
            Shape (m,). End of each row's step [s].
        out : np.ndarray
            Shape (m, n_out). The plant's outputs in its output order.
        T_wb_K : np.ndarray | None
            Shape (m,). Wet-bulb of each row [K] (bounds relative to it); None: those bounds are not checked.

        Returns
        -------
        int or None
            Index of the first row out of bounds, or None when every row is within bounds.
        """
        if not self.violates(out, T_wb_K):
            return None
        first = None

        def hit(key: str, name: str, vals: np.ndarray, bad: np.ndarray, bound: str, high: bool) -> None:
            nonlocal first
            k = int(np.argmax(bad))
            w = vals[bad]
            worst = float(np.nanmax(w) if high else np.nanmin(w)) if np.isfinite(w).any() else float("nan")
            v = self.violations.get(key)
            if v is None:
                v = self.violations[key] = Violation(name, float(vals[k]), bound, float(t_end_s[k]), 0, worst)
            elif math.isfinite(worst):
                v.worst = max(v.worst, worst) if high else min(v.worst, worst)
            v.steps += int(bad.sum())
            first = k if first is None else min(first, k)

        for i in self._water:
            name = self.output_names[i]
            base = name.split("[", 1)[0]  # one record per quantity: the CDUs of a plant share it
            col = out[:, i]
            bad = ~np.isfinite(col)
            if bad.any():
                hit(f"{base} finite", name, col, bad, "must be finite", True)
            lo = col <= T_FREEZE_K
            if lo.any():
                hit(f"{base} freeze", name, col, lo, f"liquid water stays above its freezing point {T_FREEZE_K} K",
                    False)
            hi = col >= self.t_boil_K
            if hi.any():
                hit(f"{base} boil", name, col, hi, f"liquid water stays below its boiling point {self.t_boil_K:.2f} K "
                    f"at {self.p_Pa / 1e3:g} kPa", True)
        for i, j, name, ref in self._approach:
            base = name.split("[", 1)[0]
            d = out[:, i] - out[:, j]
            bad = d < -APPROACH_TOLERANCE_K
            if bad.any():
                hit(f"{base} approach", f"{name} - {ref}", d, bad, f"approach {name} - {ref} stays above "
                    f"-{APPROACH_TOLERANCE_K} K (a CDU cannot cool its racks' water below the facility water)", False)
        if self._tower is not None and T_wb_K is not None:
            d = out[:, self._tower] - np.asarray(T_wb_K, dtype=float)
            bad = d < -APPROACH_TOLERANCE_K
            if bad.any():
                hit("T_tower_out approach", "T_tower_out - T_wb", d, bad, f"tower approach T_tower_out - T_wb stays "
                    f"above -{APPROACH_TOLERANCE_K} K (evaporative cooling cannot go below the wet-bulb)", False)
        return first
