"""An out-of-tree hpctwin policy: start the smallest queued jobs first (no reservation, no backfill).

It sees only the read-only ``SchedulerView`` and returns decisions (docs/decision_interface.md); it never imports
the kernel. Registered by the entry point in this folder's pyproject.toml, it is ``--policy smallest-first``.
"""

from scheduler_sim.policies import BasePolicy, SchedulerView


class SmallestFirst(BasePolicy):
    """Fewest requested nodes first (ties: arrival order); start every job that still fits."""

    name = "smallest-first"
    description = "smallest jobs first, no backfill (out-of-tree example, examples/policy_plugin)"

    def __init__(self, backfill: str | None = None, **params) -> None:  # the registry's factory signature
        if backfill not in (None, "none") or params:
            raise ValueError("smallest-first takes no backfill and no parameters")
        self.reservations = {}

    def schedule(self, view: SchedulerView) -> list[int]:
        """Jobs to start now, smallest first, while nodes and power budget allow."""
        free, headroom = view.free_nodes, view.power_headroom_W
        starts = []
        for j in sorted(view.queue, key=lambda j: int(view.nodes[j])):  # stable: ties keep arrival order
            if view.fits(j, free, headroom):
                starts.append(j)
                free -= int(view.nodes[j])
                headroom -= float(view.power_W[j]) if view.power_W is not None else 0.0
        return starts
