"""Figures of the ready policy studies (called by ``hpctwin sweep`` on rank 0 through the study's ``plot`` key).

Each function takes the sweep's ``summary.h5`` and the output folder, writes PNG and SVG figures next to the
summary and returns their paths. Units are converted for reading only (hours, MWh, MW, degC).
"""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from cooling_fmu.params import load_plant_params  # noqa: E402
from power import load_system  # noqa: E402
from scheduler_sim.app.runner import design_peak_w  # noqa: E402
from experiments.common import save_figure

__all__ = ["read_study", "policy_study", "power_cap_study", "placement_study"]


def read_study(summary: str | Path) -> dict[str, np.ndarray]:
    """The ``/scenarios`` table of a sweep summary as arrays (names decoded); failed scenarios are kept (NaN)."""
    with h5py.File(summary) as f:
        out = {}
        for k, ds in f["scenarios"].items():
            v = ds[()]
            out[k] = np.array([x.decode() if isinstance(x, bytes) else x for x in v]) if ds.dtype.kind == "O" else v
    return out


_save = save_figure  # one writer of study figures (experiments/common.py)


def _label(name: str) -> str:
    return name.split("_", 1)[1] if "_" in name else name


def policy_study(summary: str | Path, out_dir: str | Path) -> list[Path]:
    """Bars per policy: mean wait, mean bounded slowdown, measured utilisation, facility energy, PUE."""
    s = read_study(summary)
    labels = [_label(n) for n in s["name"]]
    panels = [("mean_wait_s", 1 / 3600, "mean wait [h]"), ("mean_bounded_slowdown", 1, "mean bounded slowdown"),
              ("utilisation_measured", 100, "utilisation (warm-up and drain excluded) [%]"),
              ("E_facility_J", 1 / 3.6e9, "facility energy [MWh]"), ("PUE", 1, "PUE (energy-weighted)"),
              ("awrt_s", 1 / 3600, "average weighted response time [h]")]
    fig, axes = plt.subplots(2, 3, figsize=(13, 6.5))
    x = np.arange(len(labels))
    for ax, (key, scale, title) in zip(axes.flat, panels):
        v = s.get(key, np.full(len(labels), np.nan)) * scale
        ax.bar(x, v, color="tab:blue")
        ax.set_title(title, fontsize=10)
        ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=9)
        finite = v[np.isfinite(v)]
        if key == "PUE" and finite.size:
            ax.set_ylim(max(1.0, finite.min() - 0.01), finite.max() + 0.005)
            ax.ticklabel_format(axis="y", useOffset=False)
        for xi, vi in zip(x, v):
            if np.isfinite(vi):
                txt = f"{vi:.4f}" if key == "PUE" else (f"{vi:,.0f}" if abs(vi) >= 100 else f"{vi:.3g}")
                ax.annotate(txt, (xi, vi), ha="center", va="bottom", fontsize=8)
    fig.suptitle("Scheduling policies on the ALCF Theta 2022 trace (same jobs, same weather; energy counts the "
                 "whole run, drain included)")
    fig.tight_layout()
    return _save(fig, Path(out_dir), "policies")


def power_cap_study(summary: str | Path, out_dir: str | Path) -> list[Path]:
    """Wait time and peak facility power against the cap, with the hours the cap was binding."""
    s = read_study(summary)
    caps = []
    with h5py.File(summary) as f:
        for cj in f["scenarios/config_json"][()]:
            pc = json.loads(cj)["scheduler"]["power_cap"]
            caps.append(pc[0]["cap_fraction"] if pc else np.nan)
    caps = np.array(caps, dtype=float)
    bound_h = []
    for name in s["name"]:
        with h5py.File(Path(out_dir) / f"{name}.h5") as r:
            bound_h.append(json.loads(r["provenance"].attrs["info_json"])["power_cap_bound_s"] / 3600)
    order = np.argsort(np.where(np.isfinite(caps), -caps, -np.inf))
    lab = ["none" if not np.isfinite(c) else f"{100 * c:.0f} %" for c in caps[order]]
    x = np.arange(len(lab))
    fig, ax1 = plt.subplots(figsize=(8, 4.5))
    ax1.bar(x - 0.2, s["mean_wait_s"][order] / 3600, 0.4, label="mean wait [h]", color="tab:blue")
    ax1.set_ylabel("mean wait [h]")
    ax1.set_xticks(x, lab)
    ax1.set_xlabel("facility power cap (fraction of the design peak)")
    ax2 = ax1.twinx()
    with h5py.File(summary) as f:  # labels and title from the study, not a fixed "30 days" / "1-day"
        cfg0 = json.loads(f["scenarios/config_json"][0])
    days = float(cfg0["trace"]["window_days"])
    warm = float(cfg0.get("output", {}).get("warmup_days", 1.0))
    ax2.plot(x, s["peak_P_facility_measured_W"][order] / 1e6, "o-", color="tab:red",
             label=f"peak facility power after the {warm:g}-day warm-up [MW]")
    cap_MW = caps[order] * design_peak_mw(summary)
    ax2.plot(x, cap_MW, "_", color="black", markersize=30, mew=2, label="cap [MW]")
    ax2.plot(x, s["mean_P_facility_W"][order] / 1e6, "s--", color="tab:orange", label="mean facility power [MW]")
    ax2.set_ylabel("facility power [MW] (60 s averages)")
    for xi, b in zip(x, np.array(bound_h)[order]):
        ax1.annotate(f"cap bound\n{b:.0f} h", (xi - 0.2, 0), xytext=(0, 3), textcoords="offset points",
                     ha="center", fontsize=7, color="white")
    h1, l1 = ax1.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax1.legend(h1 + h2, l1 + l2, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, fontsize=8)
    policy = str(cfg0["scheduler"].get("policy", "")).upper()
    span = f"{days:g} day{'s' if days != 1 else ''}"
    ax1.set_title(f"Power cap trade-off ({cfg0.get('system', '')}, {policy}, {span}); jobs running when the "
                  f"window opens are\nplaced regardless of the cap, so peaks are measured after a {warm:g}-day "
                  "warm-up", fontsize=10)
    fig.tight_layout()
    return _save(fig, Path(out_dir), "power_cap")


def design_peak_mw(summary: str | Path) -> float:
    """Design peak facility power [MW] of the study's system (reference of ``cap_fraction``)."""
    with h5py.File(summary) as f:
        cfg = json.loads(f["scenarios/config_json"][0])
    return design_peak_w(load_system(cfg["system"]), cfg["scheduler"]["cooling_estimate"]) / 1e6


def placement_study(summary: str | Path, out_dir: str | Path) -> list[Path]:
    """Per placement: heat spread across CDUs, minutes a CDU supply ran above its setpoint + 0.5 K, cooling energy.

    Only the window (warm-up and drain excluded) is counted; the CDU supply setpoint comes from the run's plant.
    """
    s = read_study(summary)
    labels, spread_kW, hot_min, cool_MWh, pump_kWh = [], [], [], [], []
    for name, cj in zip(s["name"], s["config_json"]):
        cfg = json.loads(cj)
        a = (cfg["trace"]["window_start_days"] + cfg["output"]["warmup_days"]) * 86400
        b = (cfg["trace"]["window_start_days"] + cfg["trace"]["window_days"]) * 86400
        with h5py.File(Path(out_dir) / f"{name}.h5") as r:
            t = r["timeseries/time_s"][()]
            dt = float(t[1] - t[0])
            sel = (t >= a) & (t + dt <= b)
            q = r["timeseries/cdu/Q_flow_W"][()][sel]
            T = r["timeseries/cdu/T_sec_sup"][()][sel]
            pc = r["timeseries/facility/P_cooling_W"][()][sel]
            pump = r["timeseries/cdu/P_pump_sec"][()][sel] if "P_pump_sec" in r["timeseries/cdu"] else None
            plant = load_plant_params(cfg["cooling"]["plant"] or r.attrs["system"])
        T_set = plant.cdu.T_sec_sup_set_K
        labels.append(_label(name))
        spread_kW.append(float(np.mean(q.max(axis=1) - q.min(axis=1))) / 1e3)
        hot_min.append(float(np.sum(T.max(axis=1) > T_set + 0.5)) * dt / 60)
        cool_MWh.append(float(pc.sum()) * dt / 3.6e9)
        pump_kWh.append(float(pump.sum()) * dt / 3.6e6 if pump is not None else np.nan)
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.8))
    x = np.arange(len(labels))
    for ax, v, title in zip(axes, (spread_kW, hot_min, cool_MWh, pump_kWh),
                            ("mean heat spread across CDUs\n(max - min) [kW]",
                             "minutes a CDU supply was\n> setpoint + 0.5 K", "cooling energy [MWh]",
                             "CDU secondary pump energy [kWh]")):
        ax.bar(x, v, color=["tab:gray", "tab:blue", "tab:orange"][: len(x)])
        ax.set_xticks(x, labels)
        ax.set_title(title, fontsize=10)
        for xi, vi in zip(x, v):
            ax.annotate(f"{vi:.3g}", (xi, vi), ha="center", va="bottom", fontsize=8)
    fig.suptitle("Node placement in the hottest week of Golden's typical year (Theta 2022 jobs, EASY; window "
                 "only, warm-up and drain excluded)", fontsize=11)
    fig.tight_layout()
    return _save(fig, Path(out_dir), "placement")
