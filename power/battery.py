"""A facility battery (BESS) behind the utility meter, dispatched to keep the grid draw within a ramp-rate limit.

The battery sits between the utility and the facility load on a uniformly resampled facility power series
``P[k]`` (mean power of bin ``k`` of length ``dt``). At every bin the controller picks the grid power ``G[k]`` and
the battery's terminal power ``B[k] = P[k] - G[k]`` (``B > 0`` discharges into the facility, ``B < 0`` charges
from the grid):

1. the wanted grid power follows the load but pulls the state of charge back to its set point::

       G* = P[k] - (SoC - SoC_set) / tau_restore          (positive: discharge the excess above the set point)

2. the grid power may change by at most ``r dt`` per bin: ``G = clip(G*, G[k-1] - r dt, G[k-1] + r dt)``;
3. the battery delivers ``B = P - G`` within its power rating and its energy bounds; what it cannot deliver stays
   on the grid (``G = P - B``), and the step is then a ramp violation if ``|G[k] - G[k-1]| > r dt``.

Losses are split evenly between charge and discharge (``eta_c = eta_d = sqrt(eta_rt)``, the usual assumption
when only the round-trip efficiency of a lithium-ion system is quoted, e.g. NREL ATB "Utility-Scale Battery
Storage", 85 % round trip)::

    charging at P_c  [W at the terminals] for dt:  dSoC = + eta_c P_c dt,       loss = (1 - eta_c) P_c dt
    discharging P_d  [W at the terminals] for dt:  dSoC = - P_d dt / eta_d,     loss = (1/eta_d - 1) P_d dt

so that ``E_in - E_out - E_loss = SoC_end - SoC_start`` holds exactly (up to rounding) at every step. Self-discharge
and the converter's standby loss are not modelled. SI units: W, J, s; the state of charge is in J.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Battery", "BatteryResult", "dispatch_ramp_limited"]


@dataclass(frozen=True)
class Battery:
    """A facility battery's ratings.

    Attributes
    ----------
    capacity_J : float
        Usable energy capacity [J] (kWh x 3.6e6); > 0.
    power_W : float
        Charge and discharge power rating at the terminals [W]; > 0.
    round_trip_efficiency : float
        Round-trip efficiency in (0, 1] (energy out / energy in over a full cycle).
    soc_min_fraction, soc_max_fraction : float
        Allowed state-of-charge band as fractions of the capacity, 0 <= min < max <= 1.
    soc_initial_fraction : float
        State of charge at the start, within the band.
    soc_set_fraction : float
        Set point the controller returns the state of charge to between ramps, within the band.
    restore_time_s : float
        Time constant of that return [s] (> 0).

    Raises
    ------
    ValueError
        If a rating is out of range (names the field and the value).
    """

    capacity_J: float
    power_W: float
    round_trip_efficiency: float = 0.85
    soc_min_fraction: float = 0.1
    soc_max_fraction: float = 0.9
    soc_initial_fraction: float = 0.5
    soc_set_fraction: float = 0.5
    restore_time_s: float = 900.0

    def __post_init__(self) -> None:
        """Check the ratings."""
        if not (self.capacity_J > 0 and math.isfinite(self.capacity_J)):
            raise ValueError(f"battery capacity must be a finite number > 0 J, got {self.capacity_J!r}")
        if not (self.power_W > 0 and math.isfinite(self.power_W)):
            raise ValueError(f"battery power must be a finite number > 0 W, got {self.power_W!r}")
        if not (0 < self.round_trip_efficiency <= 1):
            raise ValueError(f"battery round_trip_efficiency must be in (0, 1], got {self.round_trip_efficiency!r}")
        if not (0 <= self.soc_min_fraction < self.soc_max_fraction <= 1):
            raise ValueError(f"battery state-of-charge band must satisfy 0 <= min < max <= 1, got "
                             f"[{self.soc_min_fraction!r}, {self.soc_max_fraction!r}]")
        for name in ("soc_initial_fraction", "soc_set_fraction"):
            v = getattr(self, name)
            if not (self.soc_min_fraction <= v <= self.soc_max_fraction):
                raise ValueError(f"battery {name} = {v!r} is outside the band [{self.soc_min_fraction}, "
                                 f"{self.soc_max_fraction}]")
        if not (self.restore_time_s > 0):
            raise ValueError(f"battery restore_time_s must be > 0 s, got {self.restore_time_s!r}")

    @property
    def eta_one_way(self) -> float:
        """Charge (and discharge) efficiency, ``sqrt(round_trip_efficiency)``."""
        return math.sqrt(self.round_trip_efficiency)


@dataclass
class BatteryResult:
    """What the battery did on a resampled series (all arrays of shape (n,) over the bins).

    Attributes
    ----------
    grid_W : ndarray
        Power drawn from the utility [W] (load minus battery).
    battery_W : ndarray
        Battery terminal power [W]; > 0 discharging into the facility, < 0 charging.
    soc_J : ndarray, shape (n + 1,)
        State of charge at the bin edges [J]; ``soc_J[0]`` is the initial state.
    E_in_J, E_out_J, E_loss_J : float
        Energy into the battery terminals while charging, out of them while discharging, and lost [J].
    violations : ndarray of int64
        Bins ``k >= 1`` where ``|grid_W[k] - grid_W[k-1]|`` exceeds the ramp limit (more than 1e-9 relative).
    """

    grid_W: np.ndarray
    battery_W: np.ndarray
    soc_J: np.ndarray
    E_in_J: float
    E_out_J: float
    E_loss_J: float
    violations: np.ndarray

    def balance_residual_J(self) -> float:
        """``E_in - E_out - E_loss - (SoC_end - SoC_start)`` [J]: zero up to rounding."""
        return self.E_in_J - self.E_out_J - self.E_loss_J - float(self.soc_J[-1] - self.soc_J[0])


def dispatch_ramp_limited(load_W: np.ndarray, dt_s: float, ramp_W_per_s: float,
                          battery: Battery | None) -> BatteryResult:
    """Dispatch a battery so that the grid draw changes by at most ``ramp_W_per_s * dt_s`` per bin.

    Parameters
    ----------
    load_W : np.ndarray
        Facility power, the mean of each bin [W], float64 of shape (n,).
    dt_s : float
        Bin length [s] (> 0).
    ramp_W_per_s : float
        Ramp-rate limit of the grid draw [W/s] (> 0; ``inf`` = no limit: the battery only restores its set point).
    battery : Battery | None
        The battery; None gives the grid draw without one (``grid_W = load_W``) and its violations.

    Returns
    -------
    BatteryResult
        With ``soc_J`` all zero and no energy when ``battery`` is None.

    Raises
    ------
    ValueError
        If ``dt_s`` or ``ramp_W_per_s`` is not > 0, or the load has a non-finite value.
    """
    P = np.asarray(load_W, dtype=float)
    if not (dt_s > 0):
        raise ValueError(f"dt_s must be > 0, got {dt_s!r}")
    if not (ramp_W_per_s > 0):
        raise ValueError(f"ramp limit must be > 0 W/s, got {ramp_W_per_s!r}")
    if not np.all(np.isfinite(P)):
        raise ValueError("the facility power series has a non-finite value")
    n = P.size
    step = ramp_W_per_s * dt_s
    if battery is None:
        d = np.abs(np.diff(P))
        viol = np.flatnonzero(d > step * (1 + 1e-9)) + 1
        return BatteryResult(P.copy(), np.zeros(n), np.zeros(n + 1), 0.0, 0.0, 0.0, viol.astype(np.int64))
    cap = battery.capacity_J
    lo_soc, hi_soc = battery.soc_min_fraction * cap, battery.soc_max_fraction * cap
    soc_set = battery.soc_set_fraction * cap
    eta = battery.eta_one_way
    pmax = battery.power_W
    tau = battery.restore_time_s
    G = np.empty(n)
    B = np.empty(n)
    soc = np.empty(n + 1)
    soc[0] = battery.soc_initial_fraction * cap
    e_in = e_out = e_loss = 0.0
    g_prev = P[0] if n else 0.0
    for k in range(n):  # a sequential controller: one bin depends on the last (n ~ 1e5-1e6 bins, ~1 s)
        s = soc[k]
        want = P[k] - (s - soc_set) / tau
        if k > 0:
            want = min(max(want, g_prev - step), g_prev + step)
        b = P[k] - want
        # power rating, then energy bounds (discharge draws b dt / eta from SoC; charge stores -b dt eta)
        b = min(max(b, -pmax), pmax)
        if b > 0:
            b = min(b, max(s - lo_soc, 0.0) * eta / dt_s)
        elif b < 0:
            b = max(b, -max(hi_soc - s, 0.0) / (eta * dt_s))
        if b >= 0:
            de = b * dt_s
            e_out += de
            e_loss += de / eta - de
            soc[k + 1] = s - de / eta
        else:
            de = -b * dt_s
            e_in += de
            e_loss += de - de * eta
            soc[k + 1] = s + de * eta
        B[k] = b
        G[k] = P[k] - b
        g_prev = G[k]
    d = np.abs(np.diff(G))
    viol = np.flatnonzero(d > step * (1 + 1e-9)) + 1
    return BatteryResult(G, B, soc, e_in, e_out, e_loss, viol.astype(np.int64))
