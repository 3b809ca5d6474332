"""The validated options of one platform run: :class:`SimulationConfig` (SI units).

The application's run configuration (:class:`scheduler_sim.app.config.RunConfig`, edge units: days, hours, MW) is
turned into this object by :func:`scheduler_sim.app.runner.simulation_config`; the kernel never sees the TOML
file. Every check that does not need the system happens here, at construction; the checks against the system
(node indices) happen in :meth:`SimulationConfig.check_against`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["SimulationConfig", "DAY_S", "PLACEMENTS"]

DAY_S = 86400.0
#: Placement rules (:mod:`scheduler_sim.kernel.placement`).
PLACEMENTS = ("lowest", "spread", "pack")


def _downtimes(raw) -> tuple:
    """``(start_s, end_s, nodes, drain)`` tuples (nodes unique int64) from 3- or 4-element entries."""
    out = []
    for d in raw:
        a, b, nodes = d[:3]
        drain = bool(d[3]) if len(d) > 3 else False
        nodes = np.unique(np.asarray(nodes, dtype=np.int64))
        if not (b > a):
            raise ValueError(f"downtime end {b} s must be after its start {a} s")
        out.append((float(a), float(b), nodes, drain))
    return tuple(out)


@dataclass(frozen=True, eq=False)
class SimulationConfig:
    """Options of one run of :class:`scheduler_sim.kernel.simulation.Simulation` (all SI).

    Attributes
    ----------
    backfill : str or None
        Backfill strategy for an order policy given by name (``none``, ``easy``, ``easy-bestfit``,
        ``conservative``, ``firstfit``).
    policy_params : dict or None
        Parameters of the order (e.g. multi-factor priority weights).
    window_start_s, window_s : float
        Window ``[window_start_s, window_start_s + window_s)`` of submissions to simulate [s].
    step_s : float
        Cooling communication step [s].
    interval_s : float
        Output interval [s], a whole multiple of ``step_s``.
    default_walltime_s : float
        Estimate for jobs without a requested time [s].
    progress : bool
        Show a tqdm progress bar over simulated time.
    downtimes : tuple of (start_s, end_s, node indices[, drain])
        Nodes out of service during ``[start_s, end_s)`` (maintenance). A 4th element ``True`` makes it a
        *drain*: running jobs finish, but no job starts on those nodes. Otherwise a job running on a node that
        goes down is killed (outcome ``KILLED_NODE_DOWN``). Down nodes are never allocated and draw idle power.
        Stored normalised as ``(float, float, unique int64 nodes, bool)``.
    use_measured_power : bool
        Use the job table's ``measured_node_power_W`` column (per-node mean DC power from telemetry) where it is
        finite, instead of the utilisation model; counts are reported in ``info``.
    power_cap : tuple of (t_s, cap_W)
        Facility power budget schedule: from ``t_s`` on, the budget is ``cap_W`` [W] (``inf`` = none). A job is
        never started if the predicted facility power (IT with losses of every node, plus
        ``cooling_estimate`` x IT) would exceed the budget in force. Running jobs are never stopped. Stored sorted.
    cooling_estimate : float
        Cooling power per watt of IT power used for the cap prediction, before the plant reports (then the
        plant's last step ratio is used).
    power_cap_forecast_margin : float
        Share of the power budget held back at admission when the cap forecasts the overhead (plant and weather)
        [1], for the forecast's error against the FMU (:data:`scheduler_sim.kernel.powercap.FORECAST_MARGIN`).
    placement : {"lowest", "spread", "pack"}
        Node choice: lowest free indices; ``spread`` takes nodes from the CDU with the largest margin first
        (plant's CDU supply temperature below its highest, else the least heat) to even out heat; ``pack`` from
        the most loaded CDU first (concentrates heat).
    failures : ndarray of shape (k, 3)
        Node failures ``(t_down_s, t_up_s, node)``; see :func:`scheduler_sim.kernel.faults.sample_failures`.
    on_failure : {"requeue", "end"}
        What happens to a job killed by a node failure: back to the queue (restarting from scratch, keeping its
        submit time), or ended (outcome ``KILLED_NODE_DOWN``). Lost node-seconds and energy are reported.
    pool_nodes : int or None
        Schedulable pool size [nodes]: batch jobs run on the ``pool_nodes`` lowest-numbered batch nodes only (a
        co-located partition's nodes are not batch nodes); the others are out of the pool for the whole run (never
        allocated, never counted as free by any policy, drawing idle power). Jobs larger than the pool are excluded
        at load (``jobs_excluded_larger_than_machine``). None: every batch node.
    record_reservations : bool
        Keep the policy's reservations after every pass in ``Simulation.reservation_log`` (for validation).
    warmup_s : float
        Warm-up excluded from ``utilisation_measured`` (measured over ``[t0 + warmup_s, window end)``, so the
        drain after the last submission is excluded too) [s].
    share_entity : {"account", "user"}
        Who fair-share usage and account bonuses are charged to: the account (else the user when the trace has
        no account), or the user.
    max_drain_s : float
        The run stops at the horizon ``window end + max_drain_s`` [s] (rounded up to a whole output interval) even
        if jobs remain: jobs still running there end there with outcome ``CUT_AT_HORIZON`` (their energy, and the
        run's, stops there; counted in ``info["jobs_cut_at_horizon"]`` and the summary), queued jobs are reported
        as never started, and ``info["stopped_at_horizon_s"]`` is set.
    on_implausible : {"warn", "stop"}
        What happens when a plant output leaves its physical bounds (liquid water between freezing and boiling,
        positive approach temperatures; :mod:`cooling_fmu.plausibility`): ``warn`` finishes the run, records every
        bound left in ``info["plant_out_of_bounds"]`` and adds a warning (the CLI then exits 1); ``stop`` ends the
        run after the first step out of bounds, like a plant failure (partial results, ``complete`` False).

    Raises
    ------
    ValueError
        For an interval that is not a whole number of steps, a downtime that ends before it starts, a budget
        <= 0 W, ``max_drain_s`` <= 0, or an unknown ``placement`` / ``on_failure`` / ``share_entity`` /
        ``on_implausible``.
    """

    backfill: str | None = None
    policy_params: dict | None = None
    window_start_s: float = 0.0
    window_s: float = 30 * DAY_S
    step_s: float = 15.0
    interval_s: float = 60.0
    default_walltime_s: float = DAY_S
    progress: bool = False
    downtimes: tuple = ()
    use_measured_power: bool = False
    power_cap: tuple = ()
    cooling_estimate: float = 0.05
    power_cap_forecast_margin: float = 5e-3
    placement: str = "lowest"
    failures: np.ndarray | None = field(default=None)
    on_failure: str = "requeue"
    record_reservations: bool = False
    warmup_s: float = 0.0
    share_entity: str = "account"
    max_drain_s: float = 365 * DAY_S
    on_implausible: str = "warn"
    pool_nodes: int | None = None

    def __post_init__(self) -> None:
        s = object.__setattr__
        ratio = self.interval_s / self.step_s
        if abs(ratio - round(ratio)) > 1e-9 or round(ratio) < 1:
            raise ValueError(f"interval_s={self.interval_s} must be a whole multiple of step_s={self.step_s}")
        s(self, "downtimes", _downtimes(self.downtimes))
        self._check_choices()
        failures = np.zeros((0, 3)) if self.failures is None else np.asarray(self.failures, dtype=float)
        s(self, "failures", failures.reshape(-1, 3))
        cap = tuple(sorted((float(t), float(w)) for t, w in self.power_cap))
        if any(not (w > 0) for _, w in cap):
            raise ValueError("power_cap values must be > 0 W")
        s(self, "power_cap", cap)
        if not self.max_drain_s > 0:
            raise ValueError(f"max_drain_s must be > 0, got {self.max_drain_s}")
        if self.pool_nodes is not None and not int(self.pool_nodes) >= 1:
            raise ValueError(f"pool_nodes must be >= 1, got {self.pool_nodes}")
        for name in ("window_start_s", "window_s", "step_s", "interval_s", "default_walltime_s", "cooling_estimate",
                     "power_cap_forecast_margin",
                     "warmup_s", "max_drain_s"):
            s(self, name, float(getattr(self, name)))

    def _check_choices(self) -> None:
        """Raise ValueError for an unknown placement / on_implausible / on_failure / share_entity."""
        if self.placement not in PLACEMENTS:
            raise ValueError(f"placement must be 'lowest', 'spread' or 'pack', got {self.placement!r}")
        if self.on_implausible not in ("warn", "stop"):
            raise ValueError(f"on_implausible must be 'warn' or 'stop', got {self.on_implausible!r}")
        if self.on_failure not in ("requeue", "end"):
            raise ValueError(f"on_failure must be 'requeue' or 'end', got {self.on_failure!r}")
        if self.share_entity not in ("account", "user"):
            raise ValueError(f"share_entity must be 'account' or 'user', got {self.share_entity!r}")

    @property
    def steps_per_interval(self) -> int:
        """Cooling steps per output interval."""
        return int(round(self.interval_s / self.step_s))

    @property
    def window_end_s(self) -> float:
        """End of the submission window [s]."""
        return float(self.window_start_s + self.window_s)

    def check_against(self, n_nodes: int) -> None:
        """Check the node indices of the downtimes against a machine of ``n_nodes`` nodes.

        Parameters
        ----------
        n_nodes : int
            Nodes of the machine.

        Raises
        ------
        ValueError
            For a downtime node outside ``0 .. n_nodes - 1``.
        """
        for _, _, nodes, _ in self.downtimes:
            if nodes.size == 0 or nodes.min() < 0 or nodes.max() >= n_nodes:
                raise ValueError(f"downtime nodes must lie in 0..{n_nodes - 1}")


