"""Figures of one serving run file: latency distributions and GPU / partition power over time.

.venv/bin/python experiments/plot_serving_run.py out/llm_serving_azure_conv.h5 --prefix docs/img/llm_serving_azure_conv
"""

from __future__ import annotations

import argparse
import sys

import h5py
import numpy as np

from jobs.cachedirs import atomic_output


def main(argv=None) -> int:
    """Write <prefix>_latency.png and <prefix>_power.png."""
    import matplotlib  # heavy: matplotlib is imported only when the plot is drawn
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("h5")
    ap.add_argument("--prefix", default="docs/img/llm_serving_azure_conv")
    a = ap.parse_args(argv)
    with h5py.File(a.h5) as f:
        g = f["serving"]
        rq = {k: g["requests"][k][()] for k in ("ttft_s", "tpot_s", "e2e_s", "status")}
        t = g["power/time_s"][()]
        Pg = g["power/P_gpu_W"][()]
        Pn = g["power/P_node_W"][()]
        ttft_slo, tpot_slo = g.attrs["ttft_slo_s"], g.attrs["tpot_slo_s"]
        ts = f["timeseries/time_s"][()]
        pue = f["timeseries/facility/PUE"][()]
    t0 = t[0]
    fig, axs = plt.subplots(1, 3, figsize=(12, 3.6), dpi=120)
    for ax, key, slo, scale, unit in ((axs[0], "ttft_s", ttft_slo, 1.0, "s"), (axs[1], "tpot_s", tpot_slo, 1e3, "ms"),
                                      (axs[2], "e2e_s", None, 1.0, "s")):
        v = rq[key][np.isfinite(rq[key])] * scale
        v = np.sort(v)
        ax.plot(v, np.arange(1, v.size + 1) / v.size, lw=1.5)
        for p, ls in ((50, ":"), (90, "--"), (99, "-.")):
            q = np.percentile(v, p)
            ax.axvline(q, color="grey", ls=ls, lw=0.8, label=f"p{p} = {q:.3g} {unit}")
        if slo is not None:
            ax.axvline(slo * scale, color="r", lw=1.2, label=f"SLO {slo * scale:g} {unit}")
        ax.set_xlabel(f"{key[:-2].upper()} [{unit}]")
        ax.set_ylabel("fraction of requests (CDF)")
        if key != "tpot_s":
            ax.set_xscale("log")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Azure LLM conversation hour on Llama 3 70B, 2 x TP4 H100: latency distributions (19,366 requests)",
                 fontsize=10)
    fig.tight_layout()
    with atomic_output(f"{a.prefix}_latency.png", what="figure") as fh:
        fig.savefig(fh, format="png")

    fig, axs = plt.subplots(2, 1, figsize=(11, 5.5), dpi=120, sharex=True)
    m = (t - t0) / 60
    for r in range(Pg.shape[1]):
        axs[0].step(m, Pg[:, r], where="post", lw=0.5, label=f"replica {r} (each of its GPUs)")
    axs[0].axhline(70, color="grey", ls=":", lw=1, label="idle 70 W")
    axs[0].axhline(700, color="r", ls=":", lw=1, label="max 700 W")
    axs[0].set_ylabel("GPU power [W]\n(1 s exact averages)")
    axs[0].legend(fontsize=7, ncol=4, loc="lower center")
    axs[0].grid(alpha=0.3)
    axs[1].step(m, Pn.sum(axis=1) / 1e3, where="post", lw=0.6, color="k", label="partition node DC power (2 nodes)")
    axs[1].set_ylabel("node DC power [kW]")
    axs[1].set_xlabel("minutes since the first request (2023-11-16 18:15:46 UTC)")
    axs[1].grid(alpha=0.3)
    ax2 = axs[1].twinx()
    ax2.plot((ts - t0) / 60 + 0.5, pue, color="tab:green", lw=1, label="facility PUE (60 s)")
    ax2.set_ylabel("PUE", color="tab:green")
    ax2.ticklabel_format(axis="y", useOffset=False)
    axs[1].legend(fontsize=7, loc="upper left")
    ax2.legend(fontsize=7, loc="upper right")
    axs[1].set_xlim(0, m[-1])
    fig.tight_layout()
    with atomic_output(f"{a.prefix}_power.png", what="figure") as fh:
        fig.savefig(fh, format="png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
