"""Component library of the cooling plant: every physical relation written once.

Each module holds a component's parameters (SI, each with its source or marked ASSUMPTION), its numpy relation
(vectorised; used by the analytic steady state, the fast plant :mod:`cooling_fmu.quasisteady` and the numpy
mirror :func:`cooling_fmu.modelica.plant_equations`) and its Modelica fragment, generated from the same numbers
and inlined by :func:`cooling_fmu.modelica.generate_plant_modelica` into ONE flat model (rumoca 0.9.13 drops the
modifiers and connections of connected sub-components: docs/cooling.md). Beside each component there is a
validation test against an analytic or published reference, and a test that compiles its fragment in a flat model
and checks it against the numpy relation (``tests/validation/test_components.py``).

The table of every relation, its numpy function and its Modelica fragment is in docs/cooling.md ("One relation, one
function"); ``tests/validation/test_components.py`` checks it row by row against the code's call graph (the
steady state, the fast plant and the generator reach each row's functions, and the plant uses no component
function the table leaves out). It is kept there only, so that it cannot drift from a copy here.
"""

from __future__ import annotations

from . import chiller, crah, drycooler, hx, moist_air, pipe, pump, staging, tower, valve

__all__ = ["chiller", "crah", "drycooler", "hx", "moist_air", "pipe", "pump", "staging", "tower", "valve"]
