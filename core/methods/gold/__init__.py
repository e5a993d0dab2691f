"""GOLD (federated clustering by competitive penalised learning): the seam (:mod:`.method`) and FCPL/MCPL/REMC
(:mod:`.cpl`)."""

from .method import Gold

__all__ = ["Gold"]
