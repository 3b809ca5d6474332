"""Serving sweep: batch limits x replicas x tensor-parallel degree on the Azure conversation hour, with cooling.

Plots the Pareto front of tokens/s per user (interactivity) against tokens/s per GPU (throughput), coloured by
facility energy per generated token, marking the configurations that meet the TTFT / TPOT SLO.

    .venv/bin/python experiments/llm_serving_sweep.py experiments/llm_serving_sweep.toml --out out/llm-serving-sweep
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from jobs.cachedirs import atomic_output, atomic_write_text  # noqa: E402
from scheduler_sim.app.config import load_config, read_toml  # noqa: E402  (after the path: runs as a script from a checkout)
from scheduler_sim.app.runner import run_one  # noqa: E402


def pareto_front(x, y):
    """Indices of the points not dominated in (x, y), both maximised, sorted by x."""
    idx = sorted(range(len(x)), key=lambda i: (-x[i], -y[i]))
    front, best_y = [], float("-inf")
    for i in idx:
        if y[i] > best_y:
            front.append(i)
            best_y = y[i]
    return sorted(front, key=lambda i: x[i])


def main(argv=None) -> int:
    """Run the study, write results.csv and the Pareto plot."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("study")
    ap.add_argument("--out", default="out/llm-serving-sweep")
    ap.add_argument("--png", default=str(ROOT / "docs" / "img" / "llm_serving_pareto.png"))
    ap.add_argument("--replot", action="store_true", help="only redraw the plot from OUT/results.csv")
    a = ap.parse_args(argv)
    study_path = Path(a.study).resolve()
    st = read_toml(study_path, "study file")
    base = load_config(study_path.parent / st["base_config"])
    out = Path(a.out)
    if a.replot:
        with open(out / "results.csv") as fh:
            rows = [{k: (v if k == "name" else float(v)) for k, v in r.items()} for r in csv.DictReader(fh)]
        for r in rows:
            for k in ("tp", "replicas", "max_num_seqs"):
                r[k] = int(r[k])
        plot(rows, st, Path(a.png), base)
        return 0
    (out / "deployments").mkdir(parents=True, exist_ok=True)
    rows = []
    for tp in st["tensor_parallel"]:
        for rep in st["replicas"]:
            if tp * rep > st["max_gpus"]:
                continue
            dep = out / "deployments" / f"tp{tp}x{rep}.toml"
            atomic_write_text(dep, f'name = "{st["model"]}_{st["gpu"]}_tp{tp}x{rep}"\nmodel = "{st["model"]}"\n'
                              f'gpu = "{st["gpu"]}"\nreplicas = {rep}\ntensor_parallel = {tp}\n', what="deployment")
            for mns in st["max_num_seqs"]:
                name = f"tp{tp}x{rep}_seqs{mns}"
                cfg = base.with_overrides({"name": name, "serving.deployment": str(dep.resolve()),
                                           "serving.max_num_seqs": mns, "output.progress": False})
                w = time.perf_counter()
                s = run_one(cfg, out / f"{name}.h5").summary
                row = {"name": name, "tp": tp, "replicas": rep, "gpus": tp * rep, "max_num_seqs": mns,
                       **{k[len("serving_"):]: v for k, v in s.items() if k.startswith("serving_")},
                       "PUE": s["PUE"], "wall_s": time.perf_counter() - w}
                rows.append(row)
                print(f"{name:18s} tok/s/GPU {row['tokens_per_s_per_gpu']:7.1f}  tok/s/user "
                      f"{row['tokens_per_s_per_user']:6.1f}  SLO {100 * row['slo_attainment']:5.1f} %  "
                      f"facility {row['J_per_token_facility']:6.2f} J/token  ({row['wall_s']:.1f} s)", flush=True)
    with atomic_output(out / "results.csv", "w", newline="", what="results table") as fh:
        wr = csv.DictWriter(fh, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    plot(rows, st, Path(a.png), base)
    print(f"wrote {out / 'results.csv'} and {a.png}")
    return 0


def plot(rows, st, png: Path, base) -> None:
    """Pareto plot: x tokens/s/GPU, y tokens/s/user, colour facility J/token, filled = meets the SLO."""
    import matplotlib  # heavy: matplotlib is imported only when the plot is drawn
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [r["tokens_per_s_per_gpu"] for r in rows]
    y = [r["tokens_per_s_per_user"] for r in rows]
    c = [r["J_per_token_facility"] for r in rows]
    ok = [r["slo_attainment"] >= st["slo_attainment_target"] for r in rows]
    fig, ax = plt.subplots(figsize=(8.5, 6), dpi=120)
    vmin, vmax = min(c), max(c)
    for flag, marker in ((True, "o"), (False, "X")):
        sel = [i for i in range(len(rows)) if ok[i] == flag]
        sc = ax.scatter([x[i] for i in sel], [y[i] for i in sel], c=[c[i] for i in sel], cmap="viridis_r",
                        vmin=vmin, vmax=vmax, s=90, marker=marker, edgecolors="k", linewidths=0.6,
                        label=("meets SLO" if flag else "misses SLO") +
                        f" (>= {100 * st['slo_attainment_target']:.0f} % of requests with TTFT <= "
                        f"{base.serving.ttft_slo_s:g} s and TPOT <= {1e3 * base.serving.tpot_slo_s:g} ms)"
                        if flag else "misses SLO")
    front = pareto_front(x, y)
    ax.plot([x[i] for i in front], [y[i] for i in front], "k--", lw=1, label="Pareto front")
    groups: dict = {}  # configurations with (nearly) the same result share one label
    for i, r in enumerate(rows):
        g = groups.setdefault((round(x[i] / 3), round(y[i])), [x[i], y[i], set(), set()])
        g[2].add(f"TP{r['tp']}x{r['replicas']}")
        g[3].add(r["max_num_seqs"])
    for gx, gy, deps, seqs in groups.values():
        ax.annotate(f"{'/'.join(sorted(deps))}, seqs {'/'.join(str(v) for v in sorted(seqs))}", (gx, gy),
                    fontsize=7, xytext=(7, -10 if len(seqs) > 1 and gy > 35 else 5), textcoords="offset points")
    cb = fig.colorbar(sc, ax=ax)
    cb.set_label("facility energy per generated token [J] (IT x PUE)")
    ax.set_xlabel("throughput: generated tokens/s per GPU")
    ax.set_ylabel("interactivity: tokens/s per user (mean 1 / TPOT)")
    ax.set_title(f"{st['model']} on {st['gpu']}, Azure LLM conversation hour (19,366 requests)\n"
                 "TP degree x replicas x max_num_seqs; cooling FMU, Frontier-like facility", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="center right")
    fig.tight_layout()
    with atomic_output(png, what="figure") as fh:
        fig.savefig(fh, format=png.suffix[1:] or "png")


if __name__ == "__main__":
    sys.exit(main())
