"""The outcomes of a generated input and their ``Tally`` (pkm_control.fuzz): shared by the campaigns and the
report, so that neither imports the other for them."""

from __future__ import annotations

from dataclasses import dataclass, field

ACCEPTED, REJECTED, CRASH, NAN, VIOLATION = "accepted", "rejected", "crash", "nan", "violation"
FAILURES = (CRASH, NAN, VIOLATION)


@dataclass
class Tally:
    """Outcome counts of one campaign and its first failing input (the minimal one once shrunk)."""

    name: str
    counts: dict = field(default_factory=lambda: dict.fromkeys((ACCEPTED, REJECTED, *FAILURES), 0))
    first_failure: tuple | None = None        # (kind, input as text, detail)

    @property
    def tried(self) -> int:
        return sum(self.counts.values())

    @property
    def failures(self) -> int:
        return sum(self.counts[k] for k in FAILURES)

    def add(self, kind: str, text: str, detail: str) -> None:
        self.counts[kind] += 1
        if kind in FAILURES and self.first_failure is None:
            self.first_failure = (kind, text, detail)

    def as_dict(self) -> dict:
        out = {"tried": self.tried, **self.counts}
        if self.first_failure:
            out["first_failure"] = dict(zip(("kind", "input", "detail"), self.first_failure))
        return out
