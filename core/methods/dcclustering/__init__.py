"""DC-Clustering: the seam (:mod:`.method`), the clustering of the collaboration rows (:mod:`.data_clustering`) and
the keyed-hash row linkage of vertical splits (:mod:`.row_linkage`)."""

from .method import DCClustering

__all__ = ["DCClustering"]
