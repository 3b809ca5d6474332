"""The site builder: a planner's own facility from a few numbers (``hpctwin site new`` / ``hpctwin site check``).

``site new`` writes two files into a folder: ``<NAME>.toml``, a system description of partitions (power/system.py,
docs/partitions.md), and ``<NAME>_plant.toml``, a cooling-plant description (cooling_fmu/plants/*.toml layout) that
the system names beside it. Every value carries a comment with its source or the assumption made.

Sizing (stated margins, today's plant model: cooling_fmu.modelica / cooling_fmu.quasisteady; plant v5's component
library will replace the template below when it lands):

1. **Racks and CDUs.** Each partition fills ``ceil(nodes / nodes_per_rack)`` racks, in order; ``racks_per_cdu``
   racks share a CDU (default: as many as keep a CDU's full-load heat within :data:`CDU_TARGET_W`).
2. **Design heat.** Full load = every node at utilisation 1 through the power chain; a CDU's design heat
   ``cdu.Q_flow_nominal_W`` is the largest CDU full-load heat x (1 + ``margin``) (default margin 10 %).
3. **Template scaling.** The plant is the shipped Theta-like plant (cooling_fmu/plants/theta.toml, sized for
   266.7 kW per CDU and 1.6 MW in total) scaled: every CDU flow, water mass and conductance by the ratio of CDU
   design heats (same temperatures and flows per W, so the same heat-exchanger effectiveness), the facility and
   tower-water loops by the ratio of total design heats; heads, efficiencies, set points and controller settings
   are the template's. Towers: one cell per :data:`CELL_W` of design heat (the template's 400 kW per cell), the
   template's Merkel number and per-cell fan power per W.
4. **Design day.** The plant's capacity at the site's 0.4 % design wet-bulb (:func:`cooling_fmu.weather.
   design_conditions`; capacity as :func:`cooling_fmu.sizing.plant_capacity`) must reach the full-load heat x
   (1 + margin): tower cells of the same size are added until it does (:func:`cooling_fmu.sizing.
   tower_cells_needed`); when cells alone cannot (the CDU heat exchangers limit), the CDU conductance and flows are
   raised by 25 % steps.

Topologies: ``towers`` (warm-water towers, no chiller), ``chiller`` (towers with the template's trim chiller, 40 %
of design heat), ``dry`` (a dry-cooler bank, no water) and ``hybrid`` (the bank with adiabatic pads), both sized by
:func:`cooling_fmu.sizing.size_dry_cooler` for all the heat they reject at the design dry-bulb; ``air`` is refused
(the plant always cools its CDUs with liquid; the air side is the system's ``[facility.air_side]``).
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from pathlib import Path

import numpy as np

from cooling_fmu.params import load_plant_params
from cooling_fmu.sizing import plant_capacity, tower_cells_needed
from cooling_fmu.weather import SITES, design_conditions, load_weather, resolve_weather_file
from power import PowerChain, System, node_power_w
from power.nodetypes import load_node_type
from power.sizing import sized_facility

__all__ = ["SiteSpec", "PartitionSpec", "parse_partition", "build_site", "check_site", "design_air_side_w",
           "CDU_TARGET_W", "CELL_W"]

#: Full-load heat a generated CDU serves at most when racks_per_cdu is not given [W]. ASSUMPTION: 1.2 MW, the
#: order of Frontier's CDUs (28.2 MW full IT / 25 CDUs = 1.13 MW; RAPS Frontier config).
CDU_TARGET_W = 1.2e6
#: Highest facility supply set point the site builder gives a dry or hybrid plant [K]: 45 C, the top of ASHRAE TC 9.9's
#: W45 liquid-cooling class (facility water supply up to 45 C; "Water-Cooled Servers", 2nd ed., as quoted in
#: ../shared/notes is not available: ASSUMPTION that the racks accept W45 water + 3 K).
DRY_SET_MAX_K = 318.15

#: Design heat per tower cell [W]: the template's 1.6 MW / 4 cells (cooling_fmu/plants/theta.toml, ASSUMPTION there).
CELL_W = 400e3
#: Merkel number of the template's bank of 400 kW cells at its ``LG_nominal`` (theta.toml's 4-cell bank as sized for
#: all 4 cells in session 8). Theta's own bank is now sized for 3 design cells + 1 standby together with its 1 MW
#: trim chiller (cooling_fmu.sizing.size_towers_and_chiller), which a generated plant does not have: the builder keeps
#: the cell it was calibrated with and chooses the cell count itself (module docstring, step 4).
CELL_NTU = 1.7164
#: The template plant and its design heats [W].
TEMPLATE = "theta"
_T_CDU_W, _T_TOTAL_W = 266.7e3, 6 * 266.7e3


@dataclasses.dataclass(frozen=True)
class PartitionSpec:
    """One partition of a new site: name, catalogue node type, node count, nodes per rack, rack limit [W]."""

    name: str
    node_type: str
    nodes: int
    nodes_per_rack: int | None = None
    rack_limit_W: float | None = None


def parse_partition(text: str) -> PartitionSpec:
    """``NAME=NODE_TYPE:COUNT[:NODES_PER_RACK[:RACK_KW]]`` -> :class:`PartitionSpec`.

    Parameters
    ----------
    text : str
        The option's value, e.g. ``gpu=a100-4gpu-epyc:1536:128:120``.

    Returns
    -------
    PartitionSpec
        The partition.

    Raises
    ------
    ValueError
        If the text does not have that form or a number is not a positive integer / number.
    """
    name, sep, rest = text.partition("=")
    parts = rest.split(":")
    if not sep or not name or len(parts) < 2 or len(parts) > 4:
        raise ValueError(f"--partition {text!r}: expected NAME=NODE_TYPE:COUNT[:NODES_PER_RACK[:RACK_KW]]")
    try:
        nodes = int(parts[1])
        npr = int(parts[2]) if len(parts) > 2 and parts[2] else None
        lim = float(parts[3]) * 1e3 if len(parts) > 3 and parts[3] else None
    except ValueError:
        raise ValueError(f"--partition {text!r}: COUNT and NODES_PER_RACK must be integers, RACK_KW a number") \
            from None
    if nodes < 1 or (npr is not None and npr < 1) or (lim is not None and not lim > 0):
        raise ValueError(f"--partition {text!r}: counts and the rack limit must be positive")
    return PartitionSpec(name, parts[0], nodes, npr, lim)


@dataclasses.dataclass(frozen=True)
class SiteSpec:
    """What ``hpctwin site new`` asks for (SI units inside).

    Attributes
    ----------
    name : str
        Site name (file names and the system's name).
    partitions : tuple of PartitionSpec
        Partitions, in rack order.
    cooling : str
        ``towers``, ``chiller``, ``dry`` or ``hybrid`` (``air`` is refused, module docstring).
    weather : str
        A shipped site (cooling_fmu.weather.SITES) or an EPW / TMY3 path.
    feed_W : float
        Electrical feed capacity [W].
    feed_units : int
        Feed units (transformers) making it up.
    redundancy : str
        ``N``, ``N+1`` or ``2N``.
    margin : float
        Sizing margin on the design heat (0.1 = 10 %).
    racks_per_cdu : int or None
        Racks per CDU (None: from :data:`CDU_TARGET_W`).
    rack_limit_W : float
        Default rack power limit [W] (a partition may set its own).
    """

    name: str
    partitions: tuple
    cooling: str = "towers"
    weather: str = "golden"
    feed_W: float = math.nan
    feed_units: int = 2
    redundancy: str = "N+1"
    margin: float = 0.10
    racks_per_cdu: int | None = None
    rack_limit_W: float = 80e3


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, int):
        return str(v)
    return f"{v:.6g}" if abs(v) < 1e5 else f"{v:.6e}"


def _kv(key: str, value, comment: str) -> str:
    return f"{key} = {_fmt(value)}".ljust(44) + f"# {comment}"


def _node_in_w(sysm_like: dict, node) -> float:
    """Rack-input power of one node at full load with the site's conversion chain (SIVOC then rectifier) [W]."""
    sv, rc = sysm_like["sivoc"], sysm_like["rectifier"]
    p = float(node_power_w(1.0, 1.0, node))
    return ((p + sv["P_fixed_W"]) / sv["eta"] + rc["P_fixed_W"] / rc["nodes_per_rectifier"]) / rc["eta"]


#: Conversion chain of a generated site: the Frontier fit (RAPS: SIVOC (P + 13 W) / 0.98, rectifier (P + 17 W) / 0.96
#: for 4 nodes), a modern rack-level 48-54 V DC supply.
_CHAIN = {"sivoc": {"P_fixed_W": 13.0, "eta": 0.98, "k_per_W": 0.0},
          "rectifier": {"P_fixed_W": 17.0, "eta": 0.96, "k_per_W": 0.0, "nodes_per_rectifier": 4}}


def _layout(spec: SiteSpec) -> tuple[list[dict], int, int, int]:
    """Partition tables with nodes_per_rack, and (n_cdus, racks_per_cdu, missing positions)."""
    rows, rack_heat = [], []
    for p in spec.partitions:
        nt = load_node_type(p.node_type)
        lim = p.rack_limit_W or spec.rack_limit_W
        per = _node_in_w(_CHAIN, nt)
        npr = p.nodes_per_rack or max(1, int(0.9 * lim // per))  # ASSUMPTION: 10 % below the limit at full load
        rows.append({"spec": p, "nodes_per_rack": npr, "rack_limit_W": lim, "node_in_W": per, "node": nt})
        rack_heat.append(min(npr, p.nodes) * per)
    n_racks = sum(-(-r["spec"].nodes // r["nodes_per_rack"]) for r in rows)
    rpc = spec.racks_per_cdu or max(1, int(CDU_TARGET_W // max(rack_heat)))
    rpc = min(rpc, n_racks)
    n_cdus = -(-n_racks // rpc)
    return rows, n_cdus, rpc, n_cdus * rpc - n_racks


def system_toml(spec: SiteSpec, plant_file: str) -> str:
    """The system description of a site (every value commented with its source or assumption).

    Parameters
    ----------
    spec : SiteSpec
        The site.
    plant_file : str
        File name of its plant description (beside the system file).

    Returns
    -------
    str
        TOML text.
    """
    rows, n_cdus, rpc, missing = _layout(spec)
    n_pos = n_cdus * rpc
    it_full = sum(r["spec"].nodes * r["node_in_W"] for r in rows)
    units = spec.feed_units
    # ASSUMPTION when not given: the firm feed (redundant unit out) carries 1.3 x full-load IT
    firm_share = {"N": 1.0, "2N": 0.5, "N+1": (units - 1) / units if units > 1 else 1.0}[spec.redundancy]
    feed = spec.feed_W if math.isfinite(spec.feed_W) else 1.3 * it_full / firm_share
    L = [f"# Site {spec.name}: generated by `hpctwin site new` (scheduler_sim/app/site.py). SI units.",
         "# Every value says where it comes from; ASSUMPTION marks an engineering choice to replace with site data.",
         _kv("name", spec.name, "site name (hpctwin site new NAME)"),
         _kv("description", f"{spec.name}: " + ", ".join(f"{r['spec'].name} {r['spec'].nodes} x "
                                                          f"{r['spec'].node_type}" for r in rows), "generated"),
         _kv("cores_per_node", int(rows[0]["node"].cores_per_node or 64),
             "of the first partition's node type (catalogue), else ASSUMPTION 64"),
         _kv("cooling_plant", plant_file, "the plant description written beside this file"),
         _kv("liquid_fraction", 0.95, "ASSUMPTION: 95 % of rack heat to liquid (direct liquid cooling; the rest to "
                                      "room air: PSUs, NICs, drives)"),
         _kv("default_cpu_util", 0.5, "ASSUMPTION for jobs with no recorded utilisation"),
         _kv("default_gpu_util", 0.5, "ASSUMPTION for jobs with no recorded utilisation"),
         "", "[site]",
         _kv("name", spec.name, "site"),
         _kv("weather", spec.weather, "typical-year weather of the site (--site)"),
         "", "[topology]",
         _kv("n_cdus", n_cdus, f"ceil(racks / racks_per_cdu) = ceil({n_pos - missing} / {rpc})"),
         _kv("rack_positions_per_cdu", rpc, "--racks-per-cdu" if spec.racks_per_cdu else
             f"CDU full-load heat at most {CDU_TARGET_W / 1e6:g} MW (ASSUMPTION, Frontier-class CDUs)"),
         _kv("missing_rack_positions", 0, "") .split(" = ")[0] + " = " + str(list(range(n_pos - missing, n_pos)))
         + "    # the last CDU's empty positions"]
    for r in rows:
        p = r["spec"]
        L += ["", "[[partition]]",
              _kv("name", p.name, "--partition"),
              _kv("node_type", p.node_type, f"catalogue: {r['node'].source[:90]}"),
              _kv("nodes", p.nodes, "--partition"),
              _kv("nodes_per_rack", r["nodes_per_rack"], "--partition" if p.nodes_per_rack else
                  f"ASSUMPTION: full-load rack input within 90 % of the rack limit ({r['node_in_W']:.0f} W/node)"),
              _kv("rack_limit_kW", r["rack_limit_W"] / 1e3, "--partition RACK_KW" if p.rack_limit_W else
                  "--rack-kW (ASSUMPTION default 80 kW: a direct-liquid-cooled rack)"),
              _kv("feed_share", round(p.nodes * r["node_in_W"] / it_full, 4), "its share of full-load IT power")]
    sv, rc = _CHAIN["sivoc"], _CHAIN["rectifier"]
    tr_VA = feed / units / 0.95
    L += ["", "[sivoc]", "# Frontier fit (ExaDigiT RAPS): node VRM / SIVOC input (P + 13 W) / 0.98",
          _kv("P_fixed_W", sv["P_fixed_W"], "RAPS Frontier SIVOC fit"), _kv("eta", sv["eta"], "RAPS Frontier"),
          _kv("k_per_W", 0.0, "no I^2R term"),
          "", "[rectifier]", "# Frontier fit (ExaDigiT RAPS): (P + 17 W) / 0.96, 4 nodes per rectifier",
          _kv("P_fixed_W", rc["P_fixed_W"], "RAPS"), _kv("eta", rc["eta"], "RAPS"), _kv("k_per_W", 0.0, "no I^2R"),
          _kv("nodes_per_rectifier", rc["nodes_per_rectifier"], "RAPS"),
          "", "[rack_overhead]",
          _kv("P_W", 250.0, "ASSUMPTION: one network switch per rack (RAPS Frontier switch 250 W)"),
          _kv("side", "dc", "fed by the rack's rectifiers (as RAPS)"),
          "", "[facility.feed]",
          _kv("capacity_W", feed, "--feed-MW" if math.isfinite(spec.feed_W) else
              "ASSUMPTION (no --feed-MW): the firm feed carries 1.3 x full-load IT"),
          _kv("units", units, "--feed-units"), _kv("redundancy", spec.redundancy, "--redundancy"),
          _kv("source", "hpctwin site new options", ""),
          "", "[facility.transformer]",
          "# One transformer per feed unit; losses scaled from DOE 10 CFR 431.196 2,500 kVA liquid-immersed",
          "# (1,246 W no-load, 17,449 W load loss; 99.53 % at 50 % load) in proportion to the rating (ASSUMPTION).",
          _kv("rated_VA", tr_VA, "feed / units / power factor"), _kv("count", units, "--feed-units"),
          _kv("no_load_loss_W", 1246.0 * tr_VA / 2.5e6, "scaled DOE figure"),
          _kv("load_loss_W", 17449.0 * tr_VA / 2.5e6, "scaled DOE figure"),
          _kv("power_factor", 0.95, "ASSUMPTION"),
          _kv("source", "DOE 10 CFR 431.196 scaled to the rating; count = feed units", ""),
          "", "[facility.switchgear]", _kv("no_load_fraction", 0.0005, "ASSUMPTION 0.05 % of rating"),
          _kv("full_load_loss_fraction", 0.010, "ASSUMPTION 1 % at rated current (no-load + I^2 R)"),
          _kv("source", "ASSUMPTION 0.5 % of throughput (LBNL data-centre benchmarking)", ""),
          "", "[facility.ups]", _kv("share", 0.10, "ASSUMPTION: service nodes, storage, network on UPS"),
          _kv("rated_W", 0.125 * it_full, "ASSUMPTION: 125 % of the UPS share of full-load IT"),
          "efficiency_points = [[0.25, 0.945], [0.50, 0.960], [1.00, 0.965]]   # double-conversion UPS data sheets",
          _kv("source", "double-conversion UPS, ENERGY STAR UPS v2 range", ""),
          "", "[facility.air_side]", "# CRAH fans and chilled water for the heat that goes to room air",
          _kv("fan_W_per_cfm", 0.5, "LBNL self-benchmarking guide"),
          _kv("delta_T_K", 11.1, "ASSUMPTION 20 F air-side rise"),
          _kv("chiller_cop", 6.28, "ASHRAE 90.1-2019 0.560 kW/ton"),
          _kv("economiser_wb_max_K", 280.15, "ASSUMPTION 7 C"),
          _kv("source", "LBNL 0.5 W/cfm; ASHRAE 90.1-2019; economiser ASSUMPTION", ""),
          "", "[facility.lighting]", _kv("W_per_m2", 10.0, "ASSUMPTION (ASHRAE 90.1 order)"),
          _kv("floor_area_m2", 3.0 * (n_pos - missing) + 50.0, "ASSUMPTION 3 m2 per rack + 50 m2"),
          _kv("source", "ASSUMPTION 10 W/m2", "")]
    return "\n".join(L) + "\n"


#: Tower approach of the facility supply set point over the design wet-bulb [K]. ASSUMPTION: 5 K (a warm-water
#: plant's tower approach is typically 3-6 K at design; ASHRAE Handbook HVAC S&E 2020 ch. 40).
APPROACH_K = 5.0


def set_points_k(design_wb_K: float) -> tuple[float, float]:
    """Facility and CDU secondary supply set points of a generated plant [K].

    The template's 24 C facility / 27 C secondary (ASHRAE TC 9.9 class W27), raised when the towers cannot make
    24 C water on the design day: facility = max(24 C, design wet-bulb + :data:`APPROACH_K`), rounded up to a whole
    kelvin; secondary = facility + 3 K (the template's difference).

    Parameters
    ----------
    design_wb_K : float
        Design wet-bulb [K].

    Returns
    -------
    tuple of float
        (T_fac_sup_set_K, T_sec_sup_set_K).
    """
    fac = max(297.15, math.ceil(design_wb_K + APPROACH_K - 273.15) + 273.15)
    return fac, fac + 3.0


def design_air_side_w(system: System, q_cdu: float, design: object) -> float:
    """The air side's heat into the tower water at a generated plant's design point (both paths, towers and dry).

    Parameters
    ----------
    system : System
        The site's system (its ``[facility.air_side]``).
    q_cdu : float
        Design heat per CDU [W] (``cdu.Q_flow_nominal_W`` of the plant).
    design : object
        The site's design conditions (:func:`cooling_fmu.weather.design_conditions`; its ``wet_bulb_K``).

    Returns
    -------
    float
        ``tower.Q_air_side_design_W`` [W]: :func:`power.sizing.design_air_side_heat_w` at the plant's design heat
        ``n_cdus x q_cdu`` and the design wet-bulb (0 without an air side).
    """
    from power.sizing import design_air_side_heat_w

    return design_air_side_heat_w(system, system.n_cdus * q_cdu, design.wet_bulb_K)


def _plant_dict(n_cdu: int, q_cdu: float, q_total: float, cells: int, chiller: bool, ua_boost: float,
                p_atm: float, design_wb_K: float = 292.15, q_air_W: float = 0.0) -> dict:
    """The scaled template (module docstring, step 3) as a plant-description mapping, with the site's design
    wet-bulb and the air side's design heat ``q_air_W`` (:func:`design_air_side_w`) in its tower section.
    """
    t = tomllib.loads(_template_path().read_text())
    fac, sec = set_points_k(design_wb_K)
    t["cdu"]["T_sec_sup_set_K"] = sec
    t["tower"]["T_fac_sup_set_K"] = fac
    sc, sp = q_cdu / _T_CDU_W, q_total / _T_TOTAL_W
    c, f, tl, tw, ch = t["cdu"], t["facility"], t["tower_loop"], t["tower"], t["chiller"]
    c.update(Q_flow_nominal_W=q_cdu, m_flow_sec_nominal_kg_s=6.4 * sc * ua_boost,
             m_flow_fac_nominal_kg_s=10.6 * sc * ua_boost, m_water_sec_kg=1200.0 * sc, UA_hx_W_K=62.0e3 * sc * ua_boost)
    m_fac = n_cdu * c["m_flow_fac_nominal_kg_s"]
    f.update(m_water_sup_kg=20000.0 * sp, m_water_ret_kg=10000.0 * sp)
    tl.update(m_flow_nominal_kg_s=m_fac, UA_ihx_W_K=647.7e3 * m_fac / 63.6, m_water_basin_kg=15000.0 * sp)
    per_cell = q_total / cells
    tw.update(n_cells=cells, NTU_nominal=CELL_NTU, P_fan_cell_nominal_W=6250.0 * per_cell / CELL_W, p_atm_Pa=p_atm,
              T_wb_design_K=design_wb_K, Q_air_side_design_W=q_air_W, n_cells_standby=0)
    ch.update(enabled=chiller, Q_flow_max_W=0.4 * q_total if chiller else 0.0)
    t.update(n_cdu=n_cdu)
    return t


def _template_path() -> Path:
    from cooling_fmu.params import PLANTS_DIR

    return PLANTS_DIR / f"{TEMPLATE}.toml"


def _plant_toml(name: str, d: dict, notes: dict) -> str:
    """Plant-description TOML of mapping ``d``; ``notes`` holds the comment of each dotted key."""
    L = [f"# Cooling plant of site {name}: generated by `hpctwin site new` (scheduler_sim/app/site.py), the template",
         f"# {TEMPLATE}.toml scaled to the site's design heat and design day; template values keep its sources.",
         _kv("name", name.replace("-", "_"), "site name ('-' -> '_': a Modelica identifier)"),
         _kv("description", f"{name}: generated plant", "hpctwin site new"),
         _kv("n_cdu", d["n_cdu"], notes.get("n_cdu", "the system's CDUs"))]
    for k in ("cp_water_J_kgK", "rho_water_kg_m3", "T_ref_K"):
        L.append(_kv(k, d[k], "template (IAPWS-95 tables / reference)"))
    sections = ["cdu", "cdu.pump", "facility", "facility.pump", "tower_loop", "tower_loop.pump", "tower", "chiller"]
    if d.get("dry_cooler"):
        L.append(_kv("heat_rejection", d["heat_rejection"], notes["heat_rejection"]))
        sections.append("dry_cooler")
    for sect in sections:
        node = d
        for part in sect.split("."):
            node = node[part]
        L += ["", f"[{sect}]"]
        for k, v in node.items():
            if isinstance(v, dict):
                continue
            L.append(_kv(k, v, notes.get(f"{sect}.{k}", "template value (see cooling_fmu/plants/theta.toml)")))
    return "\n".join(L) + "\n"


def build_site(spec: SiteSpec, out_dir: str | Path) -> tuple[Path, Path, list[str]]:
    """Write a site's system and plant descriptions (module docstring), sized for its design day.

    Parameters
    ----------
    spec : SiteSpec
        The site.
    out_dir : str | Path
        Folder to write ``<name>.toml`` and ``<name>_plant.toml`` into (created).

    Returns
    -------
    system_path, plant_path : Path
        The files written.
    log : list of str
        What the sizing did (one line per step).

    Raises
    ------
    ValueError
        For a topology not supported yet, an unknown node type or site, or a plant the sizing cannot make hold.
    """
    import re

    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", spec.name):
        raise ValueError(f"site name {spec.name!r}: use letters, digits, '_' and '-', starting with a letter")
    if spec.cooling == "air":
        raise ValueError("--cooling air: not supported (the plant always cools CDUs with liquid; the air side is "
                         "the system's [facility.air_side], not a plant of its own); use towers, chiller, dry or hybrid")
    if spec.cooling not in ("towers", "chiller", "dry", "hybrid"):
        raise ValueError(f"--cooling {spec.cooling!r}: expected towers, chiller, dry, hybrid or air")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    sys_path, plant_path = out / f"{spec.name}.toml", out / f"{spec.name}_plant.toml"
    weather = spec.weather if spec.weather in SITES else str(Path(spec.weather).resolve())
    spec = dataclasses.replace(spec, weather=weather)
    sys_path.write_text(system_toml(spec, plant_path.name))
    from power.system import load_system

    system = load_system(sys_path)
    heat = _full_heat(system)
    wpath = resolve_weather_file(weather)
    design = design_conditions(wpath)
    df, _ = load_weather(wpath)
    p_atm = float(np.mean(df["p_Pa"]))
    m = spec.margin
    q_cdu = float(heat.max()) * (1 + m)
    q_total = float(heat.sum()) * (1 + m)
    need = float(heat.sum()) * (1 + m)
    cells0 = max(2, math.ceil(q_total / CELL_W))
    log = [f"full-load heat {heat.sum() / 1e6:.3f} MW over {system.n_cdus} CDUs (largest {heat.max() / 1e3:.0f} kW); "
           f"design heat x (1 + {m:g}): CDU {q_cdu / 1e3:.0f} kW, plant {q_total / 1e6:.3f} MW",
           f"design wet-bulb {design.wet_bulb_K - 273.15:.1f} C (0.4 %, {Path(wpath).name}); station pressure "
           f"{p_atm:.0f} Pa (mean of the weather file)"]
    q_air = design_air_side_w(system, q_cdu, design)
    log.append(f"air side's heat into the heat rejection at design {q_air / 1e3:.1f} kW (power.sizing."
               "design_air_side_heat_w), counted in every capacity and sizing answer")
    if spec.cooling in ("dry", "hybrid"):
        plant_path.write_text(_dry_plant_toml(spec, system, plant_path, q_cdu, q_total, cells0, p_atm, design, log))
        load_plant_params(plant_path)  # validated (plausibility of the design heat included)
        return sys_path, plant_path, log
    boost, cells = 1.0, cells0
    for _ in range(4):
        d = _plant_dict(system.n_cdus, q_cdu, q_total, cells0, spec.cooling == "chiller", boost, p_atm,
                        design.wet_bulb_K, q_air)
        params = _params_of(d, plant_path, spec.name)
        k = tower_cells_needed(params, heat, design.wet_bulb_K, need, max_extra=16)
        if k is not None:
            cells = cells0 + k if k > 0 else _fewest_cells(params, heat, design.wet_bulb_K, need)
            break
        boost *= 1.25
        log.append(f"the CDU heat exchangers limit at the design wet-bulb: CDU conductance and flows x {boost:g}")
    else:
        raise ValueError(f"site {spec.name}: no plant of this template holds {need / 1e6:.3f} MW at the design "
                         f"wet-bulb {design.wet_bulb_K - 273.15:.1f} C; choose --cooling chiller or a larger margin")
    from cooling_fmu.sizing import with_tower_cells

    params = with_tower_cells(_params_of(_plant_dict(system.n_cdus, q_cdu, q_total, cells0,
                                                     spec.cooling == "chiller", boost, p_atm, design.wet_bulb_K,
                                                     q_air), plant_path, spec.name), cells - cells0)
    d = _plant_dict(system.n_cdus, q_cdu, q_total, cells0, spec.cooling == "chiller", boost, p_atm,
                    design.wet_bulb_K, q_air)
    d["tower"].update(n_cells=params.tower.n_cells, NTU_nominal=params.tower.NTU_nominal,
                      LG_nominal=params.tower.LG_nominal)
    log.append(f"towers: {cells0} cells of {CELL_W / 1e3:.0f} kW design heat {cells - cells0:+d} for the design day "
               f"= {cells} cells")
    notes = {"cdu.Q_flow_nominal_W": f"largest CDU full-load heat {heat.max() / 1e3:.0f} kW x (1 + {m:g} margin)",
             "cdu.UA_hx_W_K": f"template 62 kW/K x CDU heat ratio {q_cdu / _T_CDU_W:.3f}" +
             (f" x {boost:g} (design day)" if boost > 1 else ""),
             "cdu.m_flow_sec_nominal_kg_s": "template 10 K rise per W, scaled", "cdu.m_flow_fac_nominal_kg_s":
             "template 6 K rise per W, scaled", "tower_loop.m_flow_nominal_kg_s": "sum of the CDU facility flows",
             "tower_loop.UA_ihx_W_K": "template 2 K cold-end approach per W, scaled",
             "tower.n_cells": f"{cells0} cells at {CELL_W / 1e3:.0f} kW, {cells - cells0:+d}: the fewest that hold the "
                              f"design day",
             "tower.NTU_nominal": f"template cell's {CELL_NTU:g} x ({cells}/{cells0})^n_merkel (more air per water)",
             "tower.LG_nominal": f"template 1.2 x {cells0}/{cells}", "tower.p_atm_Pa": "mean station pressure of "
             "the weather file", "tower.P_fan_cell_nominal_W": "template 6.25 kW per 400 kW cell, scaled",
             "chiller.enabled": f"--cooling {spec.cooling}",
             "tower.T_wb_design_K": "0.4 % design wet-bulb of the weather file (cooling_fmu.weather)",
             "tower.Q_air_side_design_W": "power.sizing.design_air_side_heat_w of the system at the design heat "
                                          "(counted in the capacity the cells are chosen by)",
             "tower.n_cells_standby": "0: every cell counted at design (hpctwin site check prints N+1)",
             "tower.T_fac_sup_set_K": f"max(24 C, design wet-bulb + {APPROACH_K:g} K approach) (ASSUMPTION)",
             "cdu.T_sec_sup_set_K": "facility set point + 3 K (the template's W27 difference)",
             "chiller.Q_flow_max_W": "template 40 % of design heat"
             if spec.cooling == "chiller" else "no chiller (warm-water towers)"}
    plant_path.write_text(_plant_toml(spec.name, d, notes))
    load_plant_params(plant_path)  # validated (plausibility of the design heat included)
    return sys_path, plant_path, log


def _dry_plant_toml(spec: SiteSpec, system: System, plant_path: Path, q_cdu: float, q_total: float, units: int,
                    p_atm: float, design, log: list[str]) -> str:
    """The plant description of a ``dry`` or ``hybrid`` site: the scaled template without chiller, its bank sized by
    :func:`cooling_fmu.sizing.size_dry_cooler` for ALL the heat it rejects at design (rack heat, pumps' shaft
    work, the air side's design heat, :func:`power.sizing.design_air_side_heat_w`) at the design dry-bulb; one unit
    per :data:`CELL_W` of design heat (ASSUMPTION).
    """
    from cooling_fmu.components.drycooler import SPECIFIC_FAN_POWER_W_PER_W
    from cooling_fmu.sizing import DRY_AIR_RISE_FRACTION, DRY_EPS_WATER_MAX, DRY_ITD_MIN_K, PAD_EFFECTIVENESS
    from cooling_fmu.sizing import size_dry_cooler
    q_air = design_air_side_w(system, q_cdu, design)
    fac0 = fac = set_points_k(design.wet_bulb_K)[0]
    for _ in range(8):  # raise the facility set point until the bank holds at the design dry-bulb (W45 at most)
        d = _plant_dict(system.n_cdus, q_cdu, q_total, units, False, 1.0, p_atm, design.wet_bulb_K, q_air)
        d["tower"].update(T_fac_sup_set_K=fac)
        d["cdu"]["T_sec_sup_set_K"] = fac + 3.0
        plant, Q, T_air, short = size_dry_cooler(_params_of(d, plant_path, spec.name), design.dry_bulb_K,
                                                 spec.cooling, design.mcwb_K)
        if short <= 0.0 or fac >= DRY_SET_MAX_K:
            break
        fac = min(DRY_SET_MAX_K, fac + math.ceil(short))
    if fac > fac0:
        log.append(f"facility set point {fac0 - 273.15:.0f} -> {fac - 273.15:.0f} C so the dry coolers hold at the "
                   f"design dry-bulb {design.dry_bulb_K - 273.15:.1f} C (at most {DRY_SET_MAX_K - 273.15:.0f} C, W45)")
    # N+1: one spare unit of the same size, so that any ``units`` of the ``units + 1`` carry the design heat
    k = (units + 1) / units
    dc = plant.dry_cooler.model_copy(update={"UA_nominal_W_K": plant.dry_cooler.UA_nominal_W_K * k,
                                             "m_air_nominal_kg_s": plant.dry_cooler.m_air_nominal_kg_s * k})
    d["tower"].update(P_fan_cell_nominal_W=plant.tower.P_fan_cell_nominal_W, n_cells=units + 1)
    d["heat_rejection"] = spec.cooling
    d["dry_cooler"] = {k: v for k, v in dc.model_dump().items() if spec.cooling == "hybrid" or k in
                       ("UA_nominal_W_K", "m_air_nominal_kg_s", "n_UA")}
    log.append(f"dry coolers: {units} units + 1 spare (N+1), sized for {Q / 1e6:.3f} MW (all the heat they reject: rack, pumps' "
               f"shaft work, air side {q_air / 1e3:.0f} kW) at air {T_air - 273.15:.1f} C"
               + (f"; the design air is {short:.1f} K warmer: the set point is not held on the design day (hpctwin "
                  "site check)" if short > 0 else ""))
    sized = (f"cooling_fmu.sizing.size_dry_cooler for {Q / 1e6:.4f} MW at air {T_air - 273.15:.2f} C, x "
             f"{units + 1}/{units} for N+1")
    notes = {"heat_rejection": f"--cooling {spec.cooling}",
             "dry_cooler.UA_nominal_W_K": f"{sized}: crossflow eps-NTU (Incropera Table 11.3) inverted",
             "dry_cooler.m_air_nominal_kg_s": f"{sized}: air rise {DRY_AIR_RISE_FRACTION:g} x ITD, ITD = max("
                                              f"{DRY_ITD_MIN_K:g} K, range / {DRY_EPS_WATER_MAX:g}) (ASSUMPTION)",
             "dry_cooler.n_UA": "ASSUMPTION 0.6 (finned coil, Kays & London)",
             "dry_cooler.eps_pad": f"ASSUMPTION {PAD_EFFECTIVENESS:g} (rigid media 70-95 %, ASHRAE HVAC S&E ch. 41)",
             "dry_cooler.T_db_pad_on_K": "pads wetted above the air the bank is sized at: the dry-bulb below which "
                                         "the dry bank alone carries the design heat (ASSUMPTION)",
             "tower.n_cells": f"dry-cooler units: one per {CELL_W / 1e3:.0f} kW of design heat (ASSUMPTION) + 1 spare "
                              "(N+1)",
             "tower.P_fan_cell_nominal_W": f"{SPECIFIC_FAN_POWER_W_PER_W:g} W per W of design heat over the "
                                           f"{units} duty units (EnergyPlus FluidCoolers.cc fan autosizing)",
             "tower.T_wb_design_K": "0.4 % design wet-bulb of the weather file (cooling_fmu.weather)",
             "tower.Q_air_side_design_W": "power.sizing.design_air_side_heat_w of the system at the design heat",
             "tower.drift_fraction": "unused by a dry-cooler bank (no drift)",
             "tower.NTU_nominal": "unused by a dry-cooler bank", "tower.LG_nominal": "unused by a dry-cooler bank",
             "tower.n_merkel": "unused by a dry-cooler bank", "tower.p_atm_Pa": "mean station pressure of the "
             "weather file", "chiller.enabled": "no trim chiller with a dry-cooler bank",
             "cdu.Q_flow_nominal_W": f"largest CDU full-load heat x (1 + {spec.margin:g} margin)",
             "tower.T_fac_sup_set_K": f"max(24 C, design wet-bulb + {APPROACH_K:g} K approach)"
             + (f", raised {fac - fac0:.0f} K so the bank holds at the design dry-bulb (at most W45's 45 C)"
                if fac > fac0 else "") + " (ASSUMPTION)",
             "cdu.T_sec_sup_set_K": "facility set point + 3 K (the template's W27 difference)",
             "tower_loop.m_flow_nominal_kg_s": "sum of the CDU facility flows"}
    return _plant_toml(spec.name, d, notes)


def _fewest_cells(params, heat: np.ndarray, T_wb_K: float, need_W: float) -> int:
    """Fewest tower cells (at least 2) of the template's size that still hold ``need_W`` at ``T_wb_K``: the plant
    holds with its own cells; bisection on the cell count (capacity grows with the cells).
    """
    from cooling_fmu.sizing import with_tower_cells

    n0 = params.tower.n_cells
    lo, hi = 1, n0  # hi holds; lo (1 cell) is taken as not holding (at least 2 cells)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        ok = plant_capacity(with_tower_cells(params, mid - n0), heat, T_wb_K, n_grid=300).heat_W >= need_W
        lo, hi = (lo, mid) if ok else (mid, hi)
    return max(2, hi)


def _params_of(d: dict, path: Path, name: str):
    """Validated PlantParams of a plant mapping (written to ``path`` and read back)."""
    path.write_text(_plant_toml(name, d, {}))
    return load_plant_params(path)


def _dry_bank_lines(params, heat: np.ndarray, design) -> list[str]:
    """``site check`` line of a dry or hybrid bank: its size and the heat it is sized for (its N+1 is
    :func:`_n_plus_one_lines`).
    """
    from cooling_fmu.sizing import design_tower_heat_w

    dc, t = params.dry_cooler, params.tower
    n = t.n_cells
    return [f"dry coolers ({params.heat_rejection}): {n} units, UA {dc.UA_nominal_W_K / 1e3:,.0f} kW/K, air "
            f"{dc.m_air_nominal_kg_s:,.0f} kg/s, fans {n * t.P_fan_cell_nominal_W / 1e3:.1f} kW at full speed"
            + (f", pads {dc.eps_pad:g} above {dc.T_db_pad_on_K - 273.15:.1f} C" if dc.eps_pad > 0 else "")
            + f"; sized for {design_tower_heat_w(params) / 1e6:.3f} MW (rack heat, pumps' shaft work, air side "
            f"{t.Q_air_side_design_W / 1e3:.0f} kW)"]


def _n_plus_one_lines(params, heat: np.ndarray, T_wb_K: float, T_db_K: float | None) -> list[str]:
    """``site check`` N+1 lines at full-load heat and the design day: :func:`cooling_fmu.redundancy.n_plus_one`,
    the one N+1 path (towers at the design wet-bulb; a dry or hybrid bank at the design dry-bulb).
    """
    from cooling_fmu.redundancy import n_plus_one

    day = "dry-bulb" if T_db_K is not None else "wet-bulb"
    L = []
    for c in n_plus_one(params, T_wb_K, heat, T_db_K):
        why = (f"facility supply {c.T_fac_sup_K - 273.15:.2f} C, warmest CDU {c.T_sec_sup_max_K - 273.15:.2f} C"
               if math.isfinite(c.T_fac_sup_K) else c.note)
        L.append(f"N+1 ({c.name}) at the design {day}, full-load heat: " + ("holds" if c.ok else "FAILS")
                 + f" ({why})")
    return L


def _full_heat(system: System) -> np.ndarray:
    """Full-load heat per CDU [W] (every node at utilisation 1 through the chain, times liquid_fraction)."""
    p = np.concatenate([np.full(q.n_nodes, float(node_power_w(1.0, 1.0, q.node))) for q in system.partitions])
    return PowerChain(system).evaluate(p).cdu_heat_W


def check_site(system_path: str | Path) -> tuple[bool, list[str]]:
    """The derived design of a site (``hpctwin site check``) and whether its plant rejects its full-load heat.

    Parameters
    ----------
    system_path : str | Path
        The site's system description (its plant is the one it names).

    Returns
    -------
    ok : bool
        False when the plant cannot reject the full-load heat at the design wet-bulb.
    lines : list of str
        The report (design day, heat per CDU, kW per rack vs limit, capacity, pumps and towers, feed, advice).
    """
    from cooling_fmu.modelica import analytic_steady_state, pump_rated_motor_W
    from power.facility import FacilityOverheads
    from power.system import load_system

    system = load_system(system_path)
    params = load_plant_params(system.cooling_plant)
    base = str(Path(system.source).parent)
    wpath = resolve_weather_file(system.site_weather or "golden", base)
    design = design_conditions(wpath)
    p = np.concatenate([np.full(q.n_nodes, float(node_power_w(1.0, 1.0, q.node))) for q in system.partitions])
    st = PowerChain(system).evaluate(p)
    heat = st.cdu_heat_W
    L = [f"site {system.name}: {system.n_nodes} nodes, {system.n_racks} racks, {system.n_cdus} CDUs; plant "
         f"{Path(system.cooling_plant).name}",
         f"design day ({Path(wpath).name}, 0.4 %): wet-bulb {design.wet_bulb_K - 273.15:.1f} C (MCDB "
         f"{design.mcdb_K - 273.15:.1f} C), dry-bulb {design.dry_bulb_K - 273.15:.1f} C (MCWB "
         f"{design.mcwb_K - 273.15:.1f} C)",
         f"full-load IT {st.it_input_W / 1e6:.3f} MW; heat to liquid {heat.sum() / 1e6:.3f} MW; per CDU "
         + ", ".join(f"{h / 1e3:.0f}" for h in heat) + f" kW (design {params.cdu.Q_flow_nominal_W / 1e3:.0f} kW)"]
    ok = True
    for q in system.partitions:
        racks = st.rack_input_W[q.first_rack:q.first_rack + q.n_racks]
        lim = q.rack_limit_W
        flag = "" if not math.isfinite(lim) or racks.max() <= lim else "  OVER THE LIMIT"
        L.append(f"partition {q.name}: {q.n_nodes} x {q.node_type or 'inline'} on {q.n_racks} racks, full-load "
                 f"{racks.max() / 1e3:.1f} kW per rack vs limit {lim / 1e3:.1f} kW{flag}")
        if flag:
            per = racks.max() / max(1, int(np.max(np.bincount(system.node_rack[q.first_node:q.first_node
                                                                                 + q.n_nodes]))))
            L.append(f"needs at most {int(lim // per)} nodes per rack in partition {q.name} (or a rack limit of "
                     f"{racks.max() / 1e3:.0f} kW)")
        ok &= not flag
    dry = params.heat_rejection != "towers"
    # a dry or hybrid bank's design day is the 0.4 % dry-bulb with its mean coincident wet-bulb (the pads' air)
    T_wb_d, T_db_d = (design.mcwb_K, design.dry_bulb_K) if dry else (design.wet_bulb_K, None)
    cap = plant_capacity(params, heat, T_wb_d, T_db_K=T_db_d)
    margin = 1.0 - heat.sum() / cap.heat_W  # share of the capacity left (as the run's headroom block)
    L.append(f"plant capacity at the design {'dry' if dry else 'wet'}-bulb: {cap.heat_W / 1e6:.3f} MW"
             f"{' or more' if cap.at_least else ''} vs full-load heat {heat.sum() / 1e6:.3f} MW "
             f"({100 * margin:+.1f} % of capacity left)")
    rho = params.rho_water_kg_m3
    m_cw = params.tower_loop.m_flow_nominal_kg_s
    P_cdu = pump_rated_motor_W(params.cdu.pump, params.cdu.m_flow_sec_nominal_kg_s, rho)
    P_fac = pump_rated_motor_W(params.facility.pump, m_cw, rho)
    P_tw = pump_rated_motor_W(params.tower_loop.pump, m_cw, rho)
    L.append(f"pumps (rated motor, each): CDU {P_cdu / 1e3:.1f} kW x {params.n_cdu}, facility {P_fac / 1e3:.1f} kW x "
             f"{params.facility.pump.n_pumps}, tower water {P_tw / 1e3:.1f} kW x {params.tower_loop.pump.n_pumps} "
             f"(flows {params.cdu.m_flow_sec_nominal_kg_s:.1f} kg/s per CDU, {m_cw:.1f} kg/s facility and towers)")
    if dry:
        L += _dry_bank_lines(params, heat, design)
    else:
        L.append(f"towers: {params.tower.n_cells} cells, Merkel number {params.tower.NTU_nominal:.3f} at full air, "
                 f"fans {params.tower.n_cells * params.tower.P_fan_cell_nominal_W / 1e3:.1f} kW; chiller "
                 + (f"{params.chiller.Q_flow_max_W / 1e3:.0f} kW" if params.chiller.enabled else "none"))
    L += _n_plus_one_lines(params, heat, T_wb_d, T_db_d)
    ss = analytic_steady_state(params, heat, T_wb_d, T_db_d)
    fo = FacilityOverheads(sized_facility(system), system.liquid_fraction)  # ratings from the system
    cols = fo.evaluate_columns(np.array([st.it_input_W]), np.array([float(ss["P_cooling"])]),
                               np.array([design.wet_bulb_K]))
    fac = st.it_input_W + float(ss["P_cooling"]) + float(cols.sum()) - float(cols[0, 4])  # Q_air is heat, not power
    feed, firm, src = sized_facility(system).feed_W()  # transformer count from the system (power.sizing)
    red = system.facility.feed.redundancy if system.facility.feed is not None else "N+1 (transformers)"
    L.append(f"facility at full load on the design day: {fac / 1e6:.3f} MW (cooling {float(ss['P_cooling']) / 1e3:.0f}"
             f" kW); feed {feed / 1e6:.3f} MW ({src}), firm {firm / 1e6:.3f} MW with {red}: margin "
             f"{(feed - fac) / 1e6:+.3f} MW, firm {(firm - fac) / 1e6:+.3f} MW")
    if math.isfinite(feed) and fac > feed:
        ok = False
        L.append(f"needs {(fac - feed) / 1e3:,.0f} kW more feed")
    elif math.isfinite(firm) and fac > firm:
        L.append(f"note: the full load exceeds the firm feed by {(fac - firm) / 1e3:,.0f} kW ({red} not held)")
    if cap.heat_W < heat.sum() and dry:
        ok = False
        T_fs = float(ss["T_fac_sup"])
        L.append(f"REFUSED: the {params.heat_rejection} bank cannot reject the full-load heat at the design dry-bulb "
                 f"({(heat.sum() - cap.heat_W) / 1e3:,.0f} kW short; facility supply {T_fs - 273.15:.1f} C vs set "
                 f"point {params.tower.T_fac_sup_set_K - 273.15:.1f} C): a dry cooler cannot cool below the "
                 f"dry-bulb plus its approach; raise the facility set point by {T_fs - params.tower.T_fac_sup_set_K:.1f}"
                 f" K, or choose " + ("--cooling hybrid or towers" if params.heat_rejection == "dry" else
                                      "--cooling towers"))
    elif cap.heat_W < heat.sum():
        ok = False
        k = tower_cells_needed(params, heat, design.wet_bulb_K, float(heat.sum()), max_extra=12)
        L.append(f"REFUSED: the plant cannot reject the full-load heat at the design wet-bulb "
                 f"({(heat.sum() - cap.heat_W) / 1e3:,.0f} kW short): "
                 + (f"add {k} tower cell(s) of the same size" if k is not None else
                    "larger CDU heat exchangers or flows (tower cells alone do not suffice)"))
    return ok, L
