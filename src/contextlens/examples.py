"""The seeds' worked example and a few labelled sentences, written for this project."""

from __future__ import annotations

WORKED_EXAMPLE: tuple[str, str] = (
    "The [bank] called about my account.",
    "The river [bank] flooded last night.",
)

# Several sentences per sense: one pair alone can mislead (with minilm a same-sense pair of
# "bank" can score below a cross-sense pair), a handful per sense does not.
BANK_BY_SENSE: tuple[tuple[str, str], ...] = (
    ("finance", "The [bank] called about my account."),
    ("finance", "She deposited her salary at the [bank] on Monday."),
    ("finance", "The [bank] approved the loan for the new house."),
    ("finance", "He works as a teller at a small [bank] downtown."),
    ("river", "The river [bank] flooded last night."),
    ("river", "We had a picnic on the grassy [bank] of the stream."),
    ("river", "The fisherman sat on the muddy [bank] all afternoon."),
    ("river", "Reeds grew thick along the [bank] where the water was shallow."),
)
