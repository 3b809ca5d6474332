"""Tower cell staging with hysteresis and minimum on / off times: a supervisory controller at the communication step.

rumoca 0.9.13 fires no events (``if`` needing events never switch; docs/cooling.md), so a discrete staging state
cannot live inside the FMU; this controller runs in Python once per communication step and hands the number of
running cells to the plant (an input such as ``n_cells_on``).

Rule
----
ASHRAE 90.1-2019 sec. 6.5.5.2.2 requires multicell heat-rejection equipment with variable-speed fans to run the
largest number of fans the manufacturer allows, all at the same speed: by the fan law (power ~ ``n s^3`` for the
air ``n s``) the same air costs ``(n / (n + 1))^2`` of the power on one cell more. The number of cells is therefore
bounded only by the fans' minimum speed. This controller stages that rule with a deadband and time delays (the
pattern of the supervisory sequences in the ASHRAE Handbook HVAC Applications, "Supervisory control strategies and
optimization"; the handbook could not be opened here, so the thresholds below are not taken from it). With ``n``
cells on, the bank's required air-flow fraction ``y`` (0..1 of all ``N`` cells at full speed) gives the speed
``s = y N / n``; ``y_f`` is ``y`` through a first-order filter of time constant ``tau_filter_s``:

* stage UP one cell when one cell more would still run at or above ``s_add``, ``y_f N / (n + 1) >= s_add``, or at
  once when the running cells could not move the air (``y N / n > 1``);
* stage DOWN one cell when the running cells are slower than ``s_drop``, ``y_f N / n < s_drop``, and one cell fewer
  could move the air unfiltered (``y N / (n - 1) < 0.9``);
* after any change the stage is held for ``t_min_stage_s`` (minimum on / off time), and at most
  ``starts_per_hour`` stage-ups happen in any hour (NEMA MG 1 Part 12.54 limits the starts per hour of induction
  motors).

The numbers (``s_add = 0.3``, ``s_drop = 0.25``, i.e. 0.1 and 0.05 above the 0.2 VFD floor ``y_fan_min`` of every
shipped plant; 30 min filter, 15 min stage time, 4 starts an hour) are ASSUMPTION. After a stage-up the cells run
at ``>= s_add > s_drop``, and after a stage-down from ``n`` at ``< s_drop n / (n - 1)``, below the ``s_add n / (n - 1)``
the next stage-up needs: a held demand never switches back, and the band ``s_drop n .. s_add n`` of ``y_f N`` at
which ``n`` cells are kept keeps a day's wet-bulb swing from switching cells back and forth.

Until session 10 the rule was "add a cell when the running ones exceed 0.5, drop one when one fewer would run
below 0.3": fewer cells at a higher speed than sec. 6.5.5.2.2 allows. On the Theta plant's cooling-only day at
285 K wet-bulb that cost 1.78x the fan energy of the same air on every cell (54.1 kWh on 3 cells against 30.4 kWh
on 4; docs/cooling.md, "Cooling only").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["CellStager", "count_switches"]


@dataclass
class CellStager:
    """Hysteresis cell-staging controller (module docstring).

    Attributes
    ----------
    n_cells : int
        Cells in the bank.
    s_add : float
        One more cell is enabled when all of them would still run at or above this speed (ASSUMPTION 0.3).
    s_drop : float
        One cell is disabled when the running ones are below this speed (ASSUMPTION 0.25).
    tau_filter_s : float
        Time constant of the demand filter [s] (ASSUMPTION 1800 s).
    t_min_stage_s : float
        Minimum time between stage changes [s] (ASSUMPTION 900 s).
    starts_per_hour : int
        Largest number of stage-ups in any hour (ASSUMPTION 4; NEMA MG 1 Part 12.54).
    n_on : int
        Current stage (cells running), starts at 1.
    """

    n_cells: int
    s_add: float = 0.3
    s_drop: float = 0.25
    tau_filter_s: float = 1800.0
    t_min_stage_s: float = 900.0
    starts_per_hour: int = 4
    n_on: int = 1
    _t_last_s: float = field(default=-np.inf, repr=False)
    _t_prev_s: float | None = field(default=None, repr=False)
    _y_f: float = field(default=0.0, repr=False)
    _starts: list = field(default_factory=list, repr=False)

    def update(self, t_s: float, y_required: float) -> int:
        """Advance the controller to time ``t_s`` with the bank's required air-flow fraction.

        Parameters
        ----------
        t_s : float
            Time [s] (non-decreasing between calls).
        y_required : float
            Required air-flow fraction of the whole bank (0..1; e.g. the fan controller's unsaturated output).

        Returns
        -------
        int
            Cells to run from now on.
        """
        if self._t_prev_s is None:
            self._y_f = float(y_required)
        else:  # first-order filter, exact for a held input
            a = 1.0 - np.exp(-(t_s - self._t_prev_s) / self.tau_filter_s)
            self._y_f += (float(y_required) - self._y_f) * a
        self._t_prev_s = t_s
        if t_s - self._t_last_s < self.t_min_stage_s:
            return self.n_on
        N, n, y, yf = self.n_cells, self.n_on, float(y_required), self._y_f
        self._starts = [t for t in self._starts if t_s - t < 3600.0]
        if n < N and (yf * N / (n + 1) >= self.s_add or y * N / n > 1.0) and len(self._starts) < self.starts_per_hour:
            self.n_on, self._t_last_s = n + 1, t_s
            self._starts.append(t_s)
        elif n > 1 and yf * N / n < self.s_drop and y * N / (n - 1) < 0.9:
            self.n_on, self._t_last_s = n - 1, t_s
        return self.n_on

    def initial_stage(self, y_demand: float) -> int:
        """The stage a bank starts in at a demand: the most cells that run at or above ``s_add`` (the rule's
        steady stage), and at least the cells that can move the air.

        Parameters
        ----------
        y_demand : float
            Bank air-flow demand (0..1).

        Returns
        -------
        int
            ``clip(max(floor(y N / s_add), ceil(y N)), 1, N)``.
        """
        N, yN = self.n_cells, float(y_demand) * self.n_cells
        return int(min(N, max(1, math.floor(yN / self.s_add + 1e-12), math.ceil(yN - 1e-12))))


def count_switches(n_on: np.ndarray) -> int:
    """Number of stage changes in a series of cells-on values.

    Parameters
    ----------
    n_on : np.ndarray
        Cells running at each step, shape (k,).

    Returns
    -------
    int
        Steps at which the value differs from the previous one.
    """
    n = np.asarray(n_on)
    return int(np.count_nonzero(np.diff(n) != 0))
