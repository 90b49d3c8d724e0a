"""Rounds of visits taken in turn (phone.py, boot_phases.py): every round visits each subject
once, and the order reverses every other round, so none always goes first (onto a cold disk
cache or a CPU still busy with the last visit's compiles)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator


def in_turn(subjects: Iterable[str], rounds: int) -> Iterator[str]:
    """The subjects, sorted, `rounds` times; every second round in reverse."""
    order = sorted(subjects)
    for round_ in range(rounds):
        yield from (reversed(order) if round_ % 2 else order)
