"""Replay: start every job at its recorded start time, as the site's own scheduler did."""

from __future__ import annotations

import math

from .base import BasePolicy, SchedulerView

__all__ = ["Replay"]


class Replay(BasePolicy):
    """Start each job at its recorded start time (or as soon after as nodes allow), and run it its recorded time.

    A job whose recorded start is unknown starts at submission. If the simulated machine has fewer free nodes than
    the site had at that moment (a different node count, down nodes), the job waits and starts, in recorded-start
    order, as soon as it fits; the platform counts such delayed starts. Jobs are not killed at their requested
    wall time: the trace's run time is replayed as recorded.
    """

    name = "replay"
    description = "Replay recorded start times and run times (no walltime kill); late only if nodes are missing."
    kills_at_walltime = False

    def wakeup_time(self, job: int, view: SchedulerView) -> float | None:
        """Ask for a scheduling pass at the job's recorded start (if it lies in the future)."""
        t = float(view.recorded_start_s[job])
        return t if math.isfinite(t) and t > view.now_s else None

    def schedule(self, view: SchedulerView) -> list[int]:
        """Return the due jobs (recorded start <= now) in recorded-start order, stopping at the first that does not fit."""
        due = []
        for j in view.queue:
            t = float(view.recorded_start_s[j])
            if not math.isfinite(t) or t <= view.now_s:
                due.append((t if math.isfinite(t) else float(view.submit_s[j]), j))
        due.sort()
        free = view.free_nodes
        out: list[int] = []
        for _, j in due:
            n = int(view.nodes[j])
            if n > free:
                break
            out.append(j)
            free -= n
        return out
