"""Re-measure the engineer's table of issue 22 ("Where it stands", 10 rows) on the current plant, from run files.

    nice -n 10 .venv/bin/python benchmarks/plant_v5_table.py                      # every row (~7 week runs)
    nice -n 10 .venv/bin/python benchmarks/plant_v5_table.py --reuse --doc docs/validation.md

Each row of the issue's table (measured by a data-centre mechanical engineer on plant v4, 14-day windows,
Frontier-like and Theta-like, site weather of ../shared/data/weather) is measured again here on 7-day windows, each
from the HDF5 files of the ``hpctwin run`` commands printed in its row (written to ``out/plant_v5_targets/``, the
folder and the run labels of benchmarks/plant_v5_targets.py, whose helpers this script imports: with ``--reuse``
the week runs that script made are read, not run again), except two rows that need no run or no scheduler: the
switchgear loss is the system's sized ``SwitchgearSpec.loss_W`` at two loads, and the PUE floor runs the shipped
Frontier-like plant FMU with the cell stager, the dry-bulb and the air side's heat through its Python API at a
constant IT load (``plant_v5_targets._weeks``, as that script's PUE sweep). The output is a Markdown table: what |
before (the issue's figure, quoted) | now | physically expected | command; ``--doc FILE`` replaces (or inserts) the
section "## Plant v5: the engineer's table re-measured" of FILE.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import h5py
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks import plant_v5_targets as T  # noqa: E402  (the run helpers, labels and folder of the targets)

SECTION = "## Plant v5: the engineer's table re-measured"
#: RAPS's idle power of Frontier [W] (DESIGN.md reference figures: idle ~7.3 MW, full ~28.2 MW).
IDLE_W = 7.3e6
FULL_W = 28.0e6
#: The January week of the PUE floor rows (days after 1 January), as the Helsinki supply week of the targets.
JANUARY_DAY = 14
#: Wet-bulb bins of the chiller COP row [degC] (upper edges; the last bin is open; the bins of docs/cooling.md).
WB_BINS_C = (10.0, 15.0, 20.0, 22.0, 24.0)


def _runs(ctx: T.Ctx) -> dict[str, Path]:
    """The week runs of the table (``hpctwin run``, 7 days each; labels as plant_v5_targets where it has them)."""
    w = T.WEATHER
    r = {"knoxville_july": T.knoxville_july(ctx)}
    r["phoenix_july"] = T.hpctwin_run(ctx, "frontier_phoenix_july", "--system", "frontier", "--weather",
                                      w / T.EPW["phoenix"], "--start-day", "182", "--days", "7")
    r["helsinki_january"] = T.hpctwin_run(ctx, "frontier_helsinki", "--system", "frontier", "--weather",
                                          w / T.EPW["helsinki"], "--start-day", str(JANUARY_DAY), "--days", "7")
    r["singapore_july"] = T.hpctwin_run(ctx, "frontier_singapore", "--system", "frontier", "--weather",
                                        w / T.EPW["singapore"], "--start-day", "181", "--days", "7")
    # the Theta-like system's own site is Chicago O'Hare (its weather is the default)
    r["theta_january"] = T.hpctwin_run(ctx, "theta_chicago_january", "--system", "theta", "--start-day",
                                       str(JANUARY_DAY), "--days", "7")
    r["theta_july"] = T.hpctwin_run(ctx, "theta_chicago_july", "--system", "theta", "--start-day", "182",
                                    "--days", "7")
    r["knoxville_july_fast"] = T.hpctwin_run(ctx, "frontier_knoxville_july_fast", "--system", "frontier",
                                             "--weather", w / T.EPW["knoxville"], "--start-day", "182", "--days",
                                             "7", "--cooling", "fast")
    return r


def _cmd(ctx: T.Ctx, *labels: str) -> str:
    return " ; ".join(ctx.runs[k][1] for k in labels)


def _fac(path: Path, *names: str) -> list[np.ndarray]:
    """Facility series of a run file, samples after its warm-up."""
    ys = T._series(path, *names)
    m = T._warm_mask(path, ys[0].shape[0])
    return [y[m] for y in ys]


def _cdu(path: Path, name: str) -> np.ndarray:
    """A per-CDU series of a run file, shape (samples after the warm-up, CDUs)."""
    with h5py.File(path, "r") as f:
        y = np.asarray(f[f"timeseries/cdu/{name}"][...], dtype=float)
    return y[T._warm_mask(path, y.shape[0])]


def _dt(path: Path) -> np.ndarray:
    with h5py.File(path, "r") as f:
        t = np.asarray(f["timeseries/time_s"][...], dtype=float)
    d = np.diff(t, append=t[-1] + (t[-1] - t[-2]))
    return d[T._warm_mask(path, d.size)]


def _system(path: Path) -> str:
    with h5py.File(path, "r") as f:
        return json.loads(f.attrs["config_json"])["system"]


def row_air(ctx: T.Ctx, r: dict) -> tuple:
    """Tower air used by the air-side balance / air the fans move; tower fans as a share of IT and of cooling."""
    out, labels = [], ("singapore_july", "theta_january", "knoxville_july", "helsinki_january")
    for k in labels:
        p = T._plant(T._system_plant(_system(r[k])))
        m, y, Pf, Pc, Pit = _fac(r[k], "m_flow_air", "y_fan", "P_fan_tower", "P_cooling_W", "P_it_W")
        ok = y > 0
        q = m[ok] / (y[ok] * p.m_air_nominal_kg_s)
        dt = _dt(r[k])
        E_f = float(np.sum(Pf * dt))
        out.append(f"{k.replace('_', ' ')}: {q.min():.9f}-{q.max():.9f} ({q.size} samples), fans "
                   f"{100 * E_f / np.sum(Pit * dt):.3f} % of IT, {100 * E_f / np.sum(Pc * dt):.0f} % of cooling")
    return ("tower air flow used by the air-side balance / air the fans move (7 d each; tower fans as a share of IT "
            "and of the liquid plant's power)",
            "1.1 (Singapore July) to 7.4 (Chicago January), above 1 in every sample; tower fans 0.015-1.4 % of IT, "
            "2-5 % of cooling energy",
            "; ".join(out), "<= 1 (plus natural draft through idle cells, if modelled and cited); ~73 % of cooling "
            "power in the fans at design (arXiv 2603.01198)", _cmd(ctx, *_labels(ctx, r, labels)))


def _labels(ctx: T.Ctx, r: dict, keys) -> list[str]:
    """plant_v5_targets run labels of the table's run keys."""
    inv = {str(ROOT / v[0]): k for k, v in ctx.runs.items()}
    return [inv[str(r[k])] for k in keys]


def row_winter(ctx: T.Ctx, r: dict) -> tuple:
    """Winter: facility supply and CDU secondary supply against their set points (Helsinki, Chicago January)."""
    parts = []
    for k in ("helsinki_january", "theta_january"):
        p = T._plant(T._system_plant(_system(r[k])))
        Tf, = _fac(r[k], "T_fac_sup")
        Ts = _cdu(r[k], "T_sec_sup")
        Tset_f, Tset_s = p.tower.T_fac_sup_set_K, p.cdu.T_sec_sup_set_K
        parts.append(f"{k.replace('_', ' ')}: facility {Tf.min() - 273.15:.2f}-{Tf.max() - 273.15:.2f} C (set "
                     f"{Tset_f - 273.15:.0f}; {100 * np.mean(np.abs(Tf - Tset_f) <= 0.5):.1f} % within 0.5 K), CDU "
                     f"secondary {Ts.min() - 273.15:.2f}-{Ts.max() - 273.15:.2f} C (set {Tset_s - 273.15:.0f}; "
                     f"{100 * np.mean(Ts > Tset_s + 1.0):.2f} % of CDU samples above set + 1 K)")
    return ("winter: facility supply / CDU secondary supply (7 d from day 14)",
            "9.4-13.9 C / 15.8 C against set points 29 / 32 C (no IHX bypass; CDU valve floor 0.2); load steps "
            "overshoot to 36.7 C, above 33 C for 3.1 % of January", "; ".join(parts),
            "held at set point within about 0.5 K", _cmd(ctx, *_labels(ctx, r, ("helsinki_january", "theta_january"))))


def row_pump_heat(ctx: T.Ctx, r: dict) -> tuple:
    """Pump shaft work into the water: pump heat / pump electrical energy and / heat from the racks."""
    parts = []
    for k in ("knoxville_july", "theta_july"):
        dt = _dt(r[k])
        Qp, Pf, Pt = _fac(r[k], "Q_flow_pump_heat", "P_pump_fac", "P_pump_tower")
        Ps = _cdu(r[k], "P_pump_sec").sum(axis=1)
        Qh = _cdu(r[k], "Q_flow_W").sum(axis=1)
        E_p = float(np.sum((Ps + Pf + Pt) * dt))
        parts.append(f"{k.replace('_', ' ')}: {np.sum(Qp * dt) / E_p:.3f} of the pumps' electrical energy, "
                     f"{100 * np.sum(Qp * dt) / np.sum(Qh * dt):.2f} % of the rack heat")
    return ("pump shaft work into the water it moves (7 d, July)", "never enters the water",
            "; ".join(parts), "~0.7 of pump electrical power becomes heat in its loop (~1.8 % of the heat on "
            "Frontier-like with plant v4's constant-flow CDU pumps)",
            _cmd(ctx, *_labels(ctx, r, ("knoxville_july", "theta_july"))))


def row_condenser(ctx: T.Ctx, r: dict) -> tuple:
    """Trim-chiller condenser heat: share of the tower's heat and the water balance that carries it."""
    parts = []
    for k in ("theta_july",):  # the Frontier-like plant has no trim chiller
        dt = _dt(r[k])
        Qc, Pc, Qt = _fac(r[k], "Q_flow_chiller", "P_chiller", "Q_flow_tower")
        E_cond, E_tow = float(np.sum((Qc + Pc) * dt)), float(np.sum(Qt * dt))
        # the water balance: heat in + pump heat + chiller power + air-side heat - rejected - stored (running
        # totals; constant when every heat path, the condenser's included, goes through the tower water)
        E = dict(zip(("E_heat_in", "E_pump_heat_out", "E_chiller_elec_out", "E_air_side_in", "E_tower_out",
                      "E_stored"), T._series(r[k], "E_heat_in", "E_pump_heat_out", "E_chiller_elec_out",
                                             "E_air_side_in", "E_tower_out", "E_stored")))
        D = (E["E_heat_in"] + E["E_pump_heat_out"] + E["E_chiller_elec_out"] + E["E_air_side_in"]
             - E["E_tower_out"] - E["E_stored"])
        bal = float(np.max(np.abs(D - D[0])) / E["E_heat_in"][-1])
        parts.append(f"{k.replace('_', ' ')}: chiller on in {100 * np.mean(Pc > 1.0):.1f} % of samples, condenser "
                     f"heat (Q + P) {100 * E_cond / E_tow:.2f} % of the towers' heat; water balance with it "
                     f"{bal:.1e}")
    return ("trim-chiller condenser heat (Theta-like, Chicago July, 7 d)", "bypasses the tower water",
            "; ".join(parts), "goes through the towers (or its own heat rejection)",
            _cmd(ctx, *_labels(ctx, r, ("theta_july",))))


def _bins(T_wb_K: np.ndarray) -> np.ndarray:
    return np.digitize(T_wb_K - 273.15, WB_BINS_C)


def _bin_name(b: int) -> str:
    e = WB_BINS_C
    return f"< {e[0]:g}" if b == 0 else (f">= {e[-1]:g}" if b == len(e) else f"{e[b - 1]:g}-{e[b]:g}")


def row_cop(ctx: T.Ctx, r: dict) -> tuple:
    """Chiller COP by wet-bulb bin (energy-weighted in each bin), trim chiller and air side, auxiliaries counted."""
    keys = ("theta_july", "knoxville_july", "phoenix_july", "singapore_july", "theta_january", "helsinki_january")
    trim: dict[int, list[float]] = {}
    air: dict[int, list[float]] = {}
    from power import load_system

    eco = [0.0, 0.0, 0, 0]  # economiser samples: coil load, pump power (no compressor), samples, all samples
    for k in keys:
        dt = _dt(r[k])
        wb, Qc, Pc, Qa, Pa, Pch = _fac(r[k], "T_wb_K", "Q_flow_chiller", "P_chiller", "Q_air_W", "P_air_fan_W",
                                       "P_air_chiller_W")
        wb_eco = load_system(_system(r[k])).facility.air_side.economiser_wb_max_K
        is_eco = wb <= wb_eco if wb_eco is not None else np.zeros(wb.shape, dtype=bool)
        eco[0] += float(np.sum(((Qa + Pa) * dt)[is_eco]))
        eco[1] += float(np.sum((Pch * dt)[is_eco]))
        eco[2] += int(is_eco.sum())
        eco[3] += int(wb.size)
        b = _bins(wb)
        for i in np.unique(b):
            m = b == i
            on = m & (Pc > 1.0)
            if on.any():
                trim.setdefault(int(i), [0.0, 0.0])
                trim[int(i)][0] += float(np.sum(Qc[on] * dt[on]))
                trim[int(i)][1] += float(np.sum(Pc[on] * dt[on]))
            comp = m & ~is_eco
            if comp.any():
                air.setdefault(int(i), [0.0, 0.0])
                air[int(i)][0] += float(np.sum((Qa + Pa)[comp] * dt[comp]))
                air[int(i)][1] += float(np.sum(Pch[comp] * dt[comp]))
    t = ", ".join(f"{_bin_name(i)} C {v[0] / v[1]:.2f}" for i, v in sorted(trim.items()) if v[1] > 0) or "never on"
    a = ", ".join(f"{_bin_name(i)} C {v[0] / v[1]:.2f}" for i, v in sorted(air.items()) if v[1] > 0)
    a += (f"; economiser ({100 * eco[2] / eco[3]:.0f} % of the samples, pumps only): coil load / pump power "
          f"{eco[0] / eco[1]:.1f}" if eco[1] > 0 else "")
    return ("chiller COP by wet-bulb bin, trim (heat removed / compressor + condenser pump) and air side (coil load "
            "/ compressor + chilled-water and condenser pumps), over the six weeks of this table",
            "10.0 (the cap) in every wet-bulb bin, trim and air side; no evaporator approach; air side without "
            "chilled-water or condenser pumps", f"trim: {t}; air side: {a}",
            "part-load and lift-dependent (e.g. EnergyPlus Chiller:Electric:EIR curves), auxiliaries counted",
            _cmd(ctx, *_labels(ctx, r, keys)))


def row_staging(ctx: T.Ctx, r: dict) -> tuple:
    """Tower cell switches a day (Knoxville July week), as plant_v5_targets counts them."""
    rows = T.staging_rows(ctx)
    return ("tower cell switches a day (Frontier-like, Knoxville July, 7 d)", "48 switches a day (Knoxville July), "
            "no hysteresis or minimum run time", rows[0].value, "a few a day", rows[0].command)


def row_wue(ctx: T.Ctx, r: dict) -> tuple:
    """WUE Phoenix July against Knoxville July (Frontier-like)."""
    ph, kx = (T._summary(r[k])["WUE_L_per_kWh"] for k in ("phoenix_july", "knoxville_july"))
    return ("WUE Phoenix July vs Knoxville July (Frontier-like, 7 d from day 182)",
            "no dry-bulb: Phoenix July equals Knoxville July (1.32 L/kWh)",
            f"Phoenix {ph:.3f}, Knoxville {kx:.3f} L/kWh: ratio {ph / kx:.3f}",
            "evaporation from the air-side enthalpy change with dry-bulb and humidity (Phoenix July 16-28 % above "
            "the v4 figure)", _cmd(ctx, *_labels(ctx, r, ("phoenix_july", "knoxville_july"))))


def row_switchgear(ctx: T.Ctx, r: dict) -> tuple:
    """Switchgear loss per W of throughput at part load and at peak (the sized Frontier-like system)."""
    from power import load_system
    from power.sizing import sized_facility

    spec = sized_facility(load_system("frontier"))
    sg = spec.switchgear
    rated = float(sg.rated_W)  # sized: the design load of the electrical chain
    pts = (IDLE_W, 0.5 * rated, rated)
    txt = ", ".join(f"{P / 1e6:.1f} MW {100 * float(sg.loss_W(P)) / P:.3f} %" for P in pts)
    Pit, Psg = _fac(r["knoxville_july"], "P_it_W", "P_switchgear_loss_W")
    return ("switchgear loss / throughput at part load and at peak (Frontier-like, sized system; rating "
            f"{rated / 1e6:.1f} MW)", "linear in throughput", f"{txt}; in the Knoxville July run "
            f"{100 * float(np.min(Psg / Pit)):.3f}-{100 * float(np.max(Psg / Pit)):.3f} % of IT "
            f"({Pit.min() / 1e6:.1f}-{Pit.max() / 1e6:.1f} MW)",
            "I2R (quadratic) plus no-load: below a linear loss at part load, above it at peak (the v4 linear form "
            "was 0.5 % of throughput)",
            "(power.facility.SwitchgearSpec.loss_W of power.sizing.sized_facility(load_system('frontier'))) ; "
            + ctx.runs[_labels(ctx, r, ("knoxville_july",))[0]][1])


def row_floor(ctx: T.Ctx, r: dict) -> tuple:
    """PUE floor: 28 MW in a January week and idle (7.3 MW), the Frontier-like FMU with stager and air side."""
    shown = (f"(in benchmarks/plant_v5_table.py: plant_v5_targets._weeks('frontier', ({JANUARY_DAY},), "
             f"P_it_W={FULL_W:.3g} and {IDLE_W:.3g}, fmu=True))")
    d = _case_floor(ctx)
    full, idle = d["full"], d["idle"]
    return ("PUE floor: facility PUE at 28 MW and at idle (7.3 MW), Frontier-like, Knoxville January week from day "
            f"{JANUARY_DAY} (FMU, stager, dry-bulb, air-side heat)",
            "never below 1.0375 (28 MW, January); 1.069 at idle; fixed CDU pumps (8,473 W each at every load)",
            f"28 MW: {full['PUE']:.4f} (plant alone {full['PUE_liquid_plant']:.4f}); idle: {idle['PUE']:.4f} "
            f"(plant alone {idle['PUE_liquid_plant']:.4f})",
            "Frontier publishes 1.03-1.06 (boundary: section \"What Frontier's published 1.03-1.06 counts\")", shown)


def _case_floor(ctx: T.Ctx) -> dict:
    """Run (or with --reuse read) the two FMU weeks of the PUE floor row."""
    js = ROOT / ctx.out / "table_floor.json"
    if ctx.reuse and js.is_file():
        return json.loads(js.read_text())
    t = time.perf_counter()
    d = {"full": T._weeks("frontier", (JANUARY_DAY,), P_it_W=FULL_W, fmu=True),
         "idle": T._weeks("frontier", (JANUARY_DAY,), P_it_W=IDLE_W, fmu=True)}
    js.write_text(json.dumps(d))
    with ctx.log.open("a") as fh:
        fh.write(f"$ plant_v5_table floor case   ({time.perf_counter() - t:.0f} s)\n")
    return d


def row_fast(ctx: T.Ctx, r: dict) -> tuple:
    """Fast plant against the FMU on the same week: peak CDU supply, peak tower-fan power, energy, PUE."""
    fmu, fast = r["knoxville_july"], r["knoxville_july_fast"]
    Tm, Tf = _cdu(fmu, "T_sec_sup").max(axis=1), _cdu(fast, "T_sec_sup").max(axis=1)  # warmest CDU per sample
    Ts_m, Ts_f = Tm.max(), Tf.max()
    T_lim = T._plant("frontier").cdu.T_sec_sup_set_K + 1.0
    (Pf_m,), (Pf_f,) = _fac(fmu, "P_fan_tower"), _fac(fast, "P_fan_tower")
    sm, sf = T._summary(fmu), T._summary(fast)
    with h5py.File(fast, "r") as f:
        noted = {k: f["summary"].attrs[k] for k in f["summary"].attrs if "fast" in k.lower()}
    extra = (" (run summary: " + ", ".join(f"{k} {float(v):.3g}" for k, v in sorted(noted.items())) + ")"
             if noted else "")
    # the run's own check (printed in its summary, item 9; the command output is in the log)
    log = ctx.log.read_text() if ctx.log.is_file() else ""
    k = log.find("fast plant vs FMU", log.find("frontier_knoxville_july_fast.h5 --quiet"))
    if k >= 0:
        line = "; ".join(x.strip() for x in log[k:].split("\n", 2)[:2]).split("fast plant vs FMU", 1)[1]
        extra += "; the run summary's own check: " + " ".join(line.split())
    return ("fast plant (`--cooling fast`) against the FMU, Frontier-like, Knoxville July week",
            "energy within 3e-4, PUE 7.5e-6; but peak supply 32.0 C vs FMU 34.2 C, fan peaks +23 %",
            f"peak CDU supply {Ts_f - 273.15:.2f} C vs FMU {Ts_m - 273.15:.2f} C (warmest CDU above "
            f"{T_lim - 273.15:.0f} C in {int((Tf > T_lim).sum())} vs {int((Tm > T_lim).sum())} of {Tm.size} samples); "
            "tower-fan peak "
            f"{100 * (Pf_f.max() / Pf_m.max() - 1):+.1f} %; PUE {sf['PUE']:.5f} vs {sm['PUE']:.5f} "
            f"({sf['PUE'] - sm['PUE']:+.1e}){extra}", "-",
            _cmd(ctx, *_labels(ctx, r, ("knoxville_july_fast", "knoxville_july"))))


ROWS = (row_air, row_winter, row_pump_heat, row_condenser, row_cop, row_staging, row_wue, row_switchgear,
        row_floor, row_fast)


def table(rows: list[tuple]) -> list[str]:
    """Markdown lines of the table.

    Parameters
    ----------
    rows : list of tuple
        (what, before, now, expected, command) per row.

    Returns
    -------
    list of str
        The table's lines.
    """
    out = ["| what | before (issue 22, plant v4) | now | physically expected | command |", "|---|---|---|---|---|"]
    return out + [f"| {w} | {b} | {n} | {e} | `{c}` |" for w, b, n, e, c in rows]


def main(argv: list[str] | None = None) -> int:
    """Measure every row and print the table (module docstring).

    Parameters
    ----------
    argv : list[str] | None
        Command-line arguments (None: ``sys.argv``).

    Returns
    -------
    int
        Exit status.
    """
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reuse", action="store_true", help="read existing run files in out/plant_v5_targets")
    ap.add_argument("--doc", metavar="FILE", help=f"replace (or insert) the section '{SECTION}' in FILE")
    a = ap.parse_args(argv)
    out = ROOT / T.OUT
    out.mkdir(parents=True, exist_ok=True)
    ctx = T.Ctx(quick=False, reuse=a.reuse, fmu_years=False, out=T.OUT, log=out / "plant_v5_table.log", runs={})
    if not a.reuse:
        ctx.log.write_text("")
    t0 = time.perf_counter()
    runs = _runs(ctx)
    rows = []
    for fn in ROWS:
        rows.append(fn(ctx, runs))
        print(f"{rows[-1][0]}: {rows[-1][2]}", flush=True)
    wall = time.perf_counter() - t0
    lines = table(rows)
    print("\n" + "\n".join(lines))
    if a.doc:
        text = "\n".join([SECTION, "", f"Measured by `nice -n 10 .venv/bin/python benchmarks/plant_v5_table.py"
                          f"{' --reuse' if a.reuse else ''} --doc {a.doc}` at commit {T._commit()} (simulator, plant "
                          f"and power code of commit {T._code_commit()}; its runs took "
                          f"{T._logged_wall_s(ctx.log) / 60:.0f} min of wall time on 2 cores shared by 8 sessions). "
                          "The issue's \"Where it stands\" table "
                          "(plant v4, measured by a data-centre mechanical engineer on 14-day windows) row by row: "
                          "the issue's figure quoted, the figure now from the run files of the command in the row "
                          "(7-day windows; `--reuse` reads the runs of benchmarks/plant_v5_targets.py where it has "
                          "the same label).", ""] + lines) + "\n"
        T.write_doc(Path(a.doc), text, before="## Dry coolers and the hybrid (issue 22 item 6)", section=SECTION)
    print(f"{wall / 60:.1f} min; log {ctx.log}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
