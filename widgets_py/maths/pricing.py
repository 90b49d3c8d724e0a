"""What a request pays: the seconds of a GPU group its phases take, at the group's price per hour.

The accounting of the cost widget (cap15.cost.request_cost), in one place so that the chapter's
exercise on it checks the reader against the same arithmetic: the prefill has the group to
itself, and each of the answer's decode steps is shared by the `concurrency` sequences of its
batch. The seconds themselves are `serving`'s (ttft, decode_step).
"""

from __future__ import annotations

SECONDS_PER_HOUR = 3600


def group_seconds(prefill_s: float, step_s: float, answer: int, concurrency: int) -> float:
    """Seconds of the group one request is charged: its prefill, and 1/concurrency of `answer` steps."""
    return prefill_s + answer * step_s / concurrency


def dollars(seconds: float, dollars_per_hour: float) -> float:
    """The price of `seconds` of a group that costs `dollars_per_hour`."""
    return seconds * (dollars_per_hour / SECONDS_PER_HOUR)
