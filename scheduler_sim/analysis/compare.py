"""Run-vs-run explanation: why B's facility energy and PUE differ from A's, link by link.

The causal chain is cut into four links whose contributions add up *exactly* to the total change
(``Delta X = X_B - X_A``):

============================  ===================================================================================
link                          what it holds
============================  ===================================================================================
``scheduling -> compute``     node DC + rack overhead energy ``E_compute`` (what the scheduler and the workload
                              make the nodes draw, idle nodes included)
``conversion losses``         SIVOC / VRM + rectifier losses ``E_loss``
``cooling: heat load``        cooling energy change explained by the change in CDU heat ``H``
``cooling: plant efficiency`` cooling energy change explained by the cooling energy per joule of heat
                              ``c = E_cooling / H`` (weather, plant parameters, part-load behaviour)
============================  ===================================================================================

Facility energy (J), with ``E_facility = E_compute + E_loss + E_cooling`` and ``E_cooling = H c`` (here
``E_cooling`` is every overhead beyond IT: liquid plant, air side, electrical-chain losses and lighting)::

    Delta E_facility = Delta E_compute + Delta E_loss + L(C_A, C_B) ln(H_B / H_A) + L(C_A, C_B) ln(c_B / c_A)

PUE (dimensionless), with ``r = PUE - 1 = E_cooling / E_IT = (H / E_IT) c`` and ``E_IT = E_compute + E_loss``::

    Delta PUE = L(r_A, r_B) [ ln(H_B / H_A) + ln(c_B / c_A) - ln(IT_B / IT_A) ]

where the IT term ``-L(r_A, r_B) ln(IT_B / IT_A)`` (more IT energy dilutes PUE) is split between
``scheduling -> compute`` and ``conversion losses`` in proportion to ``Delta E_compute`` and ``Delta E_loss``.
``L(x, y) = (y - x) / (ln y - ln x)`` (``L(x, x) = x``) is the logarithmic mean, which makes the log
decomposition exact (LMDI-I: Ang, "The LMDI approach to decomposition analysis", Energy Policy 33, 2005). Each
term has the sign of the change in its factor. ``compare(A, A)`` is all zeros. When a run has no cooling energy,
the whole cooling change is put on the plant-efficiency link.

Cost and emissions (runs with grid signals, ``/grid``): with ``C = E s`` (``E`` facility energy, ``s = C / E`` the
energy-weighted mean carbon intensity or price), the change splits exactly (two-factor Shapley form, which also
holds for negative prices) as ``Delta C = s_bar Delta E + E_bar Delta s`` (bars: means of A and B). The energy
term is shared over the four energy links above in proportion to their ``Delta E_facility`` contributions; the
intensity term is split, when both runs share a time grid, with the counterfactual ``s_AB`` = A's power priced at
B's signal (``sum_k w_B,k P_A,k / sum_k P_A,k``) into ``scheduling: timing`` (``E_bar (s_B - s_AB)``: when the
schedule drew its power) and ``grid signal`` (``E_bar (s_AB - s_A)``: the signal itself changed). Same signal in
both runs -> the grid-signal link is 0. The six links sum to ``Delta C`` exactly (:data:`GRID_LINKS`).

Besides the links the comparison lists the jobs (matched by ``job_id``; attributed facility energy from
:mod:`scheduler_sim.analysis.attribution`) and the periods (bins of ``period_s`` on the common time grid) that change most.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..io.hdf5 import DamagedFileError, SchemaError, check_output, describe_unreadable
from .attribution import load_result, read_attribution

__all__ = ["Comparison", "compare", "LINKS", "GRID_LINKS", "log_mean", "decompose_grid"]

#: The links of the chain, in causal order.
LINKS = ("scheduling -> compute", "conversion losses", "cooling: heat load", "cooling: plant efficiency")
#: The links of a cost / CO2 change: the energy links, then when the energy was drawn, then the signal itself.
GRID_LINKS = LINKS + ("scheduling: timing", "grid signal")


def log_mean(x: float, y: float) -> float:
    """Logarithmic mean ``(y - x) / (ln y - ln x)``, ``x`` when ``x == y`` (both > 0)."""
    d = math.log(y) - math.log(x)
    if x == y or d == 0.0:  # equal, or so close that their logarithms round to the same value
        return float(x)
    return float((y - x) / d)


@dataclass
class Comparison:
    """Result of :func:`compare` (SI: J, s; PUE dimensionless).

    Attributes
    ----------
    a, b : str
        The two run files.
    totals : pandas.DataFrame
        Rows ``E_compute_J, E_loss_J, E_heat_J, E_cooling_J, E_it_J, E_facility_J, c_cooling_per_heat, PUE``;
        columns ``A``, ``B``, ``delta``.
    energy : pandas.Series
        Contribution of each link to ``Delta E_facility`` [J] (index :data:`LINKS`); sums to it exactly.
    pue : pandas.Series
        Contribution of each link to ``Delta PUE`` [1]; sums to it exactly.
    context : dict
        Scheduling figures behind the first link: change in job / idle node DC energy [J], mean wait [s],
        utilisation [1], makespan [s], jobs matched / only in A / only in B.
    top_jobs, top_periods : pandas.DataFrame
        Jobs and periods with the largest absolute change in attributed facility energy.
    notes : list of str
        Caveats (different time grids, unmatched jobs ...).
    grid : dict
        Cost / CO2 decomposition per grid signal both runs carry.
    file_warnings : list of str
        From the check of each file (:func:`scheduler_sim.io.hdf5.check_output`): a partial run, a file read
        unverified. Printed first, before anything else.
    partial : list of str
        ``"A"`` and / or ``"B"`` when that file is a partial run (``complete = false``).
    """

    a: str
    b: str
    totals: pd.DataFrame
    energy: pd.Series
    pue: pd.Series
    context: dict
    top_jobs: pd.DataFrame
    top_periods: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    grid: dict = field(default_factory=dict)
    file_warnings: list[str] = field(default_factory=list)
    partial: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-ready dictionary of the comparison."""
        return {
            "a": self.a, "b": self.b,
            "totals": {r: {c: float(v) for c, v in row.items()} for r, row in self.totals.iterrows()},
            "energy_links_J": {k: float(v) for k, v in self.energy.items()},
            "pue_links": {k: float(v) for k, v in self.pue.items()},
            "context": {k: float(v) for k, v in self.context.items()},
            "top_jobs": json.loads(self.top_jobs.to_json(orient="records")),
            "top_periods": json.loads(self.top_periods.to_json(orient="records")),
            "notes": self.notes,
            "file_warnings": self.file_warnings, "partial": self.partial,
            "grid": {k: {"A": v["A"], "B": v["B"], "unit": v["unit"],
                         "links": {n: float(x) for n, x in v["links"].items()}} for k, v in self.grid.items()},
        }

    def format(self) -> str:
        """Human-readable explanation (MWh, hours, days)."""
        mwh = 3.6e9
        t = self.totals
        dE = t.loc["E_facility_J", "delta"]
        dP = t.loc["PUE", "delta"]
        def p(x: float, fmt: str) -> str:
            return "n/a" if not np.isfinite(x) else format(x, fmt)

        lines = [f"A: {self.a}", f"B: {self.b}", "",
                 f"facility energy  A {t.loc['E_facility_J', 'A'] / mwh:,.3f} MWh   B {t.loc['E_facility_J', 'B'] / mwh:,.3f}"
                 f" MWh   change {dE / mwh:+,.4f} MWh",
                 f"PUE              A {p(t.loc['PUE', 'A'], '.5f'):>7s}        B {p(t.loc['PUE', 'B'], '.5f'):>7s}        "
                 f"change {p(dP, '+.6f')}",
                 "", f"{'link (causal order)':30s} {'facility energy':>18s} {'share':>8s} {'PUE':>12s}"]
        for k in LINKS:
            share = self.energy[k] / dE * 100 if dE != 0 else float("nan")
            lines.append(f"{k:30s} {self.energy[k] / mwh:+15.4f} MWh {share:7.1f}% {p(self.pue[k], '+12.6f'):>12s}")
        lines.append(f"{'total':30s} {self.energy.sum() / mwh:+15.4f} MWh {'':8s} "
                     f"{p(self.pue.sum(skipna=False), '+12.6f'):>12s}")
        for kind, g in self.grid.items():
            dC = g["B"] - g["A"]
            u = g["unit"]
            lines += ["", f"{'CO2 (facility)' if kind == 'carbon' else 'energy cost (facility)'}  A {g['A']:,.2f} {u}"
                          f"   B {g['B']:,.2f} {u}   change {dC:+,.3f} {u}  (mean signal A {g['mean_A']:.2f}, "
                          f"B {g['mean_B']:.2f} {g['mean_unit']})",
                      f"{'link (causal order)':30s} {'change':>18s} {'share':>8s}"]
            for k in GRID_LINKS:
                share = g["links"][k] / dC * 100 if dC != 0 else float("nan")
                lines.append(f"{k:30s} {g['links'][k]:+15.3f} {u:3s} {share:7.1f}%")
            lines.append(f"{'total':30s} {g['links'].sum():+15.3f} {u:3s}")
        c = self.context
        lines += ["", "scheduling context (B - A):",
                  f"  job node DC energy {c['delta_E_job_node_dc_J'] / mwh:+,.3f} MWh, idle node DC energy "
                  f"{c['delta_E_idle_node_dc_J'] / mwh:+,.3f} MWh",
                  f"  mean wait {c['delta_mean_wait_s'] / 3600:+.2f} h, utilisation {c['delta_utilisation'] * 100:+.2f} "
                  f"points, makespan {c['delta_makespan_s'] / 86400:+.3f} days",
                  f"  jobs matched {int(c['jobs_matched'])}, only in A {int(c['jobs_only_a'])}, only in B "
                  f"{int(c['jobs_only_b'])}"]
        if len(self.top_periods):
            lines += ["", "periods that changed most (facility energy, MWh):"]
            for _, r in self.top_periods.iterrows():
                lines.append(f"  day {r['start_s'] / 86400:8.2f} .. {r['end_s'] / 86400:8.2f}: "
                             f"{r['delta_E_facility_J'] / mwh:+.4f}"
                             f" (IT {r['delta_E_it_J'] / mwh:+.4f}, cooling {r['delta_E_cooling_J'] / mwh:+.4f})")
        if len(self.top_jobs):
            lines += ["", "jobs that changed most (attributed facility energy, MWh; start shift, hours):"]
            for _, r in self.top_jobs.iterrows():
                lines.append(f"  job {int(r['job_id']):>8d} ({int(r['nodes'])} nodes): {r['delta_E_facility_J'] / mwh:+.4f}"
                             f"  start {r['delta_start_s'] / 3600:+.2f} h, wait {r['delta_wait_s'] / 3600:+.2f} h")
        return "\n".join(list(self.file_warnings) + [f"WARNING: {n}" for n in self.notes] + lines)


def _totals(res, att) -> dict[str, float]:
    T = res.totals
    comp = T["E_node_dc_J"] + T["E_rack_overhead_J"]
    loss = T["E_sivoc_loss_J"] + T["E_rectifier_loss_J"]
    it = T["E_it_J"]
    # every overhead beyond IT: liquid plant, air side, electrical-chain losses, lighting (0.0 when not modelled)
    cool = (T.get("E_cooling_J", 0.0) + T.get("E_air_side_J", 0.0) + T.get("E_electrical_loss_J", 0.0)
            + T.get("E_lighting_J", 0.0))
    heat = T["E_cdu_heat_J"]
    return {"E_compute_J": comp, "E_loss_J": loss, "E_heat_J": heat, "E_cooling_J": cool, "E_it_J": it,
            "E_facility_J": T["E_facility_J"], "c_cooling_per_heat": cool / heat if heat > 0 else 0.0,
            "PUE": T["E_facility_J"] / it if it > 0 and _cooled(res) else float("nan")}


def _cooled(res) -> bool:
    """Whether the run modelled a cooling plant (root attribute ``cooling_modelled``; else a wet-bulb series)."""
    v = res.attrs.get("cooling_modelled")
    return bool(v) if v is not None else "T_wb_K" in res.facility


def decompose(A: dict[str, float], B: dict[str, float]) -> tuple[pd.Series, pd.Series]:
    """Link contributions to the change in facility energy [J] and in PUE [1] (formulas: module docstring).

    Parameters
    ----------
    A : dict[str, float]
        Totals of run A: ``E_compute_J``, ``E_loss_J``, ``E_heat_J``, ``E_cooling_J``, ``E_it_J`` [J].
    B : dict[str, float]
        The same totals of run B [J].

    Returns
    -------
    (pandas.Series, pandas.Series)
        Contributions indexed by :data:`LINKS`; they sum to ``Delta E_facility`` and ``Delta PUE``.
    """
    dcomp = B["E_compute_J"] - A["E_compute_J"]
    dloss = B["E_loss_J"] - A["E_loss_J"]
    CA, CB, HA, HB = A["E_cooling_J"], B["E_cooling_J"], A["E_heat_J"], B["E_heat_J"]
    if CA > 0 and CB > 0 and HA > 0 and HB > 0:
        Lc = log_mean(CA, CB)
        heat_E = Lc * math.log(HB / HA)
        eff_E = (CB - CA) - heat_E if CA != CB else Lc * math.log((CB / HB) / (CA / HA))
        # eff_E computed as the remainder keeps the sum exact to round-off; it equals Lc ln(c_B / c_A)
        rA, rB = CA / A["E_it_J"], CB / B["E_it_J"]
        Lr = log_mean(rA, rB)
        ln_it = math.log(B["E_it_J"] / A["E_it_J"])
        heat_P = Lr * math.log(HB / HA)
        it_P = -Lr * ln_it
        eff_P = (rB - rA) - heat_P - it_P
    else:
        heat_E, eff_E = 0.0, CB - CA
        rA = CA / A["E_it_J"] if A["E_it_J"] > 0 else 0.0
        rB = CB / B["E_it_J"] if B["E_it_J"] > 0 else 0.0
        heat_P, it_P, eff_P = 0.0, 0.0, rB - rA
    dit = dcomp + dloss
    w_comp = dcomp / dit if dit != 0 else 0.5
    energy = pd.Series([dcomp, dloss, heat_E, eff_E], index=list(LINKS), name="delta_E_facility_J")
    pue = pd.Series([it_P * w_comp, it_P * (1.0 - w_comp), heat_P, eff_P], index=list(LINKS), name="delta_PUE")
    return energy, pue


def decompose_grid(C_A: float, C_B: float, E_A: float, E_B: float, energy: pd.Series,
                   s_AB: float | None) -> pd.Series:
    """Link contributions to a change in cost or emissions (formulas: module docstring); they sum to ``C_B - C_A``.

    Parameters
    ----------
    C_A : float
        Facility cost or emissions of run A [currency or kg].
    C_B : float
        The same for run B.
    E_A : float
        Facility energy of run A [J] (> 0).
    E_B : float
        The same for run B.
    energy : pd.Series
        The energy links' contributions to ``Delta E_facility`` [J] (:func:`decompose`).
    s_AB : float | None
        A's power at B's signal [per J]; None when the runs' time grids differ (the whole intensity change is then
        put on ``grid signal``).

    Returns
    -------
    pandas.Series
        Indexed by :data:`GRID_LINKS`.
    """
    s_A, s_B = C_A / E_A, C_B / E_B
    e_term = 0.5 * (s_A + s_B) * (E_B - E_A)
    E_bar = 0.5 * (E_A + E_B)
    dE = float(energy.sum())
    shares = energy / dE if dE != 0 else pd.Series(0.25, index=energy.index)
    out = [e_term * float(shares[k]) for k in LINKS]
    if s_AB is None:
        timing, signal = 0.0, E_bar * (s_B - s_A)
    else:
        timing, signal = E_bar * (s_B - s_AB), E_bar * (s_AB - s_A)
    out += [timing, signal]
    res = pd.Series(out, index=list(GRID_LINKS), name="delta")
    # put the round-off of the product form on the timing link so the links sum to Delta C to the last bit
    res["scheduling: timing"] += (C_B - C_A) - float(res.sum())
    return res


def _grid(a, b, ra, rb, energy: pd.Series, notes: list[str]) -> dict:
    """Cost / CO2 decomposition for each signal both runs carry (empty when either has no ``/grid``)."""
    from ..io.grid import read_grid_group

    ga, gb = read_grid_group(a), read_grid_group(b)
    if ga is None or gb is None:
        if (ga is None) != (gb is None):
            notes.append("only one run has grid signals ([grid]): cost and CO2 are not compared")
        return {}
    out = {}
    for kind, p, sig_name in (("carbon", "co2_kg", "carbon_intensity_kg_per_J"), ("price", "cost", "price_per_J")):
        if f"{p}_facility" not in ga["totals"] or f"{p}_facility" not in gb["totals"]:
            continue
        CA, CB = ga["totals"][f"{p}_facility"], gb["totals"][f"{p}_facility"]
        EA, EB = ga["totals"]["E_facility_J"], gb["totals"]["E_facility_J"]
        wa, wb = ga["timeseries"][sig_name], gb["timeseries"][sig_name]
        s_AB = None
        ta, tb = np.asarray(ra.time_s, dtype=float), np.asarray(rb.time_s, dtype=float)
        if ta.size > 1 and tb.size > 1 and ta[0] == tb[0] and ta[1] - ta[0] == tb[1] - tb[0]:
            # B's signal where both runs have intervals; beyond B's end B's signal is unknown: use A's there
            pa = np.asarray(ra.facility["P_facility_W"], dtype=float)
            w = np.concatenate([wb[:pa.size], wa[wb.size:pa.size]])
            s_AB = float(np.sum(w * pa) / np.sum(pa)) if np.sum(pa) > 0 else None
        if s_AB is None:
            notes.append(f"{kind}: the runs' time grids differ; the whole change of the mean {kind} signal is put on "
                         f"'grid signal' (timing not separated)")
        if EA <= 0 or EB <= 0:
            continue
        links = decompose_grid(CA, CB, EA, EB, energy, s_AB)
        if kind == "carbon":
            out[kind] = {"A": CA / 1e3, "B": CB / 1e3, "unit": "t", "links": links / 1e3,
                         "mean_A": CA / EA * 3.6e9, "mean_B": CB / EB * 3.6e9, "mean_unit": "gCO2eq/kWh"}
        else:
            cur = str(ga["attrs"].get("currency", ""))
            out[kind] = {"A": CA, "B": CB, "unit": cur, "links": links, "mean_A": CA / EA * 3.6e9,
                         "mean_B": CB / EB * 3.6e9, "mean_unit": f"{cur}/MWh"}
    return out


def _periods(ra, rb, aa, ab, period_s: float, top: int, notes: list[str]) -> pd.DataFrame:
    cols = ["start_s", "end_s", "delta_E_facility_J", "delta_E_it_J", "delta_E_cooling_J"]
    ta, tb = np.asarray(ra.time_s), np.asarray(rb.time_s)
    dta = float(ta[1] - ta[0]) if ta.size > 1 else float("nan")
    dtb = float(tb[1] - tb[0]) if tb.size > 1 else float("nan")
    if not (dta == dtb and ta[0] == tb[0]):
        notes.append("the runs have different time grids (origin or interval); periods are not compared")
        return pd.DataFrame(columns=cols)
    n = max(ta.size, tb.size)

    def pad(x):
        return np.concatenate([x, np.zeros(n - x.size)])

    d_it = (pad(ab.timeseries["P_it_W"]) - pad(aa.timeseries["P_it_W"])) * dta
    d_cool = (pad(ab.timeseries["P_facility_W"] - ab.timeseries["P_it_W"])
              - pad(aa.timeseries["P_facility_W"] - aa.timeseries["P_it_W"])) * dta
    per = max(1, int(round(period_s / dta)))
    nb = math.ceil(n / per)
    idx = np.arange(n) // per
    it_b = np.bincount(idx, d_it, minlength=nb)
    cool_b = np.bincount(idx, d_cool, minlength=nb)
    start = ta[0] + np.arange(nb) * per * dta
    df = pd.DataFrame({"start_s": start, "end_s": start + per * dta, "delta_E_facility_J": it_b + cool_b,
                       "delta_E_it_J": it_b, "delta_E_cooling_J": cool_b})
    df = df.loc[df["delta_E_facility_J"] != 0]
    return df.reindex(df["delta_E_facility_J"].abs().sort_values(ascending=False).index).head(top).reset_index(drop=True)


def _jobs(ra, rb, aa, ab, top: int) -> tuple[pd.DataFrame, dict]:
    def frame(r, at):
        return pd.DataFrame({"job_id": r.jobs["job_id"].to_numpy(), "nodes": r.jobs["nodes"].to_numpy(),
                             "start": r.jobs["sim_start_s"].to_numpy(float), "wait": r.jobs["wait_s"].to_numpy(float),
                             "E_fac": at.jobs["E_facility_J"], "E_it": at.jobs["E_it_J"],
                             "E_cool": at.jobs["E_facility_J"] - at.jobs["E_it_J"]}).drop_duplicates("job_id").set_index("job_id")

    fa, fb = frame(ra, aa), frame(rb, ab)
    m = fa.add_suffix("_a").join(fb.add_suffix("_b"), how="outer")
    ctx = {"jobs_matched": float(len(fa.index.intersection(fb.index))),
           "jobs_only_a": float(len(fa.index.difference(fb.index))),
           "jobs_only_b": float(len(fb.index.difference(fa.index)))}
    out = pd.DataFrame({
        "job_id": m.index.to_numpy(), "nodes": m["nodes_a"].fillna(m["nodes_b"]).to_numpy(),
        "delta_E_facility_J": (m["E_fac_b"].fillna(0) - m["E_fac_a"].fillna(0)).to_numpy(),
        "delta_E_it_J": (m["E_it_b"].fillna(0) - m["E_it_a"].fillna(0)).to_numpy(),
        "delta_E_cooling_J": (m["E_cool_b"].fillna(0) - m["E_cool_a"].fillna(0)).to_numpy(),
        "delta_start_s": (m["start_b"] - m["start_a"]).to_numpy(),
        "delta_wait_s": (m["wait_b"] - m["wait_a"]).to_numpy(),
    })
    out = out.loc[out["delta_E_facility_J"] != 0]
    out = out.reindex(out["delta_E_facility_J"].abs().sort_values(ascending=False).index).head(top)
    return out.reset_index(drop=True), ctx


def compare(a: str | Path, b: str | Path, *, top: int = 10, period_s: float = 86400.0,  # noqa: DOC502
            allow_unverified: bool = False) -> Comparison:
    """Explain run B against run A (formulas: module docstring).

    Parameters
    ----------
    a : str | Path
        Run file A (schema 1.x; the attribution is computed when a file predates ``/attribution``).
    b : str | Path
        Run file B, compared against A.
    top : int
        How many jobs and periods to list.
    period_s : float
        Length of the periods compared [s] (default one day).
    allow_unverified : bool
        Accept a file without ``content_sha256`` (``--no-verify``), with a warning first.

    Returns
    -------
    Comparison

    Raises
    ------
    scheduler_sim.io.hdf5.SchemaError
        If a file is not a compatible run file.
    scheduler_sim.io.hdf5.DamagedFileError
        If a file is missing, not HDF5, unreadable, its shapes contradict each other or exceed memory, it has no
        ``content_sha256`` (without ``allow_unverified``) or does not match it (:func:`check_output`).
    """
    checks = []

    def read(p):
        checks.append(check_output(p, allow_unverified=allow_unverified))  # first: nothing is read before it
        try:
            return load_result(p, verify=False), read_attribution(p, verify=False)
        except (SchemaError, DamagedFileError):
            raise
        except Exception as exc:  # noqa: BLE001 - a damaged or foreign file fails in many ways; name the file
            raise DamagedFileError(f"{p}: {describe_unreadable(p, exc)}") from exc

    (ra, aa), (rb, ab) = read(a), read(b)
    TA, TB = _totals(ra, aa), _totals(rb, ab)
    totals = pd.DataFrame({"A": TA, "B": TB})
    totals["delta"] = totals["B"] - totals["A"]
    energy, pue = decompose(TA, TB)
    if not (math.isfinite(TA["PUE"]) and math.isfinite(TB["PUE"])):
        pue = pue * float("nan")  # a PUE change is undefined when either run has no facility model
    notes: list[str] = []
    for label, r in (("A", ra), ("B", rb)):
        if not _cooled(r):
            notes.append(f"run {label} modelled no cooling plant (cooling off): its facility is not modelled, its "
                         f"'facility energy' is IT energy only and its PUE is n/a")
    sa, sb = ra.attrs.get("system"), rb.attrs.get("system")
    if sa != sb:
        notes.append(f"the runs are on different systems ({sa} vs {sb}): the 'scheduling -> compute' link then "
                     f"mixes the machine change with the scheduling change")
    try:
        wa_, wb_ = (json.loads(r.config_json).get("trace", {}) for r in (ra, rb))
        ka = ("path", "window_start_days", "window_days")
        if any(wa_.get(k) != wb_.get(k) for k in ka):
            notes.append("the runs replay different traces or windows: they do not run the same jobs")
    except (ValueError, AttributeError):
        pass
    if abs(float(ra.totals.get("duration_s", 0)) - float(rb.totals.get("duration_s", 0))) > 0:
        notes.append(f"the runs last {ra.totals.get('duration_s', 0) / 86400:.2f} vs "
                     f"{rb.totals.get('duration_s', 0) / 86400:.2f} days: energies include different idle spans")
    top_jobs, jctx = _jobs(ra, rb, aa, ab, top)

    def job_dc(att):
        return float(np.sum(att.jobs["E_node_dc_J"]))

    def mean_wait(r):
        j = r.jobs
        w = j.loc[~j["prefilled"].to_numpy(bool), "wait_s"]
        return float(w.mean()) if len(w) else float("nan")

    ctx = {"delta_E_job_node_dc_J": job_dc(ab) - job_dc(aa),
           "delta_E_idle_node_dc_J": float(np.sum(ab.pseudo["E_node_dc_J"]) - np.sum(aa.pseudo["E_node_dc_J"])),
           "delta_mean_wait_s": mean_wait(rb) - mean_wait(ra),
           "delta_utilisation": rb.summary.get("utilisation", np.nan) - ra.summary.get("utilisation", np.nan),
           "delta_makespan_s": rb.summary.get("makespan_s", np.nan) - ra.summary.get("makespan_s", np.nan), **jctx}
    top_periods = _periods(ra, rb, aa, ab, period_s, top, notes)
    grid = _grid(a, b, ra, rb, energy, notes)
    return Comparison(a=str(a), b=str(b), totals=totals, energy=energy, pue=pue, context=ctx, top_jobs=top_jobs,
                      top_periods=top_periods, notes=notes, grid=grid,
                      file_warnings=[w for c in checks for w in c.warnings],
                      partial=[k for k, c in zip("AB", checks) if c.partial])
