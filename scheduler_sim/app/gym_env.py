"""A gymnasium environment of the facility: ``gymnasium.make("hpctwin/Facility-v0", config={...})``.

The environment is built on the decision interface (docs/decision_interface.md): the platform (a private
:class:`scheduler_sim.kernel.simulation.Simulation`) runs in a greenlet with an agent policy; at each decision the
policy switches back to the environment with a *view* of the queue and resumes with the agent's action (an
in-process switch: threads cost one OS context switch per step, milliseconds on a loaded machine). The agent receives only
observations (numpy arrays), never the Simulation.

Registration. Importing this module registers ``hpctwin/Facility-v0``; ``gymnasium.make`` can also import it:
``gymnasium.make("scheduler_sim.app.gym_env:hpctwin/Facility-v0", config=...)``. ``import scheduler_sim``
registers it too when gymnasium is already imported (gymnasium itself is never imported by the package: it is the
optional extra ``rl``).

Configuration (``config`` dict; every key optional)
---------------------------------------------------
``run`` (dict of RunConfig keys or a TOML path: system, trace, scheduler, grid; the plant is off),
``mode`` (``"job"`` or ``"policy"``), ``K`` (16), ``pool`` (policy mode: ``["fcfs+easy", "sjf+easy",
"fcfs+none", "ljf+easy"]``), ``period_s`` (policy mode: 3600 s between decisions), ``window_days`` (1.0),
``split`` (``"train"`` / ``"test"``), ``test_fraction`` (0.2), ``split_seed`` (0), the reward weights
``w_wait_per_s`` (1/3600), ``w_energy_per_J`` (1/3.6e9), ``w_cost`` (1, per currency unit), ``w_co2_per_kg`` (0.01),
``w_cap_per_s`` (1/3600) and ``cap_W`` (soft facility cap for the cap term; inf = none).

Actions (two documented modes)
------------------------------
``job``: ``Discrete(K + 1)``. Action ``i < K`` starts the i-th queued job (arrival order) now; action ``K`` waits
until the next event. The environment asks again, within the same scheduling pass, until the agent waits or no
queued job fits the free nodes. Mask: job ``i`` is valid if it exists and fits (nodes, and the power budget when
one is set); waiting is valid unless the machine runs nothing while some job fits (so an episode always ends).

``policy``: ``Discrete(len(pool))``. Action ``p`` makes ``pool[p]`` (``order+backfill``) schedule every pass until
the next decision (``period_s`` later, at the first pass at or after it). Every action is valid.

Observation (``Box``, float32, shape (4 K + 8,))
-----------------------------------------------
For the first K queued jobs (zeros past the queue): nodes / n_nodes, estimate / 1 day, wait so far / 1 day
(clipped at 30), 1 (present). Then: free nodes / n_nodes, queue length / 1000 (clipped at 10), IT power of the
running jobs / the machine's busy peak (node DC), the PUE estimate ``1 + cooling_estimate`` (the platform's own
estimate of the overhead ratio; the plant is off in the environment), wet-bulb of the site's typical year / 40 degC,
carbon intensity / 1000 gCO2/kWh, price / 100 per MWh (0 without a grid signal), time of day / 1 day.

Reward (per step, exact over the simulated interval ``[t_prev, t_now]`` since the last step)
------------------------------------------------------------------------------------------
``r = -(w_wait W + w_energy E + w_cost C + w_co2 M + w_cap T)`` with ``W`` the job-seconds of waiting accrued by every
job in the interval, ``E`` the node DC energy of the running jobs [J] (their start and scheduled end are known to the
platform: the integral is exact), ``C`` = the integral of job power x price [currency], ``M`` = the same with the
carbon intensity [kg], ``T`` the seconds in which that power exceeded ``cap_W``. The terminal step covers the
rest of the run.

Episodes. ``reset(seed=...)`` draws a window start day from the split's days: whole days ``d`` with the window
``[d, d + window_days)`` inside the trace, shuffled by ``split_seed``; the last ``test_fraction`` of them are the
test days. Windows, actions and results are deterministic given the seeds.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..policies.base import BasePolicy, SchedulerView
from ..policies.registry import make_policy
from .config import DAY_S, RunConfig, load_config

__all__ = ["FacilityEnv", "ENV_ID", "register_env", "DEFAULTS"]

ENV_ID = "hpctwin/Facility-v0"

DEFAULTS = {"mode": "job", "K": 16, "pool": ["fcfs+easy", "sjf+easy", "fcfs+none", "ljf+easy"], "period_s": 3600.0,
            "window_days": 1.0, "split": "train", "test_fraction": 0.2, "split_seed": 0,
            "w_wait_per_s": 1 / 3600.0, "w_energy_per_J": 1 / 3.6e9, "w_cost": 1.0, "w_co2_per_kg": 0.01,
            "w_cap_per_s": 1 / 3600.0, "cap_W": math.inf, "run": None}


class _Abort(BaseException):
    """Raised inside the platform thread to end an episode early (reset / close); never an Exception."""


class _AgentPolicy(BasePolicy):
    """The policy the platform calls: hands each decision to the environment and waits for the action."""

    name = "gym-agent"
    description = "decisions from a gymnasium agent"
    kills_at_walltime = True

    def __init__(self, env: "FacilityEnv") -> None:
        self.env = env
        self.reservations = {}
        self.active: BasePolicy | None = None
        self.next_decision_s = -math.inf

    def _ask(self, kind: str, payload) -> int:
        return int(self.env._main.switch((kind, payload)))  # back to the environment until the agent acts

    def schedule(self, view: SchedulerView) -> list[int]:  # noqa: D102 - BasePolicy protocol
        env = self.env
        if env.mode == "policy":
            if view.now_s >= self.next_decision_s:
                p = self._ask("decide", (view, list(view.queue), view.free_nodes, view.power_headroom_W))
                self.active = env._pool[p]
                self.next_decision_s = view.now_s + env.period_s
            return self.active.schedule(view)
        q = list(view.queue)
        free, head = view.free_nodes, view.power_headroom_W
        picks: list[int] = []
        while q:
            mask = env._job_mask(view, q, free, head, picks)
            if not mask[:-1].any():
                break
            a = self._ask("decide", (view, q, free, head, picks, mask))  # the mask goes along: made once
            if a == env.K:
                break
            j = q.pop(a)
            picks.append(j)
            free -= int(view.nodes[j])
            if view.power_W is not None:
                head -= float(view.power_W[j])
        return picks


def _policy(spec: str) -> BasePolicy:
    order, _, backfill = spec.partition("+")
    return make_policy(order, backfill or None)


class FacilityEnv:
    """The facility as a gymnasium environment (module docstring: observation, actions, reward, episodes).

    Parameters
    ----------
    config : dict | None
        Environment options (:data:`DEFAULTS`); ``run`` holds the run configuration (dict or TOML path).
    render_mode : str | None
        Not supported (None).

    Raises
    ------
    ValueError
        If an option is unknown or invalid (the key is named), or the trace has no whole window in the split.
    """

    metadata = {"render_modes": []}

    def __init__(self, config: dict | None = None, render_mode: str | None = None) -> None:
        import gymnasium as gym  # optional extra `rl`
        from gymnasium import spaces

        from power import load_system

        from .runner import build_weather, simulation_config

        self._gym = gym
        opts = dict(DEFAULTS)
        unknown = set(config or {}) - set(DEFAULTS)
        if unknown:
            raise ValueError(f"hpctwin/Facility-v0: unknown config key(s) {sorted(unknown)}; expected "
                             f"{', '.join(sorted(DEFAULTS))}")
        opts.update(config or {})
        if opts["mode"] not in ("job", "policy"):
            raise ValueError(f"hpctwin/Facility-v0: mode must be 'job' or 'policy', got {opts['mode']!r}")
        if not isinstance(opts["K"], int) or opts["K"] < 1:
            raise ValueError(f"hpctwin/Facility-v0: K must be an integer >= 1, got {opts['K']!r}")
        if opts["split"] not in ("train", "test"):
            raise ValueError(f"hpctwin/Facility-v0: split must be 'train' or 'test', got {opts['split']!r}")
        self.opts = opts
        self.mode, self.K, self.period_s = opts["mode"], int(opts["K"]), float(opts["period_s"])
        run = opts["run"]
        base = load_config(run) if isinstance(run, (str, Path)) else RunConfig.model_validate(
            {"output": {"progress": False}, **(run or {})})
        self.base = base.with_overrides({"cooling.model": "off", "output.progress": False,
                                         "trace.window_days": float(opts["window_days"])})
        self.system = load_system(self.base.system)
        self.jobs, origin = self._load_jobs()
        self._origin = origin
        sub = self.jobs["submit_time_s"].to_numpy(float)
        first, last = math.floor(np.nanmin(sub) / DAY_S), math.floor(np.nanmax(sub) / DAY_S)
        days = np.arange(first, last - opts["window_days"] + 1, dtype=float)
        rng = np.random.default_rng(opts["split_seed"])
        days = days[rng.permutation(len(days))]
        n_test = int(round(opts["test_fraction"] * len(days)))
        self.test_days, self.train_days = np.sort(days[len(days) - n_test:]), np.sort(days[:len(days) - n_test])
        self.days = self.train_days if opts["split"] == "train" else self.test_days
        if not len(self.days):
            raise ValueError(f"hpctwin/Facility-v0: no {opts['split']} window of {opts['window_days']} day(s) in "
                             f"the trace")
        self._simcfg = simulation_config
        try:
            self._wet_bulb = build_weather(self.base.with_overrides({"cooling.model": "fast"}), origin, self.system)[0]
        except (OSError, ValueError):
            self._wet_bulb = None
        self._signals = self._grid_signals(origin)
        self._pool = [_policy(p) for p in opts["pool"]] if self.mode == "policy" else []
        n_obs = 4 * self.K + 8
        self.observation_space = spaces.Box(low=-10.0, high=100.0, shape=(n_obs,), dtype=np.float32)
        self.action_space = spaces.Discrete(self.K + 1 if self.mode == "job" else len(self._pool))
        self.render_mode = render_mode
        self._glet = None  # the platform's greenlet while an episode runs
        node = self.system.node
        self._peak_W = max(1.0, self.system.n_nodes * (node.cpus_per_node * node.cpu_max_W
                                                        + node.gpus_per_node * node.gpu_max_W + node.mem_W))
        self._pue_est = 1.0 + float(self.base.scheduler.cooling_estimate)

    # ------------------------------------------------------------------ set-up helpers
    def _load_jobs(self):
        from dataloaders.registry import load_trace

        from .runner import _draw_job_power, trace_cores_per_node

        cfg = self.base
        cpn, _ = trace_cores_per_node(cfg, self.system)
        loaded = load_trace(cfg.trace.resolved_path(), format=cfg.trace.format or None, max_nodes=self.system.n_nodes,
                            cores_per_node=cpn, strict=cfg.trace.strict)
        jobs, _ = _draw_job_power(cfg, loaded.jobs, self.system)
        return jobs, float(jobs.attrs.get("time_origin_unix_s", float("nan")))

    def _grid_signals(self, origin: float) -> dict:
        if self.base.grid is None or not self.base.grid.signals_enabled():
            return {}
        from .grid import build_grid_signals

        return dict(build_grid_signals(self.base, origin, None).signals)

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        """Start an episode on a window of the split.

        Parameters
        ----------
        seed : int | None
            Seeds the environment's generator (the window draw).
        options : dict | None
            ``{"start_day": d}`` picks that window instead of drawing one.

        Returns
        -------
        tuple[np.ndarray, dict]
            The first observation and ``info`` (``start_day``, ``action_mask``, ``now_s``).
        """
        from ..kernel.simulation import Simulation

        super().reset(seed=seed)  # gymnasium.Env: seeds self.np_random
        self._stop()
        day = float(options["start_day"]) if options and "start_day" in options else \
            float(self.days[int(self.np_random.integers(len(self.days)))])
        cfg = self.base.with_overrides({"trace.window_start_days": day})
        self._policy = _AgentPolicy(self)
        self._sim = Simulation(self.jobs, self.system, self._policy, self._simcfg(cfg, self.system))
        self._t0 = self._t_prev = day * DAY_S
        self.start_day = day
        self._power = self._sim.jobdata.node_power_W * self._sim.jobdata.nodes
        self._sub = np.maximum(self._sim.jobdata.submit, self._t0)
        self._wb_t, self._wb_v = math.nan, 0.0
        from greenlet import getcurrent, greenlet  # optional extra `rl`: in-process switches, no thread hand-off

        self._main = getcurrent()
        self._glet = greenlet(self._run_platform)
        obs, info, _ = self._wait_decision(self._glet.switch())
        info["start_day"] = day
        return obs, info

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Apply the action and run the platform to the next decision.

        Parameters
        ----------
        action : int
            An action of :attr:`action_space` allowed by the mask.

        Returns
        -------
        tuple[np.ndarray, float, bool, bool, dict]
            Observation, reward, terminated (every job ended), truncated (never), info (``action_mask``, ``now_s``,
            the reward's terms ``wait_s``, ``energy_J``, ``cost``, ``co2_kg``, ``cap_s``; at the end ``summary``).

        Raises
        ------
        ValueError
            If the action is outside the space. A masked action is replaced by waiting (job mode, when allowed)
            or the first allowed action, and ``info["action_replaced"]`` is True.
        RuntimeError
            If the episode is over (call reset).
        """
        if self._glet is None:
            raise RuntimeError("hpctwin/Facility-v0: step() after the episode ended; call reset()")
        a = int(action)
        if not 0 <= a < self.action_space.n:
            raise ValueError(f"hpctwin/Facility-v0: action {a} is outside Discrete({self.action_space.n})")
        replaced = not self._mask[a]
        if replaced:  # a masked action: wait if allowed, else the first allowed job (documented)
            a = self.action_space.n - 1 if self.mode == "job" and self._mask[-1] else int(np.flatnonzero(self._mask)[0])
        obs, info, done = self._wait_decision(self._glet.switch(a))
        info["action_replaced"] = replaced
        return obs, float(info["reward"]), done, False, info

    def action_masks(self) -> np.ndarray:
        """The current action mask (bool, shape (n_actions,)); the sb3-contrib MaskablePPO convention."""
        return self._mask.copy()

    def close(self) -> None:
        """End a running episode (its platform thread stops)."""
        self._stop()

    def render(self) -> None:
        """No rendering."""
        return None

    # ------------------------------------------------------------------ platform thread
    def _run_platform(self) -> tuple:
        """The platform's greenlet: run the simulation; the agent policy switches back at every decision."""
        try:
            res = self._sim.run()
        except _Abort:
            return ("aborted", None)
        except Exception as exc:  # noqa: BLE001 - reported to the caller of step / reset
            return ("error", exc)
        return ("end", res)

    def _stop(self) -> None:
        if self._glet is not None and not self._glet.dead:
            self._glet.throw(_Abort())  # unwinds the platform at its pending decision
        self._glet = None

    def _wait_decision(self, msg: tuple) -> tuple[np.ndarray, dict, bool]:
        kind, payload = msg
        if kind == "error":
            self._glet = None
            raise payload
        if kind == "end":
            self._glet = None
            st = self._sim.state
            ends = np.where(np.isfinite(st.end), st.end, st.scheduled_end)
            t_end = float(np.nanmax(ends)) if np.isfinite(ends).any() else self._t_prev
            terms = self._terms(max(t_end, self._t_prev))
            self._mask = np.zeros(self.action_space.n, dtype=bool)
            self._mask[-1 if self.mode == "job" else 0] = True
            info = {**terms, "action_mask": self._mask.copy(), "now_s": t_end, "summary": dict(payload.summary)}
            return np.zeros(self.observation_space.shape, np.float32), info, True
        view, q, free, head = payload[:4]
        picks = payload[4] if len(payload) > 4 else []
        self._mask = (payload[5] if len(payload) > 5 else self._job_mask(view, q, free, head, picks)) \
            if self.mode == "job" else np.ones(len(self._pool), dtype=bool)
        terms = self._terms(view.now_s)
        info = {**terms, "action_mask": self._mask.copy(), "now_s": view.now_s}
        return self._observe(view, q, free, picks), info, False

    # ------------------------------------------------------------------ observation, mask, reward
    def _job_mask(self, view: SchedulerView, q: list[int], free: int, head: float, picks: list[int]) -> np.ndarray:
        K = self.K
        m = np.zeros(K + 1, dtype=bool)
        n = min(K, len(q))
        if n:
            idx = np.asarray(q[:n])
            fits = view.nodes[idx] <= free
            if view.power_W is not None:
                fits &= view.power_W[idx] <= head
            m[:n] = fits
        idle = not view.running and not picks
        m[K] = not (idle and m[:K].any())
        return m

    def _observe(self, view: SchedulerView, q: list[int], free: int, picks: list[int]) -> np.ndarray:
        K, N = self.K, max(1, view.n_nodes)
        o = np.zeros(4 * K + 8, dtype=np.float64)
        n = min(K, len(q))
        if n:
            idx = np.asarray(q[:n])
            f = o[:4 * K].reshape(K, 4)
            f[:n, 0] = view.nodes[idx] / N
            f[:n, 1] = view.estimate_s[idx] / DAY_S
            f[:n, 2] = np.minimum(np.maximum((view.now_s - np.maximum(view.submit_s[idx], self._t0)) / DAY_S, 0.0), 30.0)
            f[:n, 3] = 1.0
        t = view.now_s
        run = list(view.running) + list(picks)
        p_run = float(self._power[run].sum()) if run else 0.0
        g = o[4 * K:]
        g[0] = free / N
        g[1] = min(len(q) / 1000.0, 10.0)
        g[2] = p_run / self._peak_W
        g[3] = self._pue_est
        g[4] = self._wet_bulb_obs(t)
        if "carbon" in self._signals:
            g[5] = float(self._signals["carbon"].value_at(t)[0]) * 3.6e9 / 1000.0  # kg/J -> g/kWh
        if "price" in self._signals:
            g[6] = float(self._signals["price"].value_at(t)[0]) * 3.6e9 / 100.0  # per J -> per MWh
        g[7] = ((t + (self._origin if math.isfinite(self._origin) else 0.0)) % DAY_S) / DAY_S
        np.maximum(o, -10.0, out=o)  # np.clip's values, without its Python wrapper (the hot path of a step)
        np.minimum(o, 100.0, out=o)
        return o.astype(np.float32)

    def _wet_bulb_obs(self, t: float) -> float:
        """Wet-bulb observation at ``t`` (module docstring); memoised on the last time (the environment asks
        several times in one scheduling pass).
        """
        if self._wet_bulb is None:
            return 0.0
        if t != self._wb_t:
            self._wb_t, self._wb_v = t, (float(self._wet_bulb(np.array([t]))[0]) - 273.15) / 40.0
        return self._wb_v

    def _terms(self, t_now: float) -> dict:
        """Reward terms over ``[t_prev, t_now]`` (module docstring), and the reward; advances ``t_prev``."""
        a, b = self._t_prev, float(t_now)
        self._t_prev = max(a, b)
        st = self._sim.state
        if b <= a or st is None:
            return {"reward": 0.0, "wait_s": 0.0, "energy_J": 0.0, "cost": 0.0, "co2_kg": 0.0, "cap_s": 0.0}
        sub = self._sub  # submissions, not before the window start (made once per episode)
        start = st.start
        on = np.isfinite(start)
        w_end = np.where(on, start, np.inf)
        W = float(np.maximum(np.minimum(w_end, b) - np.maximum(sub, a), 0.0).sum())
        e_on = st.end[on]
        ends = np.where(np.isfinite(e_on), e_on, st.scheduled_end[on])  # the running / ended jobs' ends
        s0 = np.maximum(start[on], a)
        s1 = np.minimum(np.where(np.isfinite(ends), ends, b), b)
        keep = s1 > s0
        s0, s1, P = s0[keep], s1[keep], self._power[on][keep]
        E = float((P * (s1 - s0)).sum())
        C = M = 0.0
        if "price" in self._signals:
            C = float((P * self._signals["price"].integral(s0, s1)).sum())
        if "carbon" in self._signals:
            M = float((P * self._signals["carbon"].integral(s0, s1)).sum())
        T = 0.0
        cap = float(self.opts["cap_W"])
        if math.isfinite(cap) and len(P):
            edges = np.unique(np.r_[a, b, s0, s1])
            mid = 0.5 * (edges[:-1] + edges[1:])
            load = ((s0[None, :] <= mid[:, None]) & (s1[None, :] > mid[:, None])) @ P
            T = float(np.diff(edges)[load * self._pue_est > cap].sum())
        o = self.opts
        r = -(o["w_wait_per_s"] * W + o["w_energy_per_J"] * E + o["w_cost"] * C + o["w_co2_per_kg"] * M
              + o["w_cap_per_s"] * T)
        return {"reward": r, "wait_s": W, "energy_J": E, "cost": C, "co2_kg": M, "cap_s": T}


def register_env() -> None:
    """Register ``hpctwin/Facility-v0`` with gymnasium (idempotent)."""
    import gymnasium as gym

    if ENV_ID not in gym.registry:
        gym.register(id=ENV_ID, entry_point="scheduler_sim.app.gym_env:make_env", disable_env_checker=False,
                     order_enforce=True)


def make_env(config: dict | None = None, render_mode: str | None = None):
    """The environment as a ``gymnasium.Env`` (the registered entry point).

    Parameters
    ----------
    config : dict | None
        Environment options (:data:`DEFAULTS`).
    render_mode : str | None
        Not supported.

    Returns
    -------
    gymnasium.Env
        A :class:`FacilityEnv` (a ``gymnasium.Env`` subclass built at first use).
    """
    return _env_class()(config, render_mode)


_CLS = None


def _env_class():
    """``FacilityEnv`` with ``gymnasium.Env`` as a base (gymnasium is imported only here: it is optional)."""
    global _CLS
    if _CLS is None:
        import gymnasium as gym

        _CLS = type("FacilityEnv", (FacilityEnv, gym.Env), {"__doc__": FacilityEnv.__doc__,
                                                            "__module__": __name__})
    return _CLS


try:
    register_env()
except ImportError:  # the optional extra `rl` is not installed: nothing to register
    pass
