"""Builders of small fixtures in the exact layouts of PM100, F-DATA, Adastra and Lassen (LAST).

The real datasets are not shipped; these tables copy their column names and dtypes (see
dataloaders/power_datasets.py for the sources and how sure we are of each layout). Each holds quirks: a missing
value, an unsorted or duplicated record, odd units or zones, a 1970 placeholder time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


def write_pm100(path: Path) -> Path:
    """PM100 job_table.parquet: 5 rows (one duplicate id, one without power, unsorted, tz-naive timestamps)."""
    ts = pd.to_datetime
    df = pd.DataFrame({
        "job_id": np.array([11, 10, 12, 11, 13], dtype=np.int64),
        "submit_time": ts(["2020-05-01 10:00:00", "2020-05-01 09:00:00", "2020-05-01 11:00:00",
                           "2020-05-01 10:00:00", "2020-05-01 12:00:00"]),
        "start_time": ts(["2020-05-01 10:00:20", "2020-05-01 09:10:00", "2020-05-01 11:00:00",
                          "2020-05-01 10:00:20", "2020-05-01 12:00:00"]),
        "end_time": ts(["2020-05-01 10:01:20", "2020-05-01 09:11:00", "2020-05-01 11:00:40",
                        "2020-05-01 10:01:20", "2020-05-01 11:59:00"]),
        "time_limit": np.array([60, 30, 1440, 60, 10], dtype=np.int64),  # minutes
        "run_time": np.array([60, 60, 40, 60, -1], dtype=np.int64),
        "num_nodes_alloc": np.array([2, 1, 4, 2, 1], dtype=np.int64),
        "user_id": np.array([7, 8, 7, 7, 9], dtype=np.int64),
        "group_id": np.array([1, 2, 1, 1, 3], dtype=np.int64),
        "partition": ["p1", "p2", "p1", "p1", "p1"],
        "job_state": ["COMPLETED", "TIMEOUT", "CANCELLED by 0", "COMPLETED", "WEIRD"],
        "node_power_consumption": [np.array([2000.0, 2400.0, 2200.0]), np.array([900.0, 1100.0, 1000.0]),
                                   None, np.array([1.0]), np.array([], dtype=float)],
    })
    df.to_parquet(path, index=False)
    return path


def write_fugaku(path: Path) -> Path:
    """F-DATA parquet: text jids, one job without nnuma, one without avgpcon, one with a 1970 start placeholder."""
    df = pd.DataFrame({
        "jid": ["a9f", "b17", "c33", "d01"],
        "usr": ["u1", "u2", "u1", "u3"],
        "jnam": ["x", "y", "z", "w"],
        "cnumr": [96, 48, 48, 48],
        "nnumr": [2, 1, 1, 3],
        "nnuma": [2, 1, np.nan, 3],
        "elpl": [3600.0, 600.0, 120.0, 0.0],
        "duration": [1800.0, 600.0, 100.0, 50.0],
        "adt": pd.to_datetime(["2021-04-01 00:00:00", "2021-04-01 00:10:00", "2021-04-01 00:20:00",
                               "2021-04-01 00:30:00"]),
        "sdt": pd.to_datetime(["2021-04-01 00:05:00", "2021-04-01 00:15:00", "2021-04-01 00:25:00",
                               "1970-01-01 00:00:00"]),
        "edt": pd.to_datetime(["2021-04-01 00:35:00", "2021-04-01 00:25:00", "2021-04-01 00:26:40",
                               "2021-04-01 00:31:00"]),
        "econ": [300.0, np.nan, 2.5, 1.0],
        "avgpcon": [600.0, np.nan, 90.0, 270.0],
        "minpcon": [500.0, np.nan, 80.0, 260.0],
        "maxpcon": [700.0, np.nan, 95.0, 280.0],
        "exit state": ["completed", "failed", "completed", "canceled"],
    })
    df.to_parquet(path, index=False)
    return path


def write_adastra(path: Path) -> Path:
    """Adastra MI250 parquet: tz-aware timestamps, node energy arrays, one zero-node row."""
    ts = lambda v: pd.to_datetime(v).tz_localize("Europe/Paris")  # noqa: E731
    df = pd.DataFrame({
        "job_id": np.array([1, 2, 3], dtype=np.int64),
        "user_id": np.array([5, 6, 5], dtype=np.int64),
        "num_nodes_alloc": np.array([2, 1, 0], dtype=np.int64),
        "run_time": np.array([100, 50, 10], dtype=np.int64),
        "time_limit": np.array([3600, 600, 60], dtype=np.int64),
        "submit_time": ts(["2024-05-01 08:00:00", "2024-05-01 08:01:00", "2024-05-01 08:02:00"]),
        "start_time": ts(["2024-05-01 08:00:00", "2024-05-01 08:02:00", "2024-05-01 08:02:00"]),
        "end_time": ts(["2024-05-01 08:01:40", "2024-05-01 08:02:50", "2024-05-01 08:02:10"]),
        "job_state": ["COMPLETED", "FAILED", "COMPLETED"],
        "priority": np.array([1, 1, 1], dtype=np.int64),
        "node_power_consumption": [np.array([60000.0, 60000.0]), np.array([25000.0]), np.array([1.0])],
    })
    df.to_parquet(path, index=False)
    return path


def write_lassen(folder: Path) -> Path:
    """LAST allocation + node history CSVs: one job without node rows, a negative energy, DST-free local times."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "final_csm_allocation_history_hashed.csv").write_text(
        "allocation_id,primary_job_id,secondary_job_id,job_submit_time,begin_time,end_time,num_nodes,time_limit,"
        "hashed_user_id,exit_status,queue\n"
        "501,9001,0,2019-08-01 10:00:00.123,2019-08-01 10:00:10,2019-08-01 10:10:10,2,3600,hu1,0,pbatch\n"
        "502,9002,0,2019-08-01 09:00:00,2019-08-01 09:30:00,2019-08-01 09:31:40,1,600,hu2,1,pdebug\n"
        "503,9003,0,2019-08-01 11:00:00,2019-08-01 11:00:00,2019-08-01 11:01:00,1,60,hu2,0,pbatch\n"
        "504,9004,0,,2019-08-01 11:00:00,2019-08-01 11:01:00,1,60,hu2,0,pbatch\n")
    (folder / "final_csm_allocation_node_history.csv").write_text(
        "allocation_id,node_name,energy,gpu_energy,cpu_usage,ib_tx,ib_rx\n"
        "501,lassen1,600000,300000,0,0,0\n"
        "501,lassen2,840000,400000,0,0,0\n"
        "502,lassen7,30000,-1,0,0,0\n"
        "502,lassen7,-5,-1,0,0,0\n")
    return folder
