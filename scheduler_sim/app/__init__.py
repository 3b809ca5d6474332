"""The application: the top layer; nothing in scheduler_sim imports it.

Validated run configuration (:mod:`.config`), one run end to end (:mod:`.runner`), MPI sweeps (:mod:`.sweep`), the
twin in the loop (:mod:`.twin`), cooling-only mode's output (:mod:`.cooling`) and the ``hpctwin`` command line
(:mod:`.cli`).
"""
