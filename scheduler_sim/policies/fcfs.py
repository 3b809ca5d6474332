"""First-come, first-served without backfilling."""

from __future__ import annotations

from .base import BasePolicy, SchedulerView

__all__ = ["FCFS"]


class FCFS(BasePolicy):
    """Start queued jobs in arrival order until the first one that does not fit; that job blocks the queue."""

    name = "fcfs"
    description = "First-come first-served; the head of the queue blocks everything behind it (no backfill)."

    def schedule(self, view: SchedulerView) -> list[int]:
        """Return the longest prefix of the queue that fits in the free nodes (see :meth:`BasePolicy.schedule`)."""
        free = view.free_nodes
        out: list[int] = []
        for j in view.queue:
            n = int(view.nodes[j])
            if n > free:
                break
            out.append(j)
            free -= n
        return out
