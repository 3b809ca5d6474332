"""hpctwin's scheduler simulator: event kernel, policies, metrics, HDF5 output, command line and MPI sweeps.

The kernel (:mod:`scheduler_sim.core`) orders events; the platform (:mod:`scheduler_sim.simulation`) runs jobs on
nodes and couples the power chain and the cooling plant; policies (:mod:`scheduler_sim.policies`) only decide.
"""

__version__ = "0.1.0"
