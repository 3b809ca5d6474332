"""Scheduling and facility metrics, with the field's definitions.

Per job (columns added by :func:`add_job_metrics`), with ``t0`` the window start and ``s = max(submit_time_s, t0)``
the job's submission as seen from the window (a job queued before the window does not count its earlier wait in
window metrics):

* ``wait_s = max(sim_start_s, t0) - s`` (the wait inside the window; 0 for a job already running at ``t0``)
* ``wait_before_window_s = min(sim_start_s, t0) - min(submit_time_s, t0)`` (the wait before the window; 0 for
  jobs submitted in the window; ``wait_s + wait_before_window_s = sim_start_s - submit_time_s``)
* ``turnaround_s = sim_end_s - s``
* ``run_s = sim_end_s - sim_start_s`` (simulated run time, after a walltime kill if any)
* ``bounded_slowdown = max(1, turnaround_s / max(run_s, tau))`` with ``tau = 10 s``
  (Feitelson, Rudolph, Schwiegelshohn, Sevcik, Wong, "Theory and practice in parallel job scheduling",
  JSSPP 1997).

Facility (energy-weighted over the run, never a mean of instantaneous ratios; The Green Grid, "PUE: a
comprehensive examination of the metric", White Paper 49, 2012; ITUE/TUE: Patterson et al., "TUE, a new
energy-efficiency metric applied at ORNL's Jaguar", ISC 2013):

* ``PUE = E_facility / E_IT`` where ``E_IT`` is the energy entering the IT equipment (rack input: node DC power,
  SIVOC/VRM and rectifier losses and rack network overhead are all inside IT) and ``E_facility = E_IT + E_cooling``
  (pumps, tower fans; no other facility loads are modelled);
* ``ITUE = E_IT / E_compute`` with ``E_compute = E_node_dc + E_rack_overhead`` (power delivered to components);
* ``TUE = ITUE * PUE = E_facility / E_compute``;
* ``WUE = V_water / E_IT`` in litres per kWh of IT energy (The Green Grid, "Water Usage Effectiveness (WUE)",
  White Paper 35, 2011), ``V_water`` the cooling-tower make-up water, reported when the plant has an
  ``m_flow_makeup`` output [kg/s] (litres = kg / 0.997, water at 25 C).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["TAU_S", "add_job_metrics", "partition_metrics", "summarize"]

#: Bounded-slowdown threshold [s].
TAU_S = 10.0


def add_job_metrics(jobs: pd.DataFrame, window_start_s: float = -np.inf, copy: bool = True) -> pd.DataFrame:
    """Add ``wait_s``, ``wait_before_window_s``, ``turnaround_s``, ``run_s``, ``bounded_slowdown`` to a result table.

    Parameters
    ----------
    jobs : pd.DataFrame
        Needs ``submit_time_s``, ``sim_start_s``, ``sim_end_s`` [s] (NaN for jobs that never ran).
    window_start_s : float
        Window start ``t0`` [s]; wait and turnaround count from ``max(submit, t0)`` (module docstring). The default
        (no window) counts from the submit time.
    copy : bool
        True (default): the columns are added to a copy. False: to ``jobs`` itself (a table the caller just built:
        the run's result table, where a copy held a second million-row table at the end of the run; issue #26).

    Returns
    -------
    pandas.DataFrame
        A copy (or ``jobs``) with the five columns (NaN where the job did not run).
    """
    out = jobs.copy() if copy else jobs
    sub = out["submit_time_s"].to_numpy(float)
    st = out["sim_start_s"].to_numpy(float)
    en = out["sim_end_s"].to_numpy(float)
    t0 = float(window_start_s)
    seen = np.maximum(sub, t0)  # submission as seen from the window
    out["wait_s"] = np.maximum(st, t0) - seen
    out["wait_before_window_s"] = np.minimum(st, t0) - np.minimum(sub, t0) if np.isfinite(t0) else st - st
    out["turnaround_s"] = en - seen
    out["run_s"] = en - st
    with np.errstate(invalid="ignore"):
        out["bounded_slowdown"] = np.maximum(1.0, (en - seen) / np.maximum(en - st, TAU_S))
    out.loc[np.isnan(en), "bounded_slowdown"] = np.nan
    return out


def summarize(jobs: pd.DataFrame, totals: dict, facility: dict, *, n_nodes: int, t0: float,
              cooling: bool, time_s: np.ndarray | None = None,
              measure: tuple[float, float] | None = None) -> dict[str, float]:
    """Headline metrics of one run.

    Parameters
    ----------
    jobs : pd.DataFrame
        Output of :func:`add_job_metrics` plus ``prefilled``, ``nodes``, ``outcome``.
    totals : dict
        Exact energies [J] from the step integration: ``E_node_dc_J``, ``E_sivoc_loss_J``, ``E_rectifier_loss_J``,
        ``E_rack_overhead_J``, ``E_it_J``, ``E_cooling_J``, ``E_facility_J``, ``duration_s``.
    facility : dict
        Interval series; ``busy_nodes`` is used for utilisation and ``P_facility_W`` for peak power.
    n_nodes : int
        Nodes in the system.
    t0 : float
        Window start [s].
    cooling : bool
        Whether cooling power was modelled (if not, PUE is NaN: it would be a meaningless 1.0).
    time_s : np.ndarray | None
        Start of each output interval [s] (needed with ``measure``).
    measure : tuple[float, float] | None
        ``[a, b)`` [s] over which ``utilisation_measured`` is computed, excluding a warm-up before ``a`` and the
        drain after ``b`` (whole output intervals inside the window).

    Returns
    -------
    dict of str -> float
        ``jobs_completed``, ``jobs_killed_walltime``, ``mean_wait_s``, ``median_wait_s``, ``mean_turnaround_s``,
        ``mean_bounded_slowdown``, ``utilisation`` (busy node-seconds / (n_nodes * duration)), ``makespan_s``
        (last end - t0), the energies [J], ``PUE`` (facility PUE: every overhead the system description counts),
        ``pPUE_mechanical`` ((E_IT + liquid plant + air side) / E_IT) and ``pPUE_electrical`` ((E_IT + transformer +
        switchgear + UPS + PDU losses) / E_IT), partial PUEs of The Green Grid (WP49), ``ITUE``, ``TUE``,
        ``mean_P_it_W``, ``peak_P_facility_W``
        (peak of the output-interval averages), ``loss_fraction`` ((SIVOC + rectifier loss) / IT energy),
        ``awrt_s`` (average weighted response time, weights = nodes x run time: sum(w turnaround) / sum(w);
        Schwiegelshohn and Yahyapour 2000), ``throughput_jobs_per_day`` (ended jobs / makespan),
        ``EDP_Js`` = E_facility x makespan, ``ED2P_Js2`` = E_facility x makespan^2, ``utilisation_measured`` and
        ``peak_P_facility_measured_W`` (over ``measure``: warm-up and drain excluded).
        Wait metrics exclude prefilled jobs (they started before the window) and count from
        ``max(submit, t0)`` (:func:`add_job_metrics`); ``mean_wait_before_window_s`` is the mean of
        ``wait_before_window_s`` over the same jobs (the wait of jobs queued before the window, left out of
        ``mean_wait_s``).
    """
    sched = jobs.loc[~jobs["prefilled"].to_numpy(bool)]
    ran = sched.loc[sched["sim_end_s"].notna()]
    dur = float(totals["duration_s"])
    busy_node_s = float(np.sum(facility["busy_nodes"])) * (dur / max(len(facility["busy_nodes"]), 1))
    E_compute = totals["E_node_dc_J"] + totals["E_rack_overhead_J"]
    E_it = totals["E_it_J"]
    itue = E_it / E_compute if E_compute > 0 else float("nan")
    pue = totals["E_facility_J"] / E_it if (cooling and E_it > 0) else float("nan")
    E_mech = totals.get("E_mechanical_J", totals["E_cooling_J"])
    E_elec = totals.get("E_electrical_loss_J", 0.0)
    ppue_mech = (E_it + E_mech) / E_it if (cooling and E_it > 0) else float("nan")
    ppue_elec = (E_it + E_elec) / E_it if E_it > 0 else float("nan")
    out = {
        "jobs_simulated": float(len(jobs)),
        "jobs_completed": float(np.count_nonzero(jobs["outcome"].to_numpy() == 1)),
        "jobs_killed_walltime": float(np.count_nonzero(jobs["outcome"].to_numpy() == 2)),
        "mean_wait_s": float(ran["wait_s"].mean()) if len(ran) else float("nan"),
        "median_wait_s": float(ran["wait_s"].median()) if len(ran) else float("nan"),
        "mean_wait_before_window_s": (float(ran["wait_before_window_s"].mean())
                                      if len(ran) and "wait_before_window_s" in ran else float("nan")),
        "mean_turnaround_s": float(ran["turnaround_s"].mean()) if len(ran) else float("nan"),
        "mean_bounded_slowdown": float(ran["bounded_slowdown"].mean()) if len(ran) else float("nan"),
        "utilisation": busy_node_s / (n_nodes * dur) if dur > 0 else float("nan"),
        "makespan_s": (float(np.nanmax(jobs["sim_end_s"].to_numpy(float)) - t0)
                       if jobs["sim_end_s"].notna().any() else float("nan")),
        "duration_s": dur,
        "E_node_dc_J": totals["E_node_dc_J"],
        "E_it_J": E_it,
        "E_loss_J": totals["E_sivoc_loss_J"] + totals["E_rectifier_loss_J"],
        "E_cooling_J": totals["E_cooling_J"],
        "E_facility_J": totals["E_facility_J"],
        "loss_fraction": (totals["E_sivoc_loss_J"] + totals["E_rectifier_loss_J"]) / E_it if E_it > 0 else float("nan"),
        "PUE": pue,
        "pPUE_mechanical": ppue_mech,
        "pPUE_electrical": ppue_elec,
        "E_mechanical_J": E_mech,
        "E_air_side_J": totals.get("E_air_side_J", 0.0),
        "E_electrical_loss_J": E_elec,
        "E_lighting_J": totals.get("E_lighting_J", 0.0),
        "ITUE": itue,
        "TUE": itue * pue,
        "mean_P_it_W": E_it / dur if dur > 0 else float("nan"),
        "mean_P_facility_W": totals["E_facility_J"] / dur if dur > 0 else float("nan"),
        "peak_P_facility_W": float(np.max(facility["P_facility_W"])) if len(facility["P_facility_W"]) else float("nan"),
    }
    w = (ran["nodes"] * ran["run_s"]).to_numpy(float)
    out["awrt_s"] = float((w * ran["turnaround_s"].to_numpy(float)).sum() / w.sum()) if w.sum() > 0 else float("nan")
    mk = out["makespan_s"]
    ended = float(np.count_nonzero(np.isfinite(jobs["sim_end_s"].to_numpy(float))))
    out["throughput_jobs_per_day"] = ended / (mk / 86400.0) if mk > 0 else float("nan")
    out["EDP_Js"] = totals["E_facility_J"] * mk
    out["ED2P_Js2"] = totals["E_facility_J"] * mk ** 2
    out["utilisation_measured"] = float("nan")
    out["peak_P_facility_measured_W"] = float("nan")
    if measure is not None and time_s is not None and len(time_s) > 1:
        dt = float(time_s[1] - time_s[0])
        sel = (time_s >= measure[0]) & (time_s + dt <= measure[1])
        if sel.any():
            out["utilisation_measured"] = float(np.mean(facility["busy_nodes"][sel])) / n_nodes
            out["peak_P_facility_measured_W"] = float(np.max(facility["P_facility_W"][sel]))
    if "m_flow_makeup" in facility and len(facility["m_flow_makeup"]) and E_it > 0:
        water_kg = float(np.sum(facility["m_flow_makeup"])) * (dur / len(facility["m_flow_makeup"]))
        out["water_makeup_kg"] = water_kg
        out["WUE_L_per_kWh"] = (water_kg / 0.997) / (E_it / 3.6e6)
    return out


#: Default job-size classes [nodes]: (lower bound inclusive, label).
SIZE_CLASSES = ((1, "1"), (2, "2-15"), (16, "16-127"), (128, "128-511"), (512, "512-2047"), (2048, "2048+"))


def group_metrics(jobs: pd.DataFrame, by: str, size_classes: tuple = SIZE_CLASSES) -> pd.DataFrame:
    """Per-account or per-size-class metrics.

    Parameters
    ----------
    jobs : pd.DataFrame
        Result table (:func:`add_job_metrics` columns, ``energy_dc_J``, ``energy_it_J``, ``nodes``, ``account``,
        ``user``, ``prefilled``).
    by : str
        ``"account"``: group by account (else user; '' = unknown); ``"size"``: by node-count class
        (``size_classes``).
    size_classes : tuple
        ``(lower bound, label)`` of each size class, ascending.

    Returns
    -------
    pandas.DataFrame
        One row per group: ``group``, ``jobs``, ``node_hours`` [h], ``mean_wait_s``, ``mean_bounded_slowdown``,
        ``energy_dc_J``, ``energy_it_J``; prefilled jobs are left out of the wait statistics only.

    Raises
    ------
    ValueError
        If ``by`` is neither ``"account"`` nor ``"size"``.
    """
    df = jobs.copy()
    if by == "account":
        acct = df["account"].astype(str)
        key = acct.where(acct != "", df["user"].astype(str))
        df["group"] = key.where(key != "", "(unknown)")
    elif by == "size":
        bounds = np.array([b for b, _ in size_classes])
        labels = [lab for _, lab in size_classes]
        df["group"] = [labels[i] for i in np.searchsorted(bounds, df["nodes"].to_numpy(), side="right") - 1]
    else:
        raise ValueError(f"by must be 'account' or 'size', got {by!r}")
    df["node_h"] = df["nodes"] * df["run_s"] / 3600.0
    df["w_wait"] = df["wait_s"].where(~df["prefilled"].astype(bool))
    df["w_bsld"] = df["bounded_slowdown"].where(~df["prefilled"].astype(bool))
    g = df.groupby("group", sort=True)
    out = pd.DataFrame({
        "jobs": g.size(), "node_hours": g["node_h"].sum(), "mean_wait_s": g["w_wait"].mean(),
        "mean_bounded_slowdown": g["w_bsld"].mean(), "energy_dc_J": g["energy_dc_J"].sum(),
        "energy_it_J": g["energy_it_J"].sum(),
    }).reset_index()
    return out


def partition_metrics(jobs: pd.DataFrame, names: list[str], pools: np.ndarray, span_s: float) -> dict:
    """Scheduling metrics of each partition's jobs (a job table with a ``partition`` column).

    Parameters
    ----------
    jobs : pd.DataFrame
        Result job table (:func:`add_job_metrics` columns and ``partition``).
    names : list[str]
        Partition names, in partition order.
    pools : np.ndarray
        Batch nodes of each partition, shape (n_partitions,).
    span_s : float
        Simulated span [s].

    Returns
    -------
    dict of str -> ndarray (n_partitions,)
        ``jobs`` (simulated), ``node_hours`` [h] (a ``node_share`` column, on a system with a sharing partition,
        counts each job's nodes' worth), ``utilisation`` = node-seconds of its jobs / (pool x span) (NaN for
        a partition without batch nodes), ``mean_wait_s`` and ``mean_bounded_slowdown`` (prefilled jobs left
        out; NaN without jobs), ``energy_it_J`` of its jobs [J].
    """
    out: dict[str, list] = {k: [] for k in ("jobs", "node_hours", "utilisation", "mean_wait_s",
                                            "mean_bounded_slowdown", "energy_it_J")}
    for k, name in enumerate(names):
        g = jobs.loc[jobs["partition"] == name]
        size = g["node_share"] if "node_share" in g.columns else g["nodes"]  # a sharing partition: shares
        node_s = float((size * g["run_s"].fillna(0.0)).sum())
        live = g.loc[~g["prefilled"].astype(bool)]
        out["jobs"].append(len(g))
        out["node_hours"].append(node_s / 3600.0)
        out["utilisation"].append(node_s / (pools[k] * span_s) if pools[k] > 0 and span_s > 0 else float("nan"))
        out["mean_wait_s"].append(float(live["wait_s"].mean()) if len(live) else float("nan"))
        out["mean_bounded_slowdown"].append(float(live["bounded_slowdown"].mean()) if len(live) else float("nan"))
        out["energy_it_J"].append(float(g["energy_it_J"].sum()))
    return {k: np.array(v, dtype=np.int64 if k == "jobs" else float) for k, v in out.items()}
