"""FedDAG (Duan et al.) in one round: the analyst seam (:mod:`.method`), the engine (:mod:`.similarity`)."""

from .method import FedDAG

__all__ = ["FedDAG"]
