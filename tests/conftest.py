"""Shared test helpers: tiny systems and job tables built in code (no files)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from jobs.table import validate_job_table

#: The public data folder beside the checkout (../shared/data), present on developer machines and in CI.
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def tiny_system_spec(n_nodes: int = 4, n_cdus: int = 1, racks_per_cdu: int = 1) -> dict:
    """A System spec (power/systems layout) with easy numbers: idle 100 W, max 300 W per node, lossless-ish."""
    per_rack = n_nodes // (n_cdus * racks_per_cdu)
    return {
        "name": "tiny", "description": "test system", "cores_per_node": 1, "cooling_plant": "theta",
        "liquid_fraction": 1.0, "default_cpu_util": 1.0, "default_gpu_util": 0.0,
        "topology": {"n_cdus": n_cdus, "rack_positions_per_cdu": racks_per_cdu, "nodes_per_rack": per_rack,
                     "missing_rack_positions": [], "n_nodes": n_nodes},
        "node": {"cpu_idle_W": 100.0, "cpu_max_W": 300.0, "cpus_per_node": 1},
        "sivoc": {"P_fixed_W": 10.0, "eta": 0.9, "k_per_W": 0.0},
        "rectifier": {"P_fixed_W": 20.0, "eta": 0.95, "k_per_W": 0.0, "nodes_per_rectifier": 2},
        "rack_overhead": {"P_W": 0.0, "side": "dc"},
        "cdu": {"P_own_W": 0.0},
    }


#: A system description file (power/systems layout) of 4 lossless nodes in 1 rack on 1 CDU, Seth's plant: the
#: tiny machine of the command-line tests (write it beside a trace and pass ``--system <dir>/tiny4.toml``).
TINY4_TOML = """name = "tiny4"
description = "4 lossless nodes, 1 rack, 1 CDU"
cores_per_node = 1
cooling_plant = "seth"
liquid_fraction = 1.0
default_cpu_util = 0.5
default_gpu_util = 0.0
[topology]
n_cdus = 1
rack_positions_per_cdu = 1
nodes_per_rack = 4
missing_rack_positions = []
n_nodes = 4
[node]
cpu_idle_W = 100.0
cpu_max_W = 306.0
cpus_per_node = 1
gpus_per_node = 0
[sivoc]
P_fixed_W = 0.0
eta = 1.0
k_per_W = 0.0
[rectifier]
P_fixed_W = 0.0
eta = 1.0
k_per_W = 0.0
nodes_per_rectifier = 4
[rack_overhead]
P_W = 0.0
side = "ac"
"""


def write_tiny4(folder: Path) -> Path:
    """Write :data:`TINY4_TOML` as ``folder/tiny4.toml``; its path."""
    path = Path(folder) / "tiny4.toml"
    path.write_text(TINY4_TOML)
    return path


@pytest.fixture
def tiny_system():
    from power.system import System
    return System.from_spec(tiny_system_spec(), source="tiny")


def make_jobs(rows: list[tuple], origin: float = float("nan")) -> pd.DataFrame:
    """Job table from (job_id, submit_s, nodes, runtime_s, requested_s[, start_s]) tuples; NaN = missing."""
    recs = []
    for r in rows:
        jid, sub, nodes, rt, req = r[:5]
        start = r[5] if len(r) > 5 else float("nan")
        recs.append({
            "job_id": jid, "submit_time_s": float(sub), "requested_walltime_s": float(req), "nodes": nodes,
            "runtime_s": float(rt), "start_time_s": float(start),
            "end_time_s": float(start + rt) if np.isfinite(start) else float("nan"),
            "user": "", "account": "", "queue": "", "status": 1, "cpu_util": float("nan"),
            "gpu_util": float("nan"),
        })
    df = validate_job_table(pd.DataFrame(recs))
    df.attrs["time_origin_unix_s"] = origin
    return df


@pytest.fixture(scope="session")
def fmu_cache(tmp_path_factory):
    """One FMU cache per test session (each plant is built once, ~0.4-1.2 s)."""
    return tmp_path_factory.mktemp("fmu-cache")


def write_weather_study(path: Path, name: str) -> Path:
    """A 2 x 2 study (FCFS / EASY x Golden TMY3 / constant 24 degC wet-bulb) on half a day of the Theta trace."""
    path.write_text(f'name = "{name}"\n[base]\nsystem = "theta"\n'
                    'trace = { window_start_days = 181.0, window_days = 0.5 }\n'
                    'cooling = { step_s = 15.0, T_wb_C = 24.0 }\noutput = { progress = false }\n'
                    '[axes]\n"scheduler.policy" = ["fcfs", "easy"]\n"cooling.weather" = ["tmy3", "constant"]\n')
    return path


def write_power_series(path: Path) -> Path:
    """One day of 15-min IT power samples alternating 1.0 / 1.4 MW (``timestamp_secs,measured_kW``)."""
    t = 1_700_000_000 + 900 * np.arange(96)
    kw = np.where(np.arange(96) % 2, 1400.0, 1000.0)
    path.write_text("timestamp_secs,measured_kW\n" + "\n".join(f"{a},{b:g}" for a, b in zip(t, kw)) + "\n")
    return path


#: Tests that fail on the merged plant v5 (session 6: the air and heat branches merged at the end of the session)
#: and were not re-derived in time. Each is a known defect, listed in that session's closing note; they run and
#: are reported as xfail (or XPASS) until fixed. Nothing else is excused.
KNOWN_PLANT_V5_FAILURES = {
}


def pytest_collection_modifyitems(config, items):
    """Mark the known plant v5 failures (:data:`KNOWN_PLANT_V5_FAILURES`) as xfail, not strict."""
    for item in items:
        reason = KNOWN_PLANT_V5_FAILURES.get(item.nodeid)
        if reason is not None:
            item.add_marker(pytest.mark.xfail(reason=f"known after plant v5: {reason}", strict=False))
