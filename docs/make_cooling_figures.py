"""Regenerate the figures and figures-in-text of docs/cooling.md: one July week of Golden, CO weather (TMY3)
through the Frontier-like plant, at constant load and driven by the HLRS Hawk power trace.

Run from the repository root: ``python docs/make_cooling_figures.py`` (needs /work/shared/data or ../shared/data).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import h5py  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from cooling_fmu.params import load_plant_params  # noqa: E402
from scheduler_sim.app.cooling import run_cooling_standalone  # noqa: E402
from cooling_fmu.weather import Weather, default_weather  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HAWK = ROOT.parent / "shared" / "data" / "power" / "Hawk_power_15_min.csv"
IMG = ROOT / "docs" / "img"


def _constant_csv(path: Path, watts: float) -> Path:
    t = 1_688_860_800 + 900 * np.arange(7 * 96 + 1)  # 2023-07-09 00:00 UTC, 15-min samples
    path.write_text("timestamp_secs,measured_kW\n" + "\n".join(f"{a},{watts / 1e3:.3f}" for a in t) + "\n")
    return path


def _plot(h5: Path, title: str, out: Path, p_cells: int = 8) -> dict:
    with h5py.File(h5) as f:
        fac = {k: f["timeseries/facility"][k][()] for k in f["timeseries/facility"]}
        T_sec = f["timeseries/cdu/T_sec_sup"][()][:, 0]
        t_d = f["timeseries/time_s"][()] / 86400.0
        s = dict(f["summary"].attrs)
    fig, ax = plt.subplots(3, 1, figsize=(10, 9), sharex=True)
    ax[0].plot(t_d, fac["T_wb_K"] - 273.15, label="outdoor wet-bulb")
    ax[0].plot(t_d, fac["T_tower_out"] - 273.15, ls="--", label="tower leaving water (on the facility supply line)")
    ax[0].plot(t_d, fac["T_fac_sup"] - 273.15, label="facility supply (setpoint 29 C)")
    ax[0].plot(t_d, T_sec - 273.15, label="CDU 1 secondary supply (setpoint 32 C)")
    ax[0].set_ylabel("temperature [degC]")
    ax[0].set_ylim(8, 36)
    ax[0].legend(loc="center left", fontsize=8, ncol=2)
    ax[0].set_title(title)
    ax[1].plot(t_d, fac["P_fan_tower"] / 1e3, label="tower fans")
    pumps = fac["P_cooling"] - fac["P_fan_tower"] - fac["P_chiller"]
    ax[1].plot(t_d, pumps / 1e3, label="pumps (secondary + facility)")
    ax[1].plot(t_d, fac["P_cooling"] / 1e3, "k", lw=1, label="total cooling power")
    ax[1].set_ylabel("electrical power [kW]")
    ax[1].legend(loc="upper left", fontsize=8)
    ax1b = ax[1].twinx()
    ax1b.plot(t_d, fac["P_it_W"] / 1e6, color="0.6", ls=":", label="IT power (right axis)")
    ax1b.set_ylabel("IT power [MW]", color="0.4")
    ax1b.set_ylim(0, 1.2 * fac["P_it_W"].max() / 1e6)
    ax1b.legend(loc="upper right", fontsize=8)
    ax[2].plot(t_d, fac["y_fan"] * 100, label="tower bank air flow [% of full]")
    ax[2].plot(t_d, fac["n_cells_on"] / p_cells * 100, label="cells running [% of cells, interval mean]")
    ax[2].set_ylabel("tower fans [%]")
    ax[2].set_ylim(0, 105)
    ax[2].legend(loc="lower left", fontsize=8)
    ax2b = ax[2].twinx()
    ax2b.plot(t_d, fac["m_flow_makeup"], color="tab:green", label="make-up water (right axis)")
    ax2b.set_ylabel("make-up water [kg/s]", color="tab:green")
    ax2b.set_ylim(0, 1.2 * fac["m_flow_makeup"].max())
    ax2b.legend(loc="lower right", fontsize=8)
    ax[2].set_xlabel("days since the start of the week (July 9, Golden CO TMY3)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return s


def main() -> None:
    """Run both weeks, write the PNGs and print the figures used in docs/cooling.md."""
    IMG.mkdir(parents=True, exist_ok=True)
    p = load_plant_params("frontier")
    design = p.n_cdu * p.cdu.Q_flow_nominal_W
    weather = default_weather(Weather.offset_for(190))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        csv = _constant_csv(tmp / "const.csv", 0.8 * design)
        s1 = run_cooling_standalone(csv, tmp / "const.h5", plant="frontier", days=7, weather=weather)
        s1 = _plot(tmp / "const.h5", "Frontier-like plant, constant 22.6 MW (80 % of design), Golden July week",
                   IMG / "cooling_week_constant.png")
        # Hawk from 2023-07-09 (115 days after its first non-zero sample), peak scaled to 80 % of design
        s2 = run_cooling_standalone(HAWK, tmp / "hawk.h5", plant="frontier", days=7, start_day=115.0,
                                    scale_to_design=0.8, weather=weather)
        s2 = _plot(tmp / "hawk.h5", f"Frontier-like plant driven by the HLRS Hawk trace (x{s2['power_scale']:.2f}), "
                   "Golden July week", IMG / "cooling_week_trace.png")
    for name, s in (("constant", s1), ("trace", s2)):
        print(f"{name}: mean IT {s['mean_P_it_W'] / 1e6:.2f} MW, PUE {s['PUE']:.4f}, WUE {s['WUE_L_per_kWh']:.3f} L/kWh, "
              f"fan share {100 * s['fan_share_of_cooling']:.1f} % of cooling energy")


if __name__ == "__main__":
    main()
