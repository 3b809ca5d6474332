"""Ratings of the facility's electrical chain from the system: design load, transformer count, switchgear rating.

The design load is ``(1 + facility.design_overhead_fraction)`` times the IT power (rack input, through the power
chain) with every node at full utilisation; :meth:`power.facility.FacilitySpec.sized` turns it into the transformer
count (N + redundant units) and the switchgear rating. Kept apart from :mod:`power.system` and
:mod:`power.facility` because it needs the power chain, which needs the system.
"""

from __future__ import annotations

import numpy as np

from .chain import PowerChain
from .facility import FacilityOverheads, FacilitySpec
from .node import node_power_w
from .system import System

__all__ = ["peak_it_w", "sized_facility", "facility_overheads", "design_air_side_heat_w"]


def peak_it_w(system: System) -> float:
    """IT power (rack input) with every node at full CPU and GPU utilisation [W].

    Parameters
    ----------
    system : System
        The machine.

    Returns
    -------
    float
        Rack input of all nodes at ``cpu_util = gpu_util = 1`` through :class:`power.chain.PowerChain` [W].
    """
    p_max = float(node_power_w(1.0, 1.0, system.node))
    return float(PowerChain(system).evaluate(np.full(system.n_nodes, p_max)).it_input_W)


def sized_facility(system: System) -> FacilitySpec:
    """The system's facility spec with its ratings from the system (:meth:`FacilitySpec.sized`).

    Parameters
    ----------
    system : System
        The machine.

    Returns
    -------
    FacilitySpec
        ``design_load_W``, transformer ``count`` and switchgear ``rated_W`` filled in where the file leaves them.
    """
    f = system.facility
    if f.transformer is None and f.switchgear is None:
        return f
    return f.sized(peak_it_w(system))


def facility_overheads(system: System) -> FacilityOverheads:
    """The facility-overhead evaluator of a system, its ratings from the system.

    Parameters
    ----------
    system : System
        The machine.

    Returns
    -------
    FacilityOverheads
        For ``sized_facility(system)`` and the system's liquid fraction.
    """
    return FacilityOverheads(sized_facility(system), system.liquid_fraction)


def design_air_side_heat_w(system: System, Q_liquid_design_W: float, T_wb_K: float) -> float:
    """Heat the air side puts into the tower water at the plant's design point (the plant's ``tower.
    Q_air_side_design_W``, part of the heat its towers are sized for).

    The IT power whose liquid share is the plant's design heat, ``P_it = Q_liquid_design / liquid_fraction``,
    through :meth:`power.facility.FacilityOverheads.air_side_rejected_W` (CRAH coil load, fans and chilled-water
    power, all to the towers) at the design wet-bulb.

    Parameters
    ----------
    system : System
        The machine.
    Q_liquid_design_W : float
        The plant's design heat (``n_cdu x cdu.Q_flow_nominal_W``) [W], > 0.
    T_wb_K : float
        Design wet-bulb [K].

    Returns
    -------
    float
        Heat [W]; 0 when the system describes no air side.
    """
    ov = facility_overheads(system)
    r = ov.air_side_rejected_W(np.array([Q_liquid_design_W / ov.liquid_fraction]), np.array([float(T_wb_K)]))
    return 0.0 if r is None else float(r[0])
