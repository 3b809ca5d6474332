"""EASY backfilling (aggressive backfilling with a single reservation).

References
----------
D. Lifka, "The ANL/IBM SP scheduling system", JSSPP 1995, LNCS 949, pp. 295-303.
A. Mu'alem and D. Feitelson, "Utilization, predictability, workloads, and user runtime estimates in scheduling
the IBM SP2 with backfilling", IEEE TPDS 12(6), 2001 (the algorithm as written here: shadow time and extra nodes).
"""

from __future__ import annotations

from .base import BasePolicy, SchedulerView

__all__ = ["EASY", "shadow_time"]


def shadow_time(view: SchedulerView, need: int, free: int, started: list[int] = ()) -> tuple[float, int]:
    """Earliest time the head job can start, from running jobs' REQUESTED times, and the spare nodes then.

    Parameters
    ----------
    view : SchedulerView
        The platform now.
    need : int
        Nodes the head job needs (> ``free``).
    free : int
        Nodes free now (after the jobs already chosen in this pass).
    started : list of int
        Jobs chosen to start now in this pass; they are expected to end at now + estimate.

    Returns
    -------
    shadow_s : float
        Reservation time of the head job [s] (``inf`` if the running jobs never free enough nodes, e.g. while
        nodes are down).
    extra : int
        Nodes free at ``shadow_s`` beyond what the head job needs (may be used by backfilled jobs that run past
        the shadow time).
    """
    ends = [(view.expected_end_s(j), j) for j in view.running]
    ends += [(view.now_s + float(view.estimate_s[j]), j) for j in started]
    ends.sort()
    avail = free
    for t_end, j in ends:
        avail += int(view.nodes[j])
        if avail >= need:
            return t_end, avail - need
    return float("inf"), 0


class EASY(BasePolicy):
    """EASY backfill: FCFS order, one reservation for the queue head, backfill that never delays it.

    1. Start jobs from the head of the queue while they fit.
    2. The first job that does not fit gets a reservation at the shadow time (:func:`shadow_time`), computed from
       the running jobs' requested wall times (jobs are killed when they reach it, so the reservation is safe).
    3. Every later job that fits now is started if it ends (by its requested time) no later than the shadow time,
       or if it needs no more than the extra nodes (which it then consumes).
    """

    name = "easy"
    description = "EASY backfill: FCFS with one reservation for the queue head; later jobs backfill if they don't delay it."

    def schedule(self, view: SchedulerView) -> list[int]:
        """Return the jobs to start now (see the class docstring and :meth:`BasePolicy.schedule`)."""
        free = view.free_nodes
        out: list[int] = []
        queue = view.queue
        i = 0
        while i < len(queue) and int(view.nodes[queue[i]]) <= free:
            free -= int(view.nodes[queue[i]])
            out.append(queue[i])
            i += 1
        if i >= len(queue) or free == 0:
            return out
        head = queue[i]
        shadow, extra = shadow_time(view, int(view.nodes[head]), free, out)
        now = view.now_s
        for j in queue[i + 1:]:
            n = int(view.nodes[j])
            if n > free:
                continue
            if now + float(view.estimate_s[j]) <= shadow:
                out.append(j)
                free -= n
            elif n <= extra:
                out.append(j)
                free -= n
                extra -= n
            if free == 0:
                break
        return out

