"""Which rank runs where: ranks fill the hosts' slots in order, and each
learns its place on its host (local) and among the hosts (cross)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Placement:
    rank: int
    host: str
    local_rank: int
    local_size: int
    cross_rank: int
    cross_size: int


def place_ranks(hosts, np):
    """`np` placements over (name, slots) `hosts`, which hold at least np."""
    used = []
    left = np
    for name, slots in hosts:
        if left == 0:
            break
        take = min(slots, left)
        used.append((name, take))
        left -= take
    placements = []
    for cross_rank, (name, count) in enumerate(used):
        for local_rank in range(count):
            placements.append(Placement(len(placements), name, local_rank,
                                        count, cross_rank, len(used)))
    return placements
