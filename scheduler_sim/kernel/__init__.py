"""The simulation kernel: events, nodes, the platform.

One home per responsibility:

* :mod:`.core` -- the event heap and the clock; :mod:`.events` -- typed events, one handler per kind;
* :mod:`.simulation` -- the platform facade (:class:`~.simulation.Simulation`: run, fork, rollout);
* :mod:`.config` -- its validated options (:class:`~.config.SimulationConfig`, SI);
* :mod:`.jobdata` -- the immutable job data of a run; :mod:`.state` -- all mutable state (a fork deep-copies it);
* :mod:`.window` -- what is in force at the window start; :mod:`.lifecycle` -- start, end, kill, the pass;
* :mod:`.allocator`, :mod:`.placement` -- node ownership and node choice; :mod:`.powercap` -- the power budget;
* :mod:`.view` -- the immutable view a policy decides on; :mod:`.availability` -- known future availability;
* :mod:`.stepfunction`, :mod:`.ledger`, :mod:`.recorder` -- the power step function, exact energies, step and
  interval averages;
* :mod:`.coupler` -- the cooling plant behind the :class:`cooling_fmu.coupling.Plant` protocol;
* :mod:`.results`, :mod:`.metrics` -- the run's result and its metrics; :mod:`.faults`;
* :mod:`.platform` -- what each service may use of the platform (one protocol per service: no service imports
  the simulation); :mod:`.progress` -- the run observers (progress bar, ``--live`` dashboard) and their hook.

Imports only :mod:`scheduler_sim.policies` and the lower packages (power, cooling_fmu, jobs, dataloaders).
Size limits (checked in CI): no class over 300 lines (``tools/check_kernel_size.py``), no function over
cyclomatic complexity 15 (ruff C901).
"""
