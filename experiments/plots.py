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

__all__ = ["read_study", "policy_study", "power_cap_study", "placement_study"]


def read_study(summary: str | Path) -> dict[str, np.ndarray]:
    """The ``/scenarios`` table of a sweep summary as arrays (names decoded); failed scenarios are kept (NaN)."""
    with h5py.File(summary) as f:
        out = {}
        for k, ds in f["scenarios"].items():
            v = ds[()]
            out[k] = np.array([x.decode() if isinstance(x, bytes) else x for x in v]) if ds.dtype.kind == "O" else v
    return out


def _save(fig, out_dir: Path, stem: str) -> list[Path]:
    paths = []
    for ext in ("png", "svg"):
        p = Path(out_dir) / f"{stem}.{ext}"
        fig.savefig(p, dpi=130, bbox_inches="tight")
        paths.append(p)
    plt.close(fig)
    return paths


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
    ax2.plot(x, s["peak_P_facility_W"][order] / 1e6, "o-", color="tab:red", label="peak facility power [MW]")
    ax2.plot(x, s["mean_P_facility_W"][order] / 1e6, "s--", color="tab:orange", label="mean facility power [MW]")
    ax2.set_ylabel("facility power [MW] (60 s averages)")
    for xi, b in zip(x, np.array(bound_h)[order]):
        ax1.annotate(f"cap bound\n{b:.0f} h", (xi - 0.2, 0), xytext=(0, 3), textcoords="offset points",
                     ha="center", fontsize=7, color="white")
    h1, l1 = ax1.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax1.legend(h1 + h2, l1 + l2, loc="upper left", fontsize=8)
    ax1.set_title("Power cap trade-off: wait time vs facility power (Theta 2022, EASY, 30 days)")
    fig.tight_layout()
    return _save(fig, Path(out_dir), "power_cap")


def placement_study(summary: str | Path, out_dir: str | Path) -> list[Path]:
    """Per placement: the hottest CDU supply temperature over time and the spread of heat across CDUs."""
    s = read_study(summary)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.5))
    rows = []
    for name in s["name"]:
        with h5py.File(Path(out_dir) / f"{name}.h5") as r:
            t = r["timeseries/time_s"][()] / 86400
            q = r["timeseries/cdu/Q_flow_W"][()]
            cdu = r["timeseries/cdu"]
            tkey = "T_sec_sup" if "T_sec_sup" in cdu else None
            T = cdu[tkey][()] - 273.15 if tkey else None
        label = _label(name)
        spread = (q.max(axis=1) - q.min(axis=1)) / 1e3
        ax1.plot(t, spread, lw=0.8, label=label)
        if T is not None:
            ax2.plot(t, T.max(axis=1), lw=0.8, label=label)
            rows.append((label, float(T.max()), float(np.mean(T.max(axis=1) - T.min(axis=1)))))
    ax1.set_xlabel("day of 2022")
    ax1.set_ylabel("heat spread across CDUs, max - min [kW]")
    ax1.set_title("How evenly heat is spread over the CDUs")
    ax1.legend(fontsize=8)
    ax2.set_xlabel("day of 2022")
    ax2.set_ylabel("hottest CDU secondary supply temperature [degC]")
    ax2.set_title("Hottest CDU supply temperature (hot week, Golden TMY3)")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    return _save(fig, Path(out_dir), "placement")
