"""The simulation kernel: events, nodes, the platform.

The event heap (:mod:`.core`), the node allocator, the platform that runs jobs on nodes and couples the power chain
and the cooling plant (:mod:`.simulation`), step/interval integration (:mod:`.recorder`), node failures, job metrics
and the run's progress display.

Imports only :mod:`scheduler_sim.policies` and the lower packages (power, cooling_fmu, jobs, dataloaders).
"""
