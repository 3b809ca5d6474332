"""What a facility simulation may know about a cooling plant: the :class:`Plant` protocol and its conventions.

The simulation (:mod:`scheduler_sim.kernel.simulation`) talks to a plant only through this module: the protocol's
methods, the typed failure :class:`PlantError` (which carries the outputs of the steps completed before it), the
naming of per-CDU outputs (``name[i]``, 1-based), the exact step averages of power outputs the plant integrates
into running totals (:class:`StepAverager`), and the CDU supply-temperature rise per watt of heat
(:func:`supply_rise_K_per_W`).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["Plant", "PlantError", "StepAverager", "AVERAGED_BY_TOTAL", "average_pairs", "WATER_CP_J_PER_KG_K", "cdu_series_name",
           "group_cdu_columns", "supply_rise_K_per_W", "CDU_SUPPLY_T", "cdu_supply_columns", "validity_warnings"]

#: Per-CDU output holding the CDU's secondary (rack-side) supply temperature [K].
CDU_SUPPLY_T = "T_sec_sup"

#: Specific heat of liquid water [J/(kg K)] used for the CDU secondary loop's temperature rise (4.186 kJ/(kg K),
#: the handbook value near 15-20 degC; IAPWS-95 gives 4.18-4.19 kJ/(kg K) over 10-45 degC).
WATER_CP_J_PER_KG_K = 4186.0

#: Plant power (or flow) outputs sampled at the end of a step -> the running total the plant integrates them into.
#: Where a plant has both, the step average is exact: ``P_avg = (E(t_k+1) - E(t_k)) / step``. Per-CDU outputs
#: ``P[i]`` pair with ``E[i]`` element by element (``P_pump_sec[3]`` -> ``E_pump_sec_out[3]``).
AVERAGED_BY_TOTAL = {"P_cooling": "E_cooling_out", "Q_flow_tower": "E_tower_out", "Q_flow_chiller": "E_chiller_out",
                     "P_fan_tower": "E_fan_out", "m_flow_makeup": "M_makeup_out", "P_pump_fac": "E_pump_fac_out",
                     "P_pump_tower": "E_pump_tower_out", "P_chiller": "E_chiller_elec_out",
                     "P_pump_sec": "E_pump_sec_out"}


def average_pairs(names: list[str]) -> list[tuple[str, int, str, int]]:
    """(output name, its index, total name, its index) for each output whose running total exists.

    Plant-level outputs pair by name (``P_pump_fac`` -> ``E_pump_fac_out``); per-CDU outputs pair element by element
    (``P_pump_sec[3]`` -> ``E_pump_sec_out[3]``).
    """
    index = {n: i for i, n in enumerate(names)}
    pairs = []
    for n, i in index.items():
        base, _, rest = n.partition("[")
        total = AVERAGED_BY_TOTAL.get(base)
        if total is None:
            continue
        e = total + ("[" + rest if rest else "")
        if e in index:
            pairs.append((n, i, e, index[e]))
    return pairs


class PlantError(RuntimeError):
    """A plant failed during :meth:`Plant.run`; the steps completed before the failure are kept.

    Parameters
    ----------
    message : str
        What failed (function, time, status).
    completed_outputs : np.ndarray | None
        Shape (k, n_outputs): SI outputs of the ``k`` steps completed in the failing call (columns as
        ``Plant.output_names``); ``k`` may be 0. Default (None): none completed.

    Attributes
    ----------
    completed_outputs : ndarray, shape (k, n_outputs)
        As given (an empty ``(0, 0)`` array when none).
    """

    def __init__(self, message: str, completed_outputs: np.ndarray | None = None) -> None:
        super().__init__(message)
        self.completed_outputs = (np.zeros((0, 0)) if completed_outputs is None
                                  else np.asarray(completed_outputs, dtype=float))


@runtime_checkable
class Plant(Protocol):
    """A cooling plant stepped at a fixed communication step (e.g. :class:`cooling_fmu.plant.CoolingPlant`).

    Attributes
    ----------
    output_names : list of str
        Names of the output columns; per-CDU outputs are ``name[i]`` (``i`` = 1 .. n_cdu).
    output_units : list of str
        SI unit of each output.
    P_cooling_index : int
        Column of the plant's electrical power ``P_cooling`` [W].
    """

    output_names: list[str]
    output_units: list[str]
    P_cooling_index: int

    def initialize(self, heat_w: np.ndarray, T_wb_K: float) -> np.ndarray:
        """Initialise at the first step's inputs; return the outputs at time 0, shape (n_outputs,)."""

    def run(self, heat_w: np.ndarray, T_wb_K: np.ndarray) -> np.ndarray:
        """Advance one step per row: heat per CDU [W] shape (m, n_cdu), wet-bulb [K] shape (m,).

        Returns the SI outputs at the end of each step, shape (m, n_outputs). Raises :class:`PlantError` when a
        step fails, carrying the outputs of the steps completed before it.
        """


def cdu_series_name(name: str) -> str | None:
    """Series name of a per-CDU output (``'T_sec_sup[3]'`` -> ``'T_sec_sup'``); None for a plant-level output."""
    return name.split("[", 1)[0] if name.endswith("]") and "[" in name else None


def group_cdu_columns(names: list[str]) -> dict[str, list[int]]:
    """Columns of each per-CDU series, in CDU order (``{'T_sec_sup': [col of [1], col of [2], ...]}``)."""
    groups: dict[str, list[tuple[int, int]]] = {}
    for i, nm in enumerate(names):
        base = cdu_series_name(nm)
        if base is not None:
            idx = int(nm[nm.index("[") + 1:-1])
            groups.setdefault(base, []).append((idx, i))
    return {b: [i for _, i in sorted(v)] for b, v in groups.items()}


def cdu_supply_columns(names: list[str], n_cdus: int) -> np.ndarray | None:
    """Columns of the per-CDU secondary supply temperature (:data:`CDU_SUPPLY_T`) in CDU order.

    Parameters
    ----------
    names : list[str]
        The plant's output names.
    n_cdus : int
        CDUs of the system.

    Returns
    -------
    ndarray of int or None
        ``n_cdus`` column indices; None when the plant has no such output for every CDU.
    """
    idx = group_cdu_columns(list(names)).get(CDU_SUPPLY_T)
    return np.array(idx) if idx and len(idx) == n_cdus else None


def validity_warnings(facility: dict[str, np.ndarray]) -> list[str]:
    """Warnings for interval series outside the plant model's validity.

    Facility supply water below 2 degC (``T_fac_sup`` [K]; the model has no tower bypass or freeze protection) and
    negative tower make-up water (``m_flow_makeup`` [kg/s]; the towers were heating colder water).

    Parameters
    ----------
    facility : dict[str, np.ndarray]
        Shape (n_intervals,) each: interval-average facility series (the plant's outputs among them).

    Returns
    -------
    list of str
        One message per condition met (empty when none, or when the plant has no such output).
    """
    warnings = []
    if "T_fac_sup" in facility and len(facility["T_fac_sup"]):
        cold = facility["T_fac_sup"] < 275.15
        if cold.any():
            warnings.append(f"facility supply water below 2 degC in {int(cold.sum())} output interval(s) (min "
                            f"{facility['T_fac_sup'].min() - 273.15:.1f} degC): the plant model has no tower bypass "
                            f"or freeze protection, so results there are outside its validity")
    if "m_flow_makeup" in facility and len(facility["m_flow_makeup"]) and facility["m_flow_makeup"].min() < 0:
        warnings.append(f"negative tower make-up water in {int((facility['m_flow_makeup'] < 0).sum())} interval(s):"
                        f" the towers were adding heat to colder water (outside the model's validity)")
    return warnings


def supply_rise_K_per_W(plant: Plant) -> float | None:
    """CDU secondary supply-temperature rise per watt of added heat [K/W]: ``1 / (m_flow_sec_nominal * cp)``.

    Parameters
    ----------
    plant : Plant
        A plant with a plant description (``plant.params.cdu.m_flow_sec_nominal_kg_s`` [kg/s]).

    Returns
    -------
    float or None
        None when the plant has no such description (e.g. a test double).
    """
    cdu_params = getattr(getattr(plant, "params", None), "cdu", None)
    if cdu_params is None or not hasattr(cdu_params, "m_flow_sec_nominal_kg_s"):
        return None
    return 1.0 / (cdu_params.m_flow_sec_nominal_kg_s * WATER_CP_J_PER_KG_K)


class StepAverager:
    """Turns power outputs sampled at step ends into exact step averages from the plant's running totals.

    Parameters
    ----------
    output_names : list[str]
        The plant's output columns.
    step_s : float
        Communication step [s].
    """

    def __init__(self, output_names: list[str], step_s: float) -> None:
        self.step_s = float(step_s)
        self.pairs = average_pairs(list(output_names))
        self.last_totals: dict[str, float] = {}

    def start(self, initial: np.ndarray) -> None:
        """Take the running totals at time 0 from the outputs of :meth:`Plant.initialize`."""
        self.last_totals = {e: float(initial[ie]) for _, _, e, ie in self.pairs}

    def apply(self, out: np.ndarray) -> None:
        """Replace the sampled powers of ``out`` (shape (m, n_outputs), consecutive steps) by step averages, in place."""
        for _, ip, e, ie in self.pairs:
            tot = out[:, ie]
            prev = np.concatenate(([self.last_totals[e]], tot[:-1]))
            out[:, ip] = (tot - prev) / self.step_s
            self.last_totals[e] = float(tot[-1])
