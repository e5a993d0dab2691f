"""External clustering metrics of the DC-Clustering paper (§5.1): ARI (eq. 21), NMI (eq. 22), ACC (eq. 23).

NMI uses the geometric-mean normalisation I(Ŷ; Y) / √(H(Ŷ) H(Y)) as in the paper (scikit-learn's default is
the arithmetic mean). ACC is the accuracy under the best one-to-one mapping of predicted clusters to true
classes (Hungarian algorithm on the contingency table); with more clusters than classes the unmatched
clusters count as wrong.
"""

from __future__ import annotations

import numpy as np


def ari(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    from sklearn.metrics import adjusted_rand_score

    return float(adjusted_rand_score(y_true, y_pred))


def nmi(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    from sklearn.metrics import normalized_mutual_info_score

    return float(normalized_mutual_info_score(y_true, y_pred, average_method="geometric"))


def acc(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    from scipy.optimize import linear_sum_assignment

    t = np.unique(y_true, return_inverse=True)[1]
    p = np.unique(y_pred, return_inverse=True)[1]
    table = np.zeros((p.max() + 1, t.max() + 1), dtype=np.int64)
    np.add.at(table, (p, t), 1)
    rows, cols = linear_sum_assignment(-table)
    return float(table[rows, cols].sum() / len(t))


def clustering_scores(y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, float]:
    """{"ARI", "NMI", "ACC"} of a predicted labelling against the truth."""
    return {"ARI": ari(y_true, y_pred), "NMI": nmi(y_true, y_pred), "ACC": acc(y_true, y_pred)}
