"""The KV cache as a pool of fixed-size blocks: what the batching simulator's scheduler allocates.

PagedAttention (Kwon et al. 2023; vLLM's `KVCacheManager`): a request holds
ceil(cached tokens / block size) blocks, takes one more when its cache crosses a block's
end, and gives them all back when it finishes or is preempted. A pool without a total
(`total=None`) never runs out: the simulator's slot-only scheduler of before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

BLOCK_TOKENS = 16  # vLLM's default block size (CacheConfig.block_size)


def blocks_for(tokens: float, size: int) -> int:
    """Blocks that hold `tokens` tokens of cache."""
    return math.ceil(tokens / size)


@dataclass
class BlockPool:
    total: int | None  # blocks in the pool (None: unbounded)
    size: int = BLOCK_TOKENS  # tokens per block
    held: dict[int, int] = field(default_factory=dict)  # request id -> blocks it holds
    used: int = 0  # blocks held by all requests
    peak: int = 0  # most blocks held at once

    def __post_init__(self):
        if self.size < 1:
            raise ValueError(f"a block holds at least one token, not {self.size}")
        if self.total is not None and self.total < 1:
            raise ValueError(f"a pool needs at least one block, not {self.total}")

    @property
    def bounded(self) -> bool:
        return self.total is not None

    @property
    def free(self) -> float:
        return math.inf if self.total is None else self.total - self.used

    def extra(self, rid: int, tokens: float) -> int:
        """Blocks request `rid` lacks to hold `tokens` tokens."""
        return max(0, blocks_for(tokens, self.size) - self.held.get(rid, 0))

    def fits(self, rid: int, tokens: float) -> bool:
        return self.extra(rid, tokens) <= self.free

    def grow(self, rid: int, tokens: float) -> None:
        """Give request `rid` the blocks for `tokens` tokens; the caller checked that they fit."""
        extra = self.extra(rid, tokens)
        assert extra <= self.free, (rid, tokens, extra, self.free)
        self.held[rid] = self.held.get(rid, 0) + extra
        self.used += extra
        self.peak = max(self.peak, self.used)

    def release(self, rid: int) -> int:
        """Free every block of request `rid`; returns how many."""
        n = self.held.pop(rid, 0)
        self.used -= n
        return n
