"""Component library of the cooling plant: every physical relation written once.

Each module holds a component's parameters (SI, each with its source or marked ASSUMPTION), its numpy relation
(vectorised; used by the analytic steady state, the fast plant :mod:`cooling_fmu.quasisteady` and the numpy
mirror :func:`cooling_fmu.modelica.plant_equations`) and its Modelica fragment, generated from the same numbers
and inlined by :func:`cooling_fmu.modelica.generate_plant_modelica` into ONE flat model (rumoca 0.9.13 drops the
modifiers and connections of connected sub-components: docs/cooling.md). Beside each component there is a
validation test against an analytic or published reference, and a test that compiles its fragment in a flat model
and checks it against the numpy relation (``tests/validation/test_components.py``).

==============================  ==========================================  =========================================
relation                        numpy function                              Modelica fragment
==============================  ==========================================  =========================================
secondary (CDU) pump flow       :func:`pump.secondary_flow_fraction`        :func:`pump.secondary_flow_expr`
pump shaft-load fraction        :func:`pump.shaft_load_fraction`            :func:`pump.shaft_load_expr`
pump staging                    :func:`pump.pumps_running`                  :func:`pump.pumps_running_expr`
pump electrical power           :func:`pump.pump_power_W`                   :func:`pump.pump_power_expr`
valve opening                   :func:`valve.valve_opening`                 :func:`valve.valve_opening_expr`
valve load feed-forward         :func:`valve.feedforward_opening`           :func:`valve.feedforward_opening_expr`
integrator with anti-windup     :func:`valve.integrator_rate`               :func:`valve.integrator_rate_expr`
dp set-point reset              :func:`valve.reset_factor`                  :func:`valve.reset_factor_expr`
counterflow HX (CDU, IHX)       :func:`hx.counterflow_eps`                  :func:`hx.counterflow_equations`
tower-water flow rule           :func:`pipe.tower_water_fraction`           :func:`pipe.tower_water_fraction_expr`
tower effectiveness (Merkel)    :func:`tower.merkel_effectiveness`          :func:`tower.merkel_effectiveness_expr`
inverse: fan flow for eps       :func:`tower.fan_fraction_for_effectiveness` (steady state and fast plant only)
cell staging                    :func:`tower.cells_running`                 :func:`tower.cells_running_expr`
fan affinity law                :func:`tower.fan_power_W`                   :func:`tower.fan_power_expr`
tower bypass                    :func:`tower.bypass`                        :func:`tower.bypass_equations`
saturated exit air              :func:`tower.exit_air`                      :func:`tower.exit_air_fragment`
saturated moist air             :func:`moist_air.sat_air`                   :func:`moist_air.sat_air_equations`
drift, blowdown, make-up        :func:`tower.water_use`                     :func:`tower.water_use_equations`
tower v5: Braun eps-NTU         :func:`tower.braun_effectiveness`           :func:`tower.braun_equations`
tower v5: sizing at design wb   :func:`tower.size_braun_c`                  (parameter, written in as a literal)
cell staging, hysteresis        :class:`staging.CellStager`                 (supervisory, Python; an FMU input)
trim chiller                    :func:`chiller.trim_chiller`                :func:`chiller.trim_chiller_equations`
dry cooler                      :func:`drycooler.dry_cooler`                :func:`drycooler.dry_cooler_equations`
CRAH coil                       :func:`crah.crah`                           :func:`crah.crah_equations`
==============================  ==========================================  =========================================
"""

from __future__ import annotations

from . import chiller, crah, drycooler, hx, moist_air, pipe, pump, staging, tower, valve

__all__ = ["chiller", "crah", "drycooler", "hx", "moist_air", "pipe", "pump", "staging", "tower", "valve"]
