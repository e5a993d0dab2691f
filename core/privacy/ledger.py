"""The ε ledger: how much formal privacy a site has spent on a project, export by export.

Every export draws fresh noise, so two exports of the same rows under (ε, δ) each are (2ε, 2δ)-DP together (basic
sequential composition, Dwork & Roth 2014 Thm 3.16): the budget adds up. The ledger is read from the signed state
every export keeps in the workspace (``state.json``, core/formats/signed_state.py: it records the export's
accounting as ``formal``), so it cannot be edited unnoticed, and it survives ``audit new`` (which starts a new log
but never removes an export); an export whose state records no ``formal`` (none, or one written before the ledger)
counts as unbounded. An export without the formal option has no bound at all: after one, no total ε holds for the
project's rows.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Ledger:
    """One project's exports at this site: how many, how many formal, the ε and δ they spent, how many unbounded."""

    project_id: str
    exports: int = 0
    formal: int = 0
    epsilon: float = 0.0
    delta: float = 0.0
    unbounded: int = 0

    def to_dict(self) -> dict:
        return {"project": self.project_id, "exports": self.exports, "formal": self.formal,
                "epsilon": self.epsilon, "delta": self.delta, "unbounded": self.unbounded}

    def lines(self, adding: dict | None = None, formal_export: bool = False) -> list[str]:
        """Plain sentences shown before the next export (CLI and wizard); ``adding``: this export's accounting."""
        if not self.exports:
            spent = "no earlier export of this project from this workspace"
        else:
            parts = []
            if self.formal:
                parts.append(f"{self.formal} with formal privacy (ε = {self.epsilon:g}, δ = {self.delta:.1e} spent)")
            if self.unbounded:
                parts.append(f"{self.unbounded} without a formal bound")
            spent = f"{self.exports} earlier export(s) of this project: " + ", ".join(parts)
        out = [f"privacy budget: {spent}"]
        if adding:
            eps, delta = self.epsilon + float(adding["epsilon"]), self.delta + float(adding["delta"])
            out.append(f"this export adds ε = {float(adding['epsilon']):g}, δ = {float(adding['delta']):.1e}: "
                       + (f"ε = {eps:g}, δ = {delta:.1e} in total (fresh noise each time: the budgets add up)"
                          if not self.unbounded else "no total ε holds, since an earlier export had no formal bound"))
        elif formal_export is False and self.formal:
            out.append("this export has no formal bound: after it no total ε holds for this project's rows")
        return out


def export_accounting(entry: dict) -> dict | None:
    """The formal accounting an export's state (or its ``export`` audit entry) records, or None (no formal
    option)."""
    formal = entry.get("formal")
    ok = isinstance(formal, dict) and isinstance(formal.get("epsilon"), int | float) \
        and isinstance(formal.get("delta"), int | float)
    return formal if ok else None


def spent(states: list[dict], project_id: str) -> Ledger:
    """The ledger of ``project_id`` from its exports' signed states (:meth:`SiteWorkspace.export_states`)."""
    out = Ledger(project_id)
    for e in states:
        if not isinstance(e, dict):
            continue
        out.exports += 1
        acc = export_accounting(e)
        if acc is None:
            out.unbounded += 1
        else:
            out.formal += 1
            out.epsilon += float(acc["epsilon"])
            out.delta += float(acc["delta"])
    return out
