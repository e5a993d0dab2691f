"""Building blocks of the federated-learning benchmarks: label-skew partitions, dataset loading and
in-process simulations of the multi-round baselines (FedAvg, FedProx, Ditto, FedClust, Local).

Nothing here is part of the one-shot protocol itself; it exists to reproduce the DC-CFL experiments
(paper §5) against which DC Studio's methods are compared.
"""
