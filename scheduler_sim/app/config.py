"""Run configuration: a validated, typed description of one simulation run (loaded from TOML).

Every field carries its unit in its name or description. Unknown keys are errors (a typo must not be silently
ignored). The default configuration is the project's main job: 30 days of the embedded ALCF Theta 2022 trace on
the Theta-like system under EASY backfill with the cooling FMU and the weather of the system's site (Chicago
O'Hare for Theta).
"""

from __future__ import annotations

import json
import tomllib
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from jobs.textfiles import read_utf8, toml_loads

from .grid_config import GridDynamicsConfig  # the dynamic [grid] keys of #15 (events, ramps, battery)
from .grid_signals_config import CarbonPolicyConfig, GridSignalsConfig  # the carbon / price keys of #15
from .workload_config import SERVED_FAMILIES, WorkloadConfig  # the [[workload]] tables of #24

__all__ = ["RunConfig", "TraceConfig", "ServingConfig", "SchedulerConfig", "CoolingConfig", "OutputConfig", "load_config",
           "embedded_trace_path", "ConfigError", "GridConfig", "CarbonPolicyConfig"]

DAY_S = 86400.0


class ConfigError(ValueError):
    """A configuration file that cannot be used; the message names the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def embedded_trace_path() -> Path:
    """Path of the embedded ALCF Theta 2022 SWF trace (gzip) shipped in ``experiments/data``."""
    return Path(str(resources.files("experiments") / "data" / "theta_2022.swf.gz"))


class TraceConfig(_Strict):
    """Which trace to replay and which window of it."""

    enabled: bool = Field(True, description="Replay a batch trace; false runs the facility with no batch job "
                                            "(needs a [serving] partition)")
    path: str = Field("", description="Trace file; '' means the embedded Theta 2022 SWF trace")
    format: str = Field("", description="Loader name (see `hpctwin list loaders`); '' guesses from the suffix")
    window_start_days: float = Field(181.0, ge=0, description="Window start, days after the trace time origin")
    window_days: float = Field(30.0, gt=0, description="Window length [days]; jobs submitted in it are simulated")
    strict: bool = Field(False, description="Stop at the first bad record instead of reporting and skipping it")
    cores_per_node: int | None = Field(
        None, ge=1, description="Processors per node in the trace (SWF processors -> nodes = ceil(procs / this)); "
                                "unset: from the SWF header (MaxProcs / MaxNodes), else the system's "
                                "trace_procs_per_node (see dataloaders.swf.swf_cores_per_node); 1 for traces that "
                                "count nodes, as theta_2022.swf does (MaxProcs = MaxNodes = 4360)")
    timezone: str = Field("", description="IANA time zone of the trace's local text times (sacct Submit / Start / "
                                          "End, PM100, ...), e.g. 'America/Chicago'; '' = the loader's default "
                                          "(UTC for sacct). An hour that happens twice (autumn) is read as its "
                                          "first occurrence (fold=0); a skipped hour (spring) is moved forward by "
                                          "the gap; both are counted in the load report (as `validate --timezone`)")
    arrival_rate_factor: float = Field(
        1.0, gt=0, le=1000, description="Workload growth: arrival-rate factor f. Submit times at or after the window "
                                        "start t0 are compressed towards it, t' = t0 + (t - t0) / f (a job's "
                                        "recorded wait and run time are kept), so the window holds f times as many "
                                        "submissions, in their order; deterministic")
    job_size_factor: float = Field(
        1.0, gt=0, le=1000, description="Workload growth: job-size factor g. A job of n nodes asks for n g nodes, "
                                        "rounded down or up at random with P(up) = the fractional part (seeded by "
                                        "the run seed: the expected total is g times the trace's), at least 1 and "
                                        "capped at the schedulable pool")

    def resolved_path(self) -> Path:
        """The trace path, with '' resolved to the embedded trace."""
        return Path(self.path) if self.path else embedded_trace_path()


class DowntimeConfig(_Strict):
    """Nodes out of service for a period (maintenance or drain). Windows for the same node must not overlap."""

    start_day: float = Field(..., ge=0, description="Start, days after the trace time origin")
    hours: float = Field(..., gt=0, description="Duration [h]")
    nodes: str = Field(..., description="Node indices, e.g. '0-127,200' (0-based, inclusive ranges)")
    drain: bool = Field(False, description="Drain: running jobs finish, no new job starts (else they are killed)")

    def node_ranges(self, n_nodes: int) -> list[tuple[int, int]]:
        """The node text as inclusive ``(first, last)`` ranges, each checked against the machine *before* anything
        is expanded (a hostile ``'0-99999999999'`` costs nothing).

        Parameters
        ----------
        n_nodes : int
            Nodes of the machine.

        Returns
        -------
        list[tuple[int, int]]
            The ranges, in the order written.

        Raises
        ------
        ValueError
            If the text is malformed or a range reaches outside ``0 .. n_nodes-1`` (the message names the part).
        """
        out = []
        for part in self.nodes.split(","):
            part = part.strip()
            try:
                if "-" in part:
                    a, b = (int(x) for x in part.split("-", 1))
                    if b < a:
                        raise ValueError
                else:
                    a = b = int(part)
            except ValueError:
                raise ValueError(f"downtime nodes: cannot read {part!r} (expected e.g. '0-127,200')") from None
            if a < 0 or b >= n_nodes:
                raise ValueError(f"downtime nodes: {part!r} reaches outside the machine's nodes 0..{n_nodes - 1}")
            out.append((a, b))
        return out

    def node_indices(self, n_nodes: int):
        """The node indices, sorted and unique: ndarray of int64, shape (k,) with k <= ``n_nodes``.

        Parameters
        ----------
        n_nodes : int
            Nodes of the machine.

        Returns
        -------
        np.ndarray
            Node indices, int64, sorted and unique.

        Notes
        -----
        :meth:`node_ranges` raises ValueError for malformed text or a range outside the machine (checked before the
        ranges are expanded).
        """
        import numpy as np

        r = np.array(self.node_ranges(n_nodes), dtype=np.int64).reshape(-1, 2)
        cover = np.zeros(n_nodes + 1, dtype=np.int64)  # difference array: O(ranges + n_nodes), overlaps cost nothing
        np.add.at(cover, r[:, 0], 1)
        np.add.at(cover, r[:, 1] + 1, -1)
        return np.flatnonzero(np.cumsum(cover[:-1]) > 0).astype(np.int64)


class PriorityConfig(_Strict):
    """Weights of the multi-factor priority order (Slurm-style; see scheduler_sim.policies.order)."""

    w_age: float = Field(1000.0, ge=0, description="Weight of the age factor")
    w_size: float = Field(100.0, ge=0, description="Weight of the size factor (nodes / machine)")
    w_fairshare: float = Field(1000.0, ge=0, description="Weight of the fair-share factor 2^(-U/S)")
    w_qos: float = Field(0.0, ge=0, description="Weight of the QoS factor")
    max_age_days: float = Field(7.0, gt=0, description="Age at which the age factor saturates [days]")
    half_life_days: float = Field(7.0, gt=0, description="Half-life of the fair-share usage decay [days]")
    qos_weights: dict[str, float] = Field(default_factory=dict, description="Weight per queue name (>= 0)")
    account_bonus: dict[str, float] = Field(default_factory=dict, description="Additive priority per account (or "
                                            "user) name, e.g. from energy incentive points")
    fairshare_by: Literal["account", "user"] = Field(
        "account", description="Charge fair-share usage and bonuses to the account (else user) or to the user")


    @field_validator("qos_weights")
    @classmethod
    def _qos_non_negative(cls, v: dict[str, float]) -> dict[str, float]:
        bad = {k: w for k, w in v.items() if not w >= 0}
        if bad:
            raise ValueError(f"QoS weights must be >= 0 (a lower weight means a lower priority), got {bad}")
        return v


class PowerCapConfig(_Strict):
    """One step of the facility power budget schedule."""

    start_day: float = Field(..., ge=0, description="From this day (after the trace origin) on")
    cap_MW: float | None = Field(None, gt=0, description="Facility power budget [MW] (IT with losses + cooling)")
    cap_fraction: float | None = Field(
        None, gt=0, description="Budget as a fraction of the design peak: every batch node running at the "
                                "system's default utilisation, with losses, times (1 + cooling_estimate)")

    @model_validator(mode="after")
    def _one_of(self) -> "PowerCapConfig":
        if (self.cap_MW is None) == (self.cap_fraction is None):
            raise ValueError("give exactly one of cap_MW and cap_fraction")
        return self


class TwinConfig(_Strict):
    """The twin in the scheduling loop (``scheduler.policy = "twin"``; see scheduler_sim.app.twin).

    Objective J = w_wait_per_s [1/s] * (job-seconds of waiting in the horizon) [s]
                + w_energy_per_J [1/J] * (facility energy over the horizon) [J]; lowest J wins.
    """

    pool: list[str] = Field(default_factory=lambda: ["fcfs+easy", "sjf+easy", "priority+easy", "fcfs+conservative"],
                            min_length=1, description="Candidate policies, 'order+backfill' (or a shorthand)")
    horizon_s: float = Field(21600.0, gt=0, le=90 * 86400.0, description="Rollout horizon [s]")
    period_s: float = Field(3600.0, gt=0, description="Simulated time between decisions [s]")
    w_wait_per_s: float = Field(1.0 / 3600.0, ge=0, description="Weight of waiting [1/s] (default: 1 per job-hour)")
    w_energy_per_J: float = Field(1.0 / 3.6e9, ge=0, description="Weight of facility energy [1/J] (default: 1 per "
                                                                   "MWh)")
    cooling: Literal["frozen", "fast"] = Field(
        "frozen", description="Cooling in the rollouts' horizon: 'frozen' = IT x (1 + the cooling ratio at the "
        "decision); 'fast' = the quasi-steady plant of the run's plant and the run's wet-bulb on every plant_step_s "
        "(scheduler_sim.kernel.lookahead)")
    plant_step_s: float = Field(300.0, gt=0, le=86400.0, description="Rollout cooling step with cooling = 'fast' "
                                                                     "[s]")
    rollout_queue_limit: int = Field(
        100, ge=0, description="Jobs of its order a rollout's pass considers (as Slurm's default_queue_depth; "
        "0 = the whole queue): bounds the decision's cost on long queues (scheduler_sim.app.twin, 'Rollout cost')")


class SchedulerConfig(_Strict):
    """Scheduling policy and its settings."""

    policy: str = Field("easy", description="Policy: replay, fcfs, sjf, ljf, largest, priority, the shorthands "
                                            "easy / conservative, or twin (see `hpctwin list policies`)")
    backfill: str = Field("", description="Backfill: none, easy, easy-bestfit, conservative, firstfit; '' = the "
                                          "policy's own (none for a plain order)")
    default_walltime_s: float = Field(
        86400.0, gt=0,
        description="Run-time estimate [s] for jobs whose trace gives no requested time; such jobs are not killed")
    placement: Literal["lowest", "spread", "pack"] = Field(
        "lowest", description="Node choice: lowest index; spread heat over CDUs (most margin first); pack it")
    cooling_estimate: float = Field(0.05, ge=0, description="Cooling W per IT W assumed by the power cap before "
                                                            "the plant reports")
    power_cap_forecast_margin: float = Field(
        5e-3, ge=0, lt=1, description="Share of the power budget held back at admission when the cap forecasts the "
        "overhead (plant and weather) [1]: the FMU's fans and the running jobs' IT rise beyond the steady-state "
        "forecast (up to 5.2e-3 of the budget on the 7-day cap80 study, docs/policies.md)")
    priority: PriorityConfig = PriorityConfig()
    twin: TwinConfig = TwinConfig()
    carbon: CarbonPolicyConfig = CarbonPolicyConfig()
    power_cap: list[PowerCapConfig] = Field(default_factory=list, description="Facility power budget schedule")
    downtime: list[DowntimeConfig] = Field(default_factory=list, description="Scheduled node downtimes")
    pool_nodes: int | None = Field(
        None, ge=1, description="Schedulable pool size [nodes] (`--nodes`): batch jobs run on the lowest-numbered "
                                "batch nodes of the system only; the others stay idle at idle power (they exist, "
                                "out of the pool). Jobs larger than the pool are rejected at load with a message "
                                "and no reservation waits for nodes outside it. Unset: every batch node")

    @model_validator(mode="after")
    def _consistent(self) -> "SchedulerConfig":
        days = [c.start_day for c in self.power_cap]
        if len(set(days)) != len(days):
            raise ValueError(f"power_cap: two budgets start on the same day {sorted(days)}; give one per start_day")
        if self.policy == "twin" and self.backfill not in ("", "none"):
            raise ValueError("policy 'twin' chooses among the policies of [scheduler.twin] pool; it takes no "
                             "backfill")
        return self


class FaultConfig(_Strict):
    """Random node failures (seeded by the run seed)."""

    enabled: bool = Field(False, description="Sample node failures")
    mtbf_node_h: float = Field(8760.0 * 5, gt=0, description="Mean time between failures of one node [h]")
    mttr_h: float = Field(24.0, gt=0, description="Mean time to repair [h]")
    distribution: Literal["exponential", "weibull"] = Field("exponential", description="Time-between-failures law")
    weibull_shape: float = Field(0.75, gt=0, description="Weibull shape (Schroeder & Gibson 2010: 0.7-0.8)")
    on_failure: Literal["requeue", "end"] = Field("requeue", description="A killed job is requeued or ended")


class PowerConfig(_Strict):
    """Where job power comes from."""

    use_measured_power: bool = Field(
        False, description="Use the trace's measured per-node job power (column measured_node_power_W) where "
                           "present instead of the utilisation model")
    job_power_spread: Literal["archer2", "none"] = Field(
        "archer2", description="Jobs without recorded utilisation draw their node power from a measured per-job "
                               "distribution (seeded by the run seed; the system's default utilisation is the "
                               "mean job): 'archer2' = ARCHER2 per-application node power (power/job_power.py); "
                               "'none' = every such job at the system default")


class CoolingConfig(_Strict):
    """Cooling plant and weather."""

    enabled: bool = Field(True, description="Run the cooling FMU; if false, cooling power is not modelled "
                                           "(PUE is then IT-only and flagged). Kept as an alias: false is "
                                           "model = 'off'")
    model: Literal["fmu", "fast", "off"] = Field(
        "fmu", description="Cooling plant model: 'fmu' (default) the generated Modelica FMU; 'fast' the quasi-steady "
                           "plant (cooling_fmu.quasisteady: the FMU's analytic steady state tabulated and "
                           "interpolated, same outputs; error against the FMU in docs/cooling.md); 'off' no plant "
                           "(as enabled = false)")
    fast_tau_s: float = Field(0.0, ge=0.0, le=86400.0,
                              description="With model = 'fast': time constant of a first-order lag on the "
                                          "quasi-steady outputs [s]; 0 = none")
    plant: str = Field("", description="Plant description name or TOML path; '' uses the system's plant")
    step_s: float = Field(15.0, ge=0.1, le=3600.0, description="FMU communication step [s], 0.1 to 3600")
    stepping: Literal["adaptive", "fixed"] = Field(
        "adaptive", description="'adaptive' (default): while the heat is constant the plant takes longer internal "
                                "steps after fine_steps steps at step_s, outputs interpolated on the step_s grid "
                                "(cooling_fmu.coupling.AdaptiveStepper); on plant v5 its cooling-energy error on "
                                "the test week is 2.9e-6 of a 0.25 s reference (fixed 15 s: 3.8e-6) with 6.8x "
                                "fewer plant calls, and it takes about half the CPU of fixed stepping; 'fixed': "
                                "one plant step per step_s (docs/cooling.md)")
    fine_steps: int = Field(4, ge=1, le=1000, description="With stepping = 'adaptive': steps taken at step_s after "
                                                          "each change of the heat input")
    max_step_s: float = Field(240.0, ge=0.0, description="With stepping = 'adaptive': longest internal plant step [s] "
                                                       "(rounded down to whole steps); 0 = the plant's stability "
                                                       "limit (default 240 s: error 2.9e-6 on the test week, see "
                                                       "docs/cooling.md)")
    weather: Literal["file", "tmy3", "constant"] = Field(
        "file", description="'file': a typical-year weather file (EPW or TMY3): weather_path, else the system's "
                            "site ([site] weather), else Golden, CO; 'tmy3': the same (older name); 'constant': T_wb_C")
    weather_path: str = Field("", description="EPW or TMY3 file (relative to the config file), or a shipped site "
                                              "name (golden, chicago, knoxville); '' = the system's site")
    T_wb_C: float = Field(15.0, ge=-40, le=40, description="Constant wet-bulb temperature [degC] when weather = 'constant'")
    accept_weather_gaps: bool = Field(False, description="Interpolate missing-value gaps in the weather file longer "
                                                         "than 6 h (cooling_fmu.weather.MAX_INTERPOLATED_GAP_H) "
                                                         "instead of refusing the file; every gap is reported")
    utc_offset_h: float | None = Field(None, ge=-14, le=14,
                                       description="Hours from UTC to the weather file's local standard time; unset "
                                                   "= from the file header (EPW LOCATION line, TMY3 metadata row)")
    step_timeout_s: float = Field(
        60.0, gt=0, le=86400.0,
        description="Wall-clock limit of one FMU step [s] (in the FMU's C loop over many steps: since the call "
                    "began or the last step it completed). A step that takes longer stops the run: the results up "
                    "to there are written as a partial file (complete = false) and the run exits 2, naming the FMU, "
                    "the FMI call and the simulated time (the FMU runs on a worker thread; docs/cooling.md)")
    on_implausible: Literal["warn", "stop"] = Field(
        "warn", description="A plant output outside physical bounds (water frozen or boiling, negative approach; "
                            "cooling_fmu.plausibility): 'warn' finishes the run, records it in the file "
                            "(plant_out_of_bounds_json) and exits 1; 'stop' ends the run there (partial, exit 2)")


    @property
    def plant_model(self) -> str:
        """The plant model that runs: ``"off"`` when ``enabled`` is false (the older switch), else ``model``."""
        return "off" if not self.enabled else self.model


class OutputConfig(_Strict):
    """What to write and how often."""

    interval_s: float = Field(60.0, gt=0, description="Output averaging interval [s]; a whole multiple of cooling.step_s")
    max_drain_days: float = Field(365.0, gt=0, description="The run stops this many days after the window end even "
                                                           "if jobs remain (running jobs are cut there, "
                                                           "queued ones reported as never started)")
    warmup_days: float = Field(1.0, ge=0, description="Warm-up excluded from utilisation_measured [days]; the drain "
                                                      "after the window is always excluded from it")
    progress: bool = Field(True, description="Show a progress bar on a terminal")


RouterName = Literal["round_robin", "least_outstanding_tokens", "prefix_affinity"]


class RouterConfig(_Strict):
    """The request router as a table: ``[serving.router]`` with ``name`` and its options."""

    name: RouterName = Field("least_outstanding_tokens", description="Request router")
    affinity_slack: int = Field(
        2, ge=0, description="prefix_affinity: keep the affinity replica unless its queue (requests routed to it "
                             "and not finished) is longer than the shortest queue by more than this many requests; "
                             "then route to the least-loaded replica (default 2, see "
                             "scheduler_sim.serving.engine.DEFAULT_AFFINITY_SLACK)")


class ServingConfig(_Strict):
    """An LLM-serving partition co-located with the batch nodes (optional ``[serving]`` section)."""

    deployment: str = Field(..., description="Deployment TOML (model x GPU x replicas x tensor_parallel), "
                                             "relative to the config file, or the name of a shipped deployment "
                                             "(experiments/serving, e.g. 'llama3-70b_h100_tp4x2')")
    trace: str = Field("", description="Request trace file; '' means the embedded Azure LLM conversation trace")
    workload: str = Field("", description="Name of a [[workload]] table of family 'inference', 'extreme' or 'mixed' whose "
                          "generated requests are served instead of a request trace ('' = the trace)")
    format: str = Field("azure_llm", description="Request loader name (azure_llm, mooncake, request_csv)")
    loader_options: dict[str, str] = Field(default_factory=dict,
                                           description="Extra loader options, e.g. the request_csv column mapping")
    strict: bool = Field(False, description="Stop at the first bad request record")
    start_s: float = Field(0.0, ge=0, description="Serving window start in the request trace [s]")
    duration_s: float = Field(0.0, ge=0, description="Serving window length [s]; 0 = the whole trace")
    offset_s: float = Field(0.0, ge=0, description="Simulation time of the serving window start, after the "
                                                   "batch window start [s]")
    first_node: int = Field(0, ge=0, description="First system node of the partition; the partition takes "
                                                 "ceil(GPUs / gpus_per_node) consecutive nodes")
    router: RouterName | RouterConfig = Field(
        "least_outstanding_tokens", description="Request router: a name, or a table {name, affinity_slack} "
                                                "(router.affinity_slack, default 2 requests)")
    max_num_seqs: int = Field(256, ge=1, description="Sequences per batch at most (vLLM max_num_seqs)")
    max_num_batched_tokens: int = Field(8192, ge=1, description="Tokens per step at most (vLLM)")
    chunked_prefill: bool = Field(False, description="Mix prompt chunks into decode steps (Sarathi-Serve)")
    prefix_caching: bool = Field(False, description="Keep prompt-prefix KV blocks (prefix_block_ids) cached, LRU "
                                                    "eviction, and skip their prefill (not with chunked_prefill)")
    prefix_block_tokens: int = Field(512, ge=1, description="Tokens per prefix block id (Mooncake hash_ids: 512)")
    ttft_slo_s: float = Field(1.0, gt=0, description="Time-to-first-token SLO [s]")
    tpot_slo_s: float = Field(0.05, gt=0, description="Time-per-output-token SLO [s]")
    merge_s: float = Field(1.0, gt=0, description="Power profile bin [s]: changes within a bin are merged by "
                                                  "exact energy-preserving averaging")
    cpu_util: float = Field(0.0, ge=0, le=1, description="Host CPU utilisation of the partition nodes [1]")

    def router_name(self) -> str:
        """The router's name, whether ``router`` is given as a name or as a table."""
        return self.router if isinstance(self.router, str) else self.router.name

    def affinity_slack(self) -> int:
        """``router.affinity_slack`` [requests] (its default when ``router`` is given as a name)."""
        return RouterConfig().affinity_slack if isinstance(self.router, str) else self.router.affinity_slack


class PerturbConfig(_Strict):
    """One ensemble member's perturbation of the inputs (``[perturb]``; written by an ``[uncertainty]`` study).

    Every factor is 1 and every offset / noise 0 by default: a default ``[perturb]`` changes nothing. Applied by
    :mod:`scheduler_sim.app.uncertainty` (the formulas are there).
    """

    node_power_scale: float = Field(1.0, gt=0, le=10, description="Factor on every non-GPU node component power "
                                                                  "(CPU idle / max, memory, NIC, NVMe, other) [1]")
    gpu_power_scale: float = Field(1.0, gt=0, le=10, description="Factor on GPU idle and max power [1]")
    tower_ntu_scale: float = Field(1.0, gt=0, le=10, description="Factor on the cooling towers' nominal Merkel "
                                                                 "NTU (their UA / (m_w c_p)) [1]")
    pump_eta_scale: float = Field(1.0, gt=0, le=10, description="Factor on every pump's hydraulic efficiency "
                                                                "(clipped to 1) [1]")
    fan_power_scale: float = Field(1.0, gt=0, le=10, description="Factor on the tower fans' nominal power [1]")
    wet_bulb_offset_K: float = Field(0.0, ge=-20, le=20, description="Added to the wet-bulb of every hour of the "
                                                                     "typical year (a perturbed typical year) [K]")
    runtime_estimate_sigma: float = Field(0.0, ge=0, le=3, description="Requested walltimes multiplied by "
                                                                       "exp(N(0, sigma^2)) per job (log-normal "
                                                                       "estimate noise) [1]")
    arrival_jitter_s: float = Field(0.0, ge=0, le=30 * 86400.0, description="Standard deviation of a normal "
                                                                           "shift of each submission in the "
                                                                           "window (kept in the window) [s]")
    seed: int = Field(0, ge=0, le=2**63 - 1, description="Seed of the per-job estimate noise and arrival jitter")


class GridConfig(GridDynamicsConfig, GridSignalsConfig):
    """The facility on the grid (optional ``[grid]`` section): carbon intensity and price signals
    (:mod:`scheduler_sim.app.grid_signals_config`), demand-response events, ramp-rate limit, battery, periodic job
    power (:mod:`scheduler_sim.app.grid_config`).
    """


class RunConfig(_Strict):
    """One simulation run."""

    name: str = Field("theta-easy-30d", description="Run name, stored in the output")
    seed: int = Field(0, ge=0, le=2**63 - 1, description="Seed of every random choice (numpy.random.Generator)")
    system: str = Field("theta", description="System description name or TOML path (see `hpctwin list systems`)")
    trace: TraceConfig = TraceConfig()
    scheduler: SchedulerConfig = SchedulerConfig()
    power: PowerConfig = PowerConfig()
    faults: FaultConfig = FaultConfig()
    cooling: CoolingConfig = CoolingConfig()
    output: OutputConfig = OutputConfig()
    serving: ServingConfig | None = None
    grid: GridConfig | None = None
    perturb: PerturbConfig | None = None
    workload: list[WorkloadConfig] = Field(default_factory=list, description="Generated workloads ([[workload]])")
    overrides: list[str] = Field(default_factory=list, description="The `--set KEY=VALUE` overrides applied to this "
                                                                   "run, in order (provenance; set by the command "
                                                                   "line, see scheduler_sim.app.overrides)")

    @model_validator(mode="after")
    def _something_to_run(self) -> "RunConfig":
        if not self.trace.enabled and self.serving is None and not self.workload:
            raise ValueError("trace.enabled = false needs a [serving] section or a [[workload]] table (nothing to "
                             "simulate otherwise)")
        if self.serving is not None and self.serving.workload:
            names = [w.name for w in self.workload if w.family in SERVED_FAMILIES]
            if self.serving.workload not in names:
                raise ValueError(f"serving.workload = {self.serving.workload!r} names no [[workload]] table of family "
                                 f"'inference', 'extreme' or 'mixed' (those given: {', '.join(names) or 'none'})")
            if names.count(self.serving.workload) > 1:
                raise ValueError(f"serving.workload = {self.serving.workload!r}: {names.count(self.serving.workload)} "
                                 f"inference tables have that name; give them distinct names")
        served = self.serving.workload if self.serving is not None else ""
        for w in self.workload:
            no_requests = w.family == "mixed" and (w.mixed is not None and w.mixed.share_inference == 0)
            if w.family in SERVED_FAMILIES and w.name != served and not no_requests:
                raise ValueError(f"[[workload]] {w.name!r} of family {w.family!r} is served by no [serving] section: "
                                 f"set [serving] workload = {w.name!r}")
        return self

    @model_validator(mode="after")
    def _interval_multiple(self) -> "RunConfig":
        ratio = self.output.interval_s / self.cooling.step_s
        if abs(ratio - round(ratio)) > 1e-9 or round(ratio) < 1:
            raise ValueError(f"output.interval_s ({self.output.interval_s}) must be a whole multiple of "
                             f"cooling.step_s ({self.cooling.step_s})")
        if ratio > 86400:
            raise ValueError(f"output.interval_s / cooling.step_s = {ratio:g} steps per output interval; at most "
                             f"86400 are supported (use a longer step or a shorter interval)")
        return self

    @field_validator("name")
    @classmethod
    def _name_ok(cls, v: str) -> str:
        return check_name(v)

    def to_json(self) -> str:
        """Canonical JSON of the configuration (sorted keys), stored as provenance.

        ``grid`` is left out when there is no ``[grid]`` section, ``workload`` when there is no
        ``[[workload]]``, ``scheduler.carbon`` when it holds its defaults, ``cooling.accept_weather_gaps`` when
        false and ``cooling.model`` / ``cooling.fast_tau_s`` when they do ("fmu", 0), so configurations written
        before they existed keep the same JSON (and digests).
        """
        d = self.model_dump(mode="json")
        if d.get("grid") is None:
            d.pop("grid", None)
        if d.get("perturb") is None:  # no ensemble perturbation: JSON (and digests) as before it existed
            d.pop("perturb", None)
        if not d.get("workload"):
            d.pop("workload", None)
        for w in d.get("workload", []):  # [[workload]] partition (added later): left out at its default ""
            if w.get("partition") == "":
                w.pop("partition")
        if self.scheduler.carbon == CarbonPolicyConfig():
            d["scheduler"].pop("carbon", None)
        if not self.cooling.accept_weather_gaps:  # the default: JSON as before the key existed
            d["cooling"].pop("accept_weather_gaps", None)
        if self.cooling.model == "fmu" and self.cooling.fast_tau_s == 0.0:  # defaults: JSON as before they existed
            d["cooling"].pop("model", None)
            d["cooling"].pop("fast_tau_s", None)
        tw = d["scheduler"]["twin"]  # keys added later, left out at their defaults (JSON and digests as before)
        if tw.get("cooling") == "frozen" and tw.get("plant_step_s") == 300.0:
            tw.pop("cooling", None)
            tw.pop("plant_step_s", None)
        if tw.get("rollout_queue_limit") == 100:
            tw.pop("rollout_queue_limit")
        for section, key, default in _LATER_KEYS:  # keys added later: left out at their defaults, as above
            if section.startswith("workload[]") if section else False:  # a key of every [[workload]] table
                for sec in d.get("workload", []):
                    sub = sec.get(section[len("workload[]."):]) if section != "workload[]" else sec
                    if isinstance(sub, dict) and sub.get(key, default) == default:
                        sub.pop(key, None)
                continue
            sec = d if section is None else d.get(section)
            if sec is not None and sec.get(key, default) == default:
                sec.pop(key, None)
        return json.dumps(d, sort_keys=True)

    def with_overrides(self, overrides: dict) -> "RunConfig":
        """Return a copy with dotted-key overrides applied, e.g. ``{"scheduler.policy": "fcfs"}``.

        Parameters
        ----------
        overrides : dict
            Dotted key -> value.

        Returns
        -------
        RunConfig
            The new configuration (validated).

        Raises
        ------
        ConfigError
            If a key does not exist or a value is invalid.
        """
        data = self.model_dump(mode="json")
        for key, value in overrides.items():
            parts = key.split(".")
            if parts[0] == "grid" and data.get("grid") is None and len(parts) > 1:
                data["grid"] = GridConfig().model_dump(mode="json")  # a grid key opens the [grid] section
            if parts[0] == "perturb" and data.get("perturb") is None and len(parts) > 1:
                data["perturb"] = PerturbConfig().model_dump(mode="json")  # a perturb key opens [perturb]
            node = data
            for p in parts[:-1]:
                if p not in node or not isinstance(node[p], dict):
                    raise ConfigError(f"unknown configuration key {key!r}")
                node = node[p]
            if parts[-1] not in node:
                raise ConfigError(f"unknown configuration key {key!r}")
            node[parts[-1]] = value
        try:
            return RunConfig.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(_format_errors("overrides", exc)) from None


#: Keys added after the golden digests were recorded: (section or None, key, default); ``to_json`` leaves them out
#: at their defaults so that runs which do not use them keep the same ``config_json`` (and digests).
_LATER_KEYS = (("trace", "timezone", ""), ("trace", "arrival_rate_factor", 1.0), ("trace", "job_size_factor", 1.0),
               ("scheduler", "pool_nodes", None), ("cooling", "step_timeout_s", 60.0), (None, "overrides", []),
               ("scheduler", "power_cap_forecast_margin", 5e-3), ("workload[]", "rl", None),
               ("workload[]", "inference", None), ("workload[]", "extreme", None), ("serving", "workload", ""),
               ("workload[].layout", "cp", 1), ("workload[].layout", "first_stage_layers", 0))


def check_name(v: str, what: str = "name") -> str:
    r"""Check a run or study name, which becomes a file or folder name under ``out/``; return it.

    Parameters
    ----------
    v : str
        The name.
    what : str
        What the name is, for the message.

    Returns
    -------
    str
        ``v`` unchanged.

    Raises
    ------
    ValueError
        If it is empty, ``.`` or ``..``, or contains a path separator (``/``, ``\\``) or a NUL: such a name could
        write outside ``out/`` (``../../x``, an absolute path).
    """
    if not v or v in (".", "..") or any(c in v for c in "/\\\0"):
        raise ValueError(f"{what} must be non-empty, not '.' or '..', and contain no path separators "
                         f"(it names a file or folder under out/), got {v!r}")
    return v


def _format_errors(source: str, exc: ValidationError) -> str:
    lines = [f"{source}: invalid configuration"]
    for e in exc.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(whole configuration)"
        got = e.get("input")
        got = "" if isinstance(got, dict) else f" (got {got!r})"
        lines.append(f"  {loc}: {e['msg']}{got}")
    return "\n".join(lines)


def load_config(path: str | Path | None = None) -> RunConfig:
    """Load a run configuration from a TOML file, or return the default (main job) when ``path`` is None.

    Parameters
    ----------
    path : str | Path | None
        TOML file with the sections of :class:`RunConfig` (top-level keys ``name``, ``seed``, ``system`` and tables
        ``[trace]``, ``[scheduler]``, ``[cooling]``, ``[output]``).

    Returns
    -------
    RunConfig
        The validated configuration, its relative paths made absolute against the file's folder.

    Raises
    ------
    ConfigError
        If the file is missing, is not UTF-8 text or not valid TOML (with the line), or a field is unknown or invalid (with the
        dotted field name, the value and what was expected).
    """
    if path is None:
        return RunConfig()
    path = Path(path)
    data = read_toml(path, "configuration file")
    try:
        cfg = RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(str(path), exc)) from None
    return resolve_relative_paths(cfg, path.parent)


def read_toml(path: Path, what: str) -> dict:
    """Parse a TOML file.

    Parameters
    ----------
    path : Path
        The file.
    what : str
        What the file is, for the messages.

    Returns
    -------
    dict
        The parsed tables.

    Raises
    ------
    ConfigError
        If the file is missing, not UTF-8 text or not valid TOML (the message names the file and the line).
    """
    if not path.is_file():
        raise ConfigError(f"{path}: {what} not found")
    try:
        return toml_loads(utf8_text(path, what), path, what, ConfigError)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def utf8_text(path: Path, what: str) -> str:
    """The text of a file that must be UTF-8 (TOML v1.0.0 requires it), a leading BOM allowed.

    Parameters
    ----------
    path : Path
        The file.
    what : str
        What the file is, for the message.

    Returns
    -------
    str
        The text.

    Notes
    -----
    :func:`jobs.textfiles.read_utf8` raises ConfigError if the bytes are not UTF-8: the message names the file, says
    it is not UTF-8 text and gives the line and byte offset of the first bad byte.
    """
    return read_utf8(path, what, ConfigError)


def resolve_relative_paths(cfg: RunConfig, base_dir: Path) -> RunConfig:
    """Return ``cfg`` with its relative file paths made absolute against ``base_dir`` (the file that named them).

    Covers ``trace.path``, ``cooling.weather_path`` (unless it is a bare shipped site name such as ``chicago``:
    no ``/`` and no ``.``), ``system`` and ``cooling.plant`` when they name a ``.toml`` file, and
    ``serving.deployment`` / ``serving.trace``.
    """
    candidates = {"trace.path": cfg.trace.path}
    wp = cfg.cooling.weather_path
    if wp and ("/" in wp or "\\" in wp or "." in wp):  # a bare word is a shipped site name, not a path
        candidates["cooling.weather_path"] = wp
    for key, val in (("system", cfg.system), ("cooling.plant", cfg.cooling.plant)):
        if val.endswith(".toml"):
            candidates[key] = val
    if cfg.serving is not None:
        if cfg.serving.deployment.endswith(".toml") or (base_dir / cfg.serving.deployment).is_file():
            candidates["serving.deployment"] = cfg.serving.deployment  # else the name of a shipped deployment
        candidates["serving.trace"] = cfg.serving.trace
    if cfg.grid is not None:
        for key in ("carbon", "price"):
            v = getattr(cfg.grid, key)
            if v and ("/" in v or "\\" in v or "." in v):  # a bare word is a shipped series name (or "constant")
                candidates[f"grid.{key}"] = v
    updates = {k: str((base_dir / v).resolve()) for k, v in candidates.items() if v and not Path(v).is_absolute()}
    return cfg.with_overrides(updates) if updates else cfg
