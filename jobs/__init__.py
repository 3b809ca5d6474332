"""Canonical job and request tables (:mod:`jobs.table`, :mod:`jobs.requests`) shared by loaders and the simulator."""
