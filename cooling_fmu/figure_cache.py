"""Content-verified cache of the plant's sizing and N+1 figures (a run's headroom block; issue 22 item 10's target).

Each headroom figure of a run (:mod:`scheduler_sim.analysis.headroom`: the capacity at the worst hour and at the
design day, the N+1 cases, the tower cells needed) is a steady-state question about the plant (nested bisections
around Braun's tower relation, :func:`cooling_fmu.modelica.steady_states`): about 1.4 s CPU for one capacity and
0.7 s for one N+1 case on the Theta plant, 10 s or more for the main job's block. The answers depend only on the
plant description, the question's arguments and the code that computes them, so they are cached beside the FMU
the same way as the FMU's stability limit (:func:`cooling_fmu.plant.max_stable_step_s`):

* the key is a SHA-256 of :func:`cooling_fmu.plant.plant_hash` (the generated Modelica source, the source text of
  :mod:`cooling_fmu.modelica` and of the component library, the numpy version), the plant description itself (its
  JSON: fields the Modelica does not carry, such as ``tower.Q_air_side_design_W`` or a pump group's
  ``n_pumps_standby``, change the N+1 answers), the source text of
  :mod:`cooling_fmu.sizing`, :mod:`cooling_fmu.redundancy` and this module, the question's name and its arguments
  written exactly (every float as ``float.hex``);
* an entry is a small JSON file ``<model>-<key16>.<question>.json`` holding the key and a SHA-256 of its payload; it
  is used only when its key is the question's, its digest verifies and folder and file pass the FMU cache's trust
  checks (:mod:`jobs.cachedirs`); anything else is recomputed (and rewritten when the folder is trusted);
* floats round-trip through JSON exactly (``repr``), so a run gives the same figures, to the bit, with or without
  the cache (tested).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .params import PlantParams

__all__ = ["cached_capacity", "cached_cells_needed", "cached_n_plus_one", "figure_key"]


def _exact(value: object) -> str:
    """An exact text form of an argument (floats as ``float.hex``, arrays with their shape)."""
    if value is None:
        return "None"
    if isinstance(value, (bool, int, str)):
        return repr(value)
    a = np.asarray(value, dtype=float)
    return f"{a.shape}:" + ",".join(float(v).hex() for v in a.ravel())


def _source_texts() -> list[str]:
    from . import redundancy, sizing

    return [Path(m.__file__).read_text(encoding="utf-8") for m in (sizing, redundancy)] + [
        Path(__file__).read_text(encoding="utf-8")]


def figure_key(params: PlantParams, question: str, *args: object) -> str:
    """Content key of one figure (module docstring).

    Parameters
    ----------
    params : PlantParams
        The plant.
    question : str
        Name of the question (``"capacity"``, ``"n_plus_one"``, ``"cells_needed"``).
    *args : object
        Its arguments (floats, arrays, ints, None).

    Returns
    -------
    str
        Hex SHA-256.
    """
    from .plant import plant_hash

    h = hashlib.sha256()
    for part in (plant_hash(params), params.model_dump_json(), *_source_texts(), question,
                 *(_exact(a) for a in args)):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def _cached(params: PlantParams, question: str, args: tuple, compute: Callable[[], object],
            encode: Callable[[object], object], decode: Callable[[object], object],
            cache_dir: str | Path | None, use_cache: bool) -> object:
    """The figure from its verified entry, else computed (and written); see the module docstring."""
    if not use_cache:
        return compute()
    from jobs.cachedirs import CacheTrustError, private_dir, read_entry, write_entry

    from .build import default_cache_dir
    from .modelica import model_name_for
    from .plant import _payload_digest as _digest  # the digest of the stability limit's entries

    key = figure_key(params, question, *args)
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    try:
        folder = private_dir(folder, "FMU cache folder")
    except CacheTrustError as exc:  # unverifiable: not used (the figure is computed), and said so
        logging.getLogger("hpctwin.files").warning("warning: plant figure cache not used: %s", exc)
        return compute()
    except OSError:
        return compute()
    path = folder / f"{model_name_for(params)}-{key[:16]}.{question}.json"
    try:
        doc = json.loads(read_entry(path, "plant figure cache entry").decode("utf-8"))
        if doc.get("key") == key and doc.get("sha256") == _digest(doc["value"]):
            return decode(doc["value"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError, CacheTrustError):
        pass
    value = compute()
    enc = encode(value)
    try:
        write_entry(path, json.dumps({"key": key, "question": question, "plant": params.name, "sha256": _digest(enc),
                                      "value": enc}, indent=1).encode("utf-8"))
    except OSError:  # read-only cache folder: recomputed next time
        pass
    return value


def cached_capacity(params: PlantParams, heat_shape_W: np.ndarray, T_wb_K: float, tol_K: float = 1.0,
                    n_grid: int = 600, cache_dir: str | Path | None = None, use_cache: bool = True) -> object:
    """:func:`cooling_fmu.sizing.plant_capacity`, cached (module docstring).

    Parameters
    ----------
    params : PlantParams
        Plant description.
    heat_shape_W : np.ndarray
        Heat per CDU [W], shape (n_cdu,).
    T_wb_K : float
        Wet-bulb [K].
    tol_K : float
        Allowed supply rise above its set point [K].
    n_grid : int
        Scale factors of the heat shape tried.
    cache_dir : str | Path | None
        Cache folder (default the FMU cache, :func:`cooling_fmu.build.default_cache_dir`).
    use_cache : bool
        False computes without reading or writing the cache.

    Returns
    -------
    cooling_fmu.sizing.Capacity
        The capacity, identical to the uncached call's.
    """
    from .sizing import Capacity, plant_capacity

    return _cached(params, "capacity", (heat_shape_W, float(T_wb_K), float(tol_K), int(n_grid)),
                   lambda: plant_capacity(params, heat_shape_W, T_wb_K, tol_K, n_grid=n_grid),
                   dataclasses.asdict, lambda d: Capacity(**d), cache_dir, use_cache)


def cached_n_plus_one(params: PlantParams, T_wb_design_K: float, heat_W: np.ndarray | None = None,
                      cache_dir: str | Path | None = None, use_cache: bool = True) -> list:
    """:func:`cooling_fmu.redundancy.n_plus_one`, cached (module docstring).

    Parameters
    ----------
    params : PlantParams
        The plant.
    T_wb_design_K : float
        Design wet-bulb [K].
    heat_W : np.ndarray | None
        Heat per CDU [W], shape (n_cdu,); None: the design heat.
    cache_dir : str | Path | None
        Cache folder (default the FMU cache).
    use_cache : bool
        False computes without reading or writing the cache.

    Returns
    -------
    list of cooling_fmu.redundancy.RedundancyCase
        The cases, identical to the uncached call's.
    """
    from .redundancy import RedundancyCase, n_plus_one

    return _cached(params, "n_plus_one", (float(T_wb_design_K), heat_W),
                   lambda: n_plus_one(params, T_wb_design_K, heat_W),
                   lambda cases: [dataclasses.asdict(c) for c in cases],
                   lambda rows: [RedundancyCase(**r) for r in rows], cache_dir, use_cache)


def cached_cells_needed(params: PlantParams, heat_shape_W: np.ndarray, T_wb_K: float, need_W: float,
                        tol_K: float = 1.0, max_extra: int = 8, n_grid: int = 300,
                        cache_dir: str | Path | None = None, use_cache: bool = True) -> int | None:
    """:func:`cooling_fmu.sizing.tower_cells_needed`, cached (module docstring).

    Parameters
    ----------
    params : PlantParams
        Plant description.
    heat_shape_W : np.ndarray
        Heat split over the CDUs [W], shape (n_cdu,).
    T_wb_K : float
        Wet-bulb [K].
    need_W : float
        Heat to reject [W].
    tol_K : float
        Allowed supply rise above its set point [K].
    max_extra : int
        Most cells tried.
    n_grid : int
        Scale factors of each capacity evaluation.
    cache_dir : str | Path | None
        Cache folder (default the FMU cache).
    use_cache : bool
        False computes without reading or writing the cache.

    Returns
    -------
    int or None
        As :func:`~cooling_fmu.sizing.tower_cells_needed`.
    """
    from .sizing import tower_cells_needed

    return _cached(params, "cells_needed", (heat_shape_W, float(T_wb_K), float(need_W), float(tol_K), int(max_extra),
                                            int(n_grid)),
                   lambda: tower_cells_needed(params, heat_shape_W, T_wb_K, need_W, tol_K, max_extra, n_grid=n_grid),
                   lambda k: k, lambda k: None if k is None else int(k), cache_dir, use_cache)
