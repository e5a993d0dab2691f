"""Baselines the benchmarks compare DC Studio with: FedAvg, FedProx, Ditto, FedClust, Local (``fl``), federated
k-means (``federated_kmeans``) and k-FED (``kfed``). None of them is part of the product."""
