"""The energy ledger: each job's power while it runs, and the energy of jobs, idle nodes and a partition.

Node power is a step function that changes only at events, so energy is integrated exactly: a running job's
energy grows by ``power x time`` from its last power change to the next (:meth:`EnergyLedger.accrue_job`), and the
idle nodes and a co-located partition by their power times the time between events
(:meth:`EnergyLedger.accrue_background`). DESIGN.md: "a node's energy is power x time for every state, with no NaN
and no lost interval at state changes".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["EnergyLedger"]


@dataclass
class EnergyLedger:
    """Per-job power and energy (arrays of shape ``(n_jobs,)`` or ``(n_jobs, n_cdus)``), and background energy.

    Attributes
    ----------
    cur_node_power : ndarray
        DC power per node of each job now [W] (its telemetry sample in force, else its constant power).
    power_since : ndarray
        Time of the job's last power change (or start) [s].
    job_it_power : ndarray
        Rack-input power of the job's nodes now [W] (SIVOC and rectifier losses of its nodes included).
    job_cdu_it_W : ndarray, shape (n_jobs, n_cdus)
        The job's rack-input power in each CDU [W] (its mean over the attempt once a varying job ends).
    job_cdu_E : ndarray, shape (n_jobs, n_cdus)
        Rack-input energy of the running attempt in each CDU [J].
    energy_dc, energy_it : ndarray
        Node DC and rack-input energy of every attempt of the job [J].
    attempt_energy0, attempt_it0 : ndarray
        ``energy_dc`` / ``energy_it`` when the current attempt started [J].
    lost_energy_dc : ndarray
        DC energy of attempts killed by node failures [J].
    idle_dc_J, idle_it_J : float
        DC and rack-input energy of idle nodes [J].
    part_dc_J, part_it_J : float
        DC and rack-input energy of a co-located partition [J].
    """

    cur_node_power: np.ndarray
    power_since: np.ndarray
    job_it_power: np.ndarray
    job_cdu_it_W: np.ndarray
    job_cdu_E: np.ndarray
    energy_dc: np.ndarray
    energy_it: np.ndarray
    attempt_energy0: np.ndarray
    attempt_it0: np.ndarray
    lost_energy_dc: np.ndarray
    idle_dc_J: float = 0.0
    idle_it_J: float = 0.0
    part_dc_J: float = 0.0
    part_it_J: float = 0.0

    @classmethod
    def empty(cls, node_power_W: np.ndarray, n_cdus: int) -> "EnergyLedger":
        """A ledger with no energy yet.

        Parameters
        ----------
        node_power_W : np.ndarray
            Shape (n_jobs,): each job's DC power per node [W] (copied).
        n_cdus : int
            CDUs of the system.

        Returns
        -------
        EnergyLedger
            Zero energies.
        """
        n = node_power_W.size
        return cls(cur_node_power=node_power_W.copy(), power_since=np.full(n, np.nan), job_it_power=np.zeros(n),
                   job_cdu_it_W=np.zeros((n, n_cdus)), job_cdu_E=np.zeros((n, n_cdus)), energy_dc=np.zeros(n),
                   energy_it=np.zeros(n), attempt_energy0=np.zeros(n), attempt_it0=np.zeros(n),
                   lost_energy_dc=np.zeros(n))

    def accrue_job(self, j: int, now: float, n_nodes: int, per_cdu: bool = True) -> None:
        """Add job ``j``'s energy since its last power change (its power is constant in between).

        Parameters
        ----------
        j : int
            Job index.
        now : float
            Current time [s].
        n_nodes : int
            Nodes the job runs on.
        per_cdu : bool
            Also add its per-CDU energy (``job_cdu_E``, read only for a job whose power varies); False leaves it
            (a job of constant power: three numpy calls fewer at each job end, issue #26).
        """
        dt = now - self.power_since[j]
        self.energy_dc[j] += self.cur_node_power[j] * n_nodes * dt
        self.energy_it[j] += self.job_it_power[j] * dt
        if per_cdu:
            self.job_cdu_E[j] += self.job_cdu_it_W[j] * dt
        self.power_since[j] = now

    def set_power(self, j: int, shares_W: np.ndarray, cdu_W: np.ndarray) -> None:
        """Set job ``j``'s rack-input power from its nodes' shares [W] (shape (k,)) and per CDU [W] (n_cdus,)."""
        self.job_it_power[j] = float(np.add.reduce(shares_W))  # shares_W.sum() without its Python wrapper
        self.job_cdu_it_W[j] = cdu_W

    def begin_attempt(self, j: int, now: float) -> None:
        """Mark the start of an attempt of job ``j`` at ``now`` [s] (energies so far kept for the lost-work count)."""
        self.power_since[j] = now
        self.attempt_energy0[j] = self.energy_dc[j]
        self.attempt_it0[j] = self.energy_it[j]

    def accrue_background(self, dt: float, idle_dc_W: float, idle_it_W: float, part_dc_W: float,
                          part_it_W: float) -> None:
        """Add ``dt`` [s] of idle-node and partition energy at the given powers [W]."""
        self.idle_dc_J += idle_dc_W * dt
        self.idle_it_J += idle_it_W * dt
        self.part_dc_J += part_dc_W * dt
        self.part_it_J += part_it_W * dt
