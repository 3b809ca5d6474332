"""Analysis of run files.

Job -> PUE attribution (:mod:`.attribution`), run-to-run comparison (:mod:`.compare`) and the HTML report
(:mod:`.report`).

Reads files through :mod:`scheduler_sim.io`; imports nothing from :mod:`scheduler_sim.app`.
"""
