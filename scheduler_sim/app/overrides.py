"""What-ifs as overrides: ``--set KEY=VALUE`` on ``run`` and ``sweep`` (issue #23 item 5).

One key resolver (:func:`resolve_key`) serves every place that names a configuration key (the ``--set`` option,
sweep axes, and "did you mean" hints elsewhere). Three scopes:

* a :class:`~scheduler_sim.app.config.RunConfig` key in dotted form (``scheduler.policy``, ``cooling.step_s``,
  ``trace.window_days``, ``seed``);
* ``system.<dotted key>``: a key of the run's system description TOML (``system.topology.n_nodes``,
  ``system.node.cpu_idle_W``), and ``system.nodes``: the machine's size in whole racks (``nodes_per_rack`` =
  round(N / racks), ``n_nodes`` = racks x ``nodes_per_rack``; e.g. ``--set system.nodes=+20%`` on Theta: 24 racks
  x 220 = 5,280 nodes);
* ``plant.<dotted key>``: a key of the run's plant description TOML (``plant.tower.n_cells``,
  ``plant.cdu.UA_hx_W_K``);
* ``partition.<name>.<key>`` (also ``system.partition.<name>.<key>``): a key of one ``[[partition]]`` table of a
  partitioned system (``partition.gpu.nodes``, ``partition.cpu.rack_limit_kW``, ``partition.gpu.trace_names``):
  every field of the table can be set, given in the file or not. A partition's ``nodes`` / ``nodes_per_rack`` set
  its rack count (``ceil(nodes / nodes_per_rack)``); the rack positions are then laid out again
  (:func:`_relayout`): fewer racks leave the last populated positions empty, more racks fill the empty positions
  first (lowest first), then add whole CDUs at the end, and the plant gets the same number of CDUs (``n_cdu``, each
  as the plant's CDU; the facility side, towers and pumps, stays as it is: the run's headroom then says what the
  plant lacks). E.g. ``--set partition.gpu.nodes=+20%`` on power/systems/perlmutter.toml: 1,536 -> 1,843 GPU nodes
  in 15 racks of 128, 27 racks, a 7th CDU.

Values are read as TOML values (``3``, ``2.5``, ``true``, ``[1, 2]``, ``"text"``), else taken as text (``fcfs``).
A number can also be given relative to the value in force: ``+20%`` / ``-10%`` (times 1.2 / 0.9) or ``x1.5``
(times 1.5); a relative value of an integer key is rounded to the nearest integer. ``+5`` without ``%`` is the
number 5 (absolute).

System and plant overrides are applied to a copy of the description, which is validated as the original would be
and written, content-addressed, to ``<cache root>/derived/<name>+set-<sha256 prefix>.toml`` (the file lists the
overrides in its header comment); ``system`` / ``cooling.plant`` then name that file, so every later reader of
the output (report, attribution) sees the description that ran. The ``--set`` texts themselves are kept in
``RunConfig.overrides`` (provenance).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
import tomllib
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .config import ConfigError, RunConfig

__all__ = ["resolve_key", "valid_keys", "parse_value", "parse_sets", "apply_sets", "toml_dumps"]

_REL = re.compile(r"^(?:(?P<sign>[+-])(?P<pct>\d+(?:\.\d*)?|\.\d+)%|x(?P<mul>\d+(?:\.\d*)?|\.\d+))$")


def _model_keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Dotted leaf keys of a pydantic model class (sections that are models are walked, optional ones too)."""
    out = []
    for name, f in model.model_fields.items():
        ann = f.annotation
        if typing.get_origin(ann) in (list, tuple, dict):  # arrays of tables, tables of values: set as a whole
            out.append(prefix + name)
            continue
        args = typing.get_args(ann)
        cands = [ann] if isinstance(ann, type) else [a for a in args if a is not type(None)]
        subs = [a for a in cands if isinstance(a, type) and issubclass(a, BaseModel)]
        if subs:
            out.extend(_model_keys(subs[0], f"{prefix}{name}."))
            if len(cands) > len(subs):
                out.append(prefix + name)  # a name or a table (serving.router): settable as a whole too
        else:
            out.append(prefix + name)
    return out


def _dict_keys(d: dict, prefix: str = "") -> list[str]:
    """Dotted leaf keys of a TOML dict (tables walked; arrays of tables are leaves)."""
    out = []
    for k, v in d.items():
        if isinstance(v, dict):
            out.extend(_dict_keys(v, f"{prefix}{k}."))
        else:
            out.append(prefix + k)
    return out


def _system_path(cfg: RunConfig) -> Path:
    from power.system import SYSTEMS_DIR

    p = Path(cfg.system)
    return p if (p.suffix == ".toml" or p.exists()) else SYSTEMS_DIR / f"{cfg.system}.toml"


def _plant_path(cfg: RunConfig, system_data: dict | None = None) -> Path:
    from cooling_fmu.params import PLANTS_DIR

    name = cfg.cooling.plant
    if not name:
        if system_data is None:
            system_data = _read_toml(_system_path(cfg), "system file")
        name = str(system_data.get("cooling_plant", ""))
    p = Path(name)
    return p if (p.suffix == ".toml" or p.exists()) else PLANTS_DIR / f"{name}.toml"


def _read_toml(path: Path, what: str) -> dict:
    from .config import read_toml

    return read_toml(path, what)


def valid_keys(cfg: RunConfig | None = None, scope: str = "config") -> list[str]:
    """Every key that can be set in a scope.

    Parameters
    ----------
    cfg : RunConfig | None
        The run (needed for the ``system`` and ``plant`` scopes: their keys are those of its description files).
    scope : str
        Which keys: ``"config"``, ``"system"`` or ``"plant"``.

    Returns
    -------
    list of str
        Dotted keys, with the ``system.`` / ``plant.`` prefix for those scopes.

    Notes
    -----
    Raises ConfigError (from :func:`scheduler_sim.app.config.read_toml`) if the system or plant description cannot
    be read; the message names the file.
    """
    if scope == "config":
        return _model_keys(RunConfig)
    cfg = cfg or RunConfig()
    sysd = _read_toml(_system_path(cfg), "system file")
    if scope == "system":
        return ["system." + k for k in _dict_keys(sysd)] + ["system.nodes"]
    if scope == "partition":
        return [f"partition.{name}.{f}" for name in _partition_names(sysd) for f in _partition_fields()]
    return ["plant." + k for k in _dict_keys(_read_toml(_plant_path(cfg, sysd), "plant description"))]


def _partition_names(sysd: dict) -> list[str]:
    """Names of the ``[[partition]]`` tables of a system description (TOML dict); [] without partitions."""
    parts = sysd.get("partition")
    return [str(p.get("name")) for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _partition_fields() -> list[str]:
    """Keys a ``[[partition]]`` table may hold (power.system's partition model), the inline ``node`` table too."""
    from power.system import _PartitionSpec

    return [f for f in _PartitionSpec.model_fields if f != "name"]


def _resolve_partition(key: str, cfg: RunConfig | None) -> tuple[str, str]:
    """``partition.<name>.<field>``: resolve, or explain (unknown partition or field, with "did you mean")."""
    sysd = _read_toml(_system_path(cfg or RunConfig()), "system file")
    names = _partition_names(sysd)
    parts = key.split(".")
    if not names:
        raise ConfigError(f"unknown configuration key {key!r}: system {sysd.get('name', '?')!r} has no [[partition]] "
                          f"tables (its size is system.nodes, e.g. --set system.nodes=+20%)")
    if len(parts) == 2 and parts[1] in names:
        raise ConfigError(f"configuration key {key!r} names a partition, not one of its keys; e.g. "
                          f"partition.{parts[1]}.nodes (keys of a partition: {', '.join(_partition_fields())})")
    if len(parts) < 3 or parts[1] not in names:
        got = parts[1] if len(parts) > 1 else ""
        close = difflib.get_close_matches(got, names, n=2, cutoff=0.6)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise ConfigError(f"unknown configuration key {key!r}: system {sysd.get('name', '?')!r} has no partition "
                          f"{got!r}{hint} (partitions: {', '.join(names)}; keys are partition.<name>.<key>, e.g. "
                          f"partition.{names[0]}.nodes)")
    field = ".".join(parts[2:])
    fields = _partition_fields()
    if field in fields or (field.startswith("node.") and field != "node."):
        return "partition", ".".join(parts[1:])
    close = difflib.get_close_matches(field, fields, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(f'partition.{parts[1]}.{c}') for c in close)}?" if close else ""
    raise ConfigError(f"unknown configuration key {key!r}{hint} (keys of a partition: {', '.join(fields)})")


def resolve_key(key: str, cfg: RunConfig | None = None) -> tuple[str, str]:
    """Resolve a user's key to its scope and dotted key, or explain what it might have meant.

    Parameters
    ----------
    key : str
        ``scheduler.policy``, ``system.topology.n_nodes``, ``plant.tower.n_cells``, ...
    cfg : RunConfig | None
        The run whose system and plant descriptions define the ``system.`` / ``plant.`` keys (default: the main
        job's).

    Returns
    -------
    scope : {"config", "system", "plant", "partition"}
    dotted : str
        The key within its scope (without the ``system.`` / ``plant.`` / ``partition.`` prefix; a partition key is
        ``<name>.<field>``).

    Raises
    ------
    ConfigError
        For an unknown key: the message gives the closest valid keys (``difflib.get_close_matches``, "did you
        mean") and the valid keys of the same section; for a partition key, the partitions of the system (a
        misspelt partition name gets its own "did you mean").
    """
    key = key.strip()
    if key.startswith("system.partition."):
        key = key[len("system."):]
    if key.startswith("partition.") or key == "partition":
        return _resolve_partition(key, cfg)
    scope = "config"
    if key.startswith("system.") and key != "system":
        scope = "system"
    elif key.startswith("plant."):
        scope = "plant"
    keys = valid_keys(cfg, scope)
    if key in keys:
        return scope, key.split(".", 1)[1] if scope != "config" else key
    all_keys = keys if scope != "config" else keys + ["system.<key of the system file>", "plant.<key of the plant "
                                                                                          "file>",
                                                      "partition.<name>.<key>"]
    close = difflib.get_close_matches(key, keys, n=3, cutoff=0.6)
    section = key.rsplit(".", 1)[0] + "." if "." in key else ""
    siblings = [k for k in keys if section and k.startswith(section)] or \
        sorted({k.split(".")[0] + ("." if "." in k else "") for k in all_keys})
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    where = f"under {section!r}" if section and siblings and siblings[0].startswith(section) else "top-level"
    raise ConfigError(f"unknown configuration key {key!r}{hint} (valid keys {where}: {', '.join(siblings[:40])}"
                      f"{', ...' if len(siblings) > 40 else ''})")


def parse_value(text: str, current: Any = None, key: str = "") -> Any:
    """The value of a ``--set`` text: a TOML value, a relative number (``+20%``, ``-10%``, ``x1.5``) or text.

    Parameters
    ----------
    text : str
        The text after ``=``.
    current : Any
        The value in force (needed for a relative form).
    key : str
        The key, for messages.

    Returns
    -------
    Any
        The new value; for a relative form of an integer key, rounded to the nearest integer (halves away from 0).

    Raises
    ------
    ConfigError
        For a relative form on a key whose current value is not a number.
    """
    t = text.strip()
    m = _REL.match(t)
    if m:
        if isinstance(current, bool) or not isinstance(current, (int, float)):
            raise ConfigError(f"--set {key}={text}: a relative value needs a number in force, but {key} is "
                              f"{current!r}")
        f = float(m["mul"]) if m["mul"] is not None else 1.0 + (1 if m["sign"] == "+" else -1) * float(m["pct"]) / 100
        v = current * f
        if isinstance(current, int):
            return int(math.copysign(math.floor(abs(v) + 0.5), v))
        return v
    try:
        return tomllib.loads(f"v = {t}")["v"]
    except tomllib.TOMLDecodeError:
        return t


def parse_sets(items: list[str] | None) -> list[tuple[str, str]]:
    """``["a.b=1", ...]`` -> ``[("a.b", "1"), ...]`` (order kept).

    Parameters
    ----------
    items : list[str] | None
        ``KEY=VALUE`` texts.

    Returns
    -------
    list of (str, str)
        Keys (stripped) and value texts (as given).

    Raises
    ------
    ConfigError
        For an item without ``=`` or with an empty key.
    """
    out = []
    for it in items or []:
        if "=" not in it or not it.split("=", 1)[0].strip():
            raise ConfigError(f"--set {it!r}: expected KEY=VALUE, e.g. --set scheduler.policy=fcfs")
        k, v = it.split("=", 1)
        out.append((k.strip(), v))
    return out


def _get(d: dict, dotted: str) -> Any:
    node = d
    for p in dotted.split("."):
        if not isinstance(node, dict) or p not in node:
            return None
        node = node[p]
    return node


def _set(d: dict, dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = d
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value


def apply_sets(cfg: RunConfig, items: list[str] | dict, *, record: bool = True) -> RunConfig:
    """Return ``cfg`` with overrides applied (all of them, in order; later ones win).

    Parameters
    ----------
    cfg : RunConfig
        The run.
    items : list[str] | dict
        ``--set`` texts (``"KEY=VALUE"``) (values read by :func:`parse_value`), or a mapping of keys to typed values (sweep axes,
        ``[[scenarios]]``: used as given, except a string in a relative form such as ``"+20%"``).
    record : bool
        Append the texts to ``RunConfig.overrides`` (provenance of ``--set``; sweep axes are recorded by the
        scenario name instead, so their files keep the configuration JSON they had).

    Returns
    -------
    RunConfig
        The run with configuration keys changed through :meth:`RunConfig.with_overrides`, and ``system`` /
        ``cooling.plant`` pointing at derived description files when ``system.`` / ``plant.`` keys were set.

    Raises
    ------
    ConfigError
        For an unknown key (with "did you mean"), a bad value, or a derived description that does not validate.
    """
    if isinstance(items, dict):
        pairs = [(k, (v, isinstance(v, str) and bool(_REL.match(v.strip())))) for k, v in items.items()]
        texts = []
    else:
        pairs = [(k, (v, True)) for k, v in parse_sets(items)]
        texts = [f"{k}={v}" for k, (v, _) in pairs]
    cfg_sets, sys_sets, plant_sets = [], [], []
    for k, v in pairs:
        scope, dotted = resolve_key(k, cfg)
        if scope == "partition":
            scope, dotted = "system", "partition." + dotted
        (cfg_sets if scope == "config" else sys_sets if scope == "system" else plant_sets).append((dotted, v))

    def value(v, cur, key):
        raw, parse = v
        return parse_value(raw, cur, key) if parse else raw

    if cfg_sets:
        data = json.loads(cfg.model_dump_json())
        ov: dict = {}
        for dotted, v in cfg_sets:
            ov[dotted] = value(v, ov.get(dotted, _get(data, dotted)), dotted)
        try:
            cfg = cfg.with_overrides(ov)
        except ConfigError as exc:
            what = "--set" if texts else "overrides"
            raise ConfigError(str(exc).replace("overrides: invalid configuration",
                                               f"{what} {' '.join(texts) if texts else ''}".strip() +
                                               ": invalid configuration")) from None
    if sys_sets:
        src = _system_path(cfg)
        d = _read_toml(src, "system file")
        n_cdus0 = _get(d, "topology.n_cdus")
        relayout = False
        for dotted, v in sys_sets:
            if dotted == "nodes":  # the machine's size in whole racks (the what-if "+20 % nodes")
                _set_nodes(d, value(v, _get(d, "topology.n_nodes"), "system.nodes"))
                continue
            if dotted.startswith("partition."):  # one [[partition]] table's key
                name, field = dotted.split(".", 2)[1:]
                table = next(p for p in d["partition"] if p.get("name") == name)
                _set(table, field, value(v, _get(table, field), dotted))
                relayout |= field in ("nodes", "nodes_per_rack")
                continue
            _set(d, dotted, value(v, _get(d, dotted), "system." + dotted))
        if relayout:
            _relayout(d)
            if _get(d, "topology.n_cdus") != n_cdus0:  # the plant gets the same CDU count (below)
                plant_sets = [("n_cdu", (int(d["topology"]["n_cdus"]), False))] + plant_sets
        w = _get(d, "site.weather")
        if isinstance(w, str) and ("/" in w or "." in w) and not Path(w).is_absolute():
            _set(d, "site.weather", str((src.parent / w).resolve()))  # the derived file lives elsewhere
        cp = d.get("cooling_plant")
        if isinstance(cp, str) and cp.endswith(".toml") and not Path(cp).is_absolute():
            d["cooling_plant"] = str((src.parent / cp).resolve())  # a site's plant beside its system file
        path = _derived_file(src, d, [f"{'' if k.startswith('partition.') else 'system.'}{k}={v[0]}"
                                      for k, v in sys_sets])
        from power import load_system

        try:
            load_system(path)
        except (ValueError, OSError) as exc:
            raise ConfigError(f"--set system.*: the changed system description does not validate: {exc}") from None
        cfg = cfg.with_overrides({"system": str(path)})
    if plant_sets:
        src = _plant_path(cfg)
        d = _read_toml(src, "plant description")
        for dotted, v in plant_sets:
            _set(d, dotted, value(v, _get(d, dotted), "plant." + dotted))
        path = _derived_file(src, d, [f"plant.{k}={v[0]}" for k, v in plant_sets])
        from cooling_fmu.params import load_plant_params

        try:
            load_plant_params(path)
        except (ValueError, OSError) as exc:
            raise ConfigError(f"--set plant.*: the changed plant description does not validate: {exc}") from None
        cfg = cfg.with_overrides({"cooling.plant": str(path)})
    if record and texts:
        cfg = cfg.with_overrides({"overrides": list(cfg.overrides) + texts})
    return cfg


def _set_nodes(d: dict, n: object) -> None:
    """``system.nodes = n``: whole racks of the system's topology holding about ``n`` nodes.

    ``nodes_per_rack = max(1, round(n / racks))`` with ``racks = n_cdus x rack_positions_per_cdu - missing``, and
    ``n_nodes = racks x nodes_per_rack`` (the nearest size the rack layout can hold; the CDUs stay as they are).

    Parameters
    ----------
    d : dict
        The system description (TOML dict), changed in place.
    n : object
        The asked-for node count.

    Raises
    ------
    ConfigError
        If ``n`` is not a positive number or the system file has no ``[topology]`` table.
    """
    topo = d.get("topology")
    if not isinstance(topo, dict) or isinstance(n, bool) or not isinstance(n, (int, float)) or not n >= 1:
        raise ConfigError(f"--set system.nodes={n!r}: expected a number of nodes >= 1 (or +20%, x1.5) and a system "
                          f"file with a [topology] table")
    racks = int(topo["n_cdus"]) * int(topo["rack_positions_per_cdu"]) - len(topo.get("missing_rack_positions", []))
    per = max(1, int(math.floor(float(n) / racks + 0.5)))
    topo["nodes_per_rack"] = per
    topo["n_nodes"] = racks * per


def _relayout(d: dict) -> None:
    """Lay the rack positions out again after a partition's ``nodes`` / ``nodes_per_rack`` changed (in place).

    The partitions need ``R = sum ceil(nodes / nodes_per_rack)`` racks; the topology has ``P`` populated positions
    (``n_cdus x rack_positions_per_cdu - missing``). ``R < P``: the last ``P - R`` populated positions become
    missing. ``R > P``: the missing positions are populated, lowest first; the racks still without a position go to
    ``ceil(rest / rack_positions_per_cdu)`` new CDUs at the end, whose trailing positions stay empty. ``n_nodes``
    (when the file gives it) becomes the partitions' total.

    Parameters
    ----------
    d : dict
        A partitioned system description (TOML dict with ``topology`` and ``partition``).

    Raises
    ------
    ConfigError
        If a partition's ``nodes`` or ``nodes_per_rack`` is not an integer >= 1.
    """
    topo = d["topology"]
    racks = 0
    for p in d["partition"]:
        n, per = p.get("nodes"), p.get("nodes_per_rack")
        if any(isinstance(x, bool) or not isinstance(x, int) or x < 1 for x in (n, per)):
            raise ConfigError(f"--set partition.{p.get('name')}: nodes and nodes_per_rack must be integers >= 1, got "
                              f"nodes = {n!r}, nodes_per_rack = {per!r}")
        racks += -(-n // per)
    rpc = int(topo["rack_positions_per_cdu"])
    n_pos = int(topo["n_cdus"]) * rpc
    missing = sorted(int(q) for q in topo.get("missing_rack_positions", []))
    populated = [q for q in range(n_pos) if q not in set(missing)]
    if racks <= len(populated):
        missing = sorted(missing + populated[racks:])
    else:
        extra = racks - len(populated)
        fill = min(extra, len(missing))
        missing, extra = missing[fill:], extra - fill
        if extra:
            new = -(-extra // rpc)
            topo["n_cdus"] = int(topo["n_cdus"]) + new
            missing += list(range(n_pos + extra, n_pos + new * rpc))
    topo["missing_rack_positions"] = missing
    if "n_nodes" in topo:
        topo["n_nodes"] = sum(int(p["nodes"]) for p in d["partition"])


def _derived_file(src: Path, data: dict, texts: list[str]) -> Path:
    """Write a changed description, content-addressed, under ``<cache root>/derived``; return its path."""
    from jobs.cachedirs import cache_root, private_dir, write_entry

    body = toml_dumps(data)
    head = (f"# derived from {src} by --set {' --set '.join(texts)}\n"
            "# (scheduler_sim.app.overrides; content-addressed: the name holds the SHA-256 of this text)\n")
    text = head + body
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    folder = private_dir(cache_root() / "derived")
    path = folder / f"{src.stem}+set-{digest}.toml"
    if not path.is_file():
        write_entry(path, text.encode())
    return path


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def toml_dumps(data: dict) -> str:
    """TOML text of a dict of tables, scalars and arrays (inline tables inside arrays), read back equal by tomllib.

    Parameters
    ----------
    data : dict
        Tables (dicts) of str keys to bool, int, float (inf / nan too), str, lists and dicts.

    Returns
    -------
    str
        TOML v1.0 text.

    Notes
    -----
    Raises TypeError for a value that TOML cannot hold (e.g. None).
    """
    lines: list[str] = []

    def table(d: dict, name: str) -> None:
        scalars = [(k, v) for k, v in d.items() if not isinstance(v, dict)]
        subs = [(k, v) for k, v in d.items() if isinstance(v, dict)]
        if name and (scalars or not subs):
            lines.append(f"\n[{name}]")
        for k, v in scalars:
            lines.append(f"{json.dumps(k)} = {_toml_value(v)}")
        for k, v in subs:
            table(v, f"{name}.{json.dumps(k)}" if name else json.dumps(k))

    table(data, "")
    return "\n".join(lines) + "\n"
