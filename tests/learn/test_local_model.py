"""The site's own model is the logistic regression a biostatistician would fit: with two classes, exactly
scikit-learn's binary ``LogisticRegression(C=1)`` on the standardised columns (not half as regularised)."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.linear_model import LogisticRegression

from core.learn.local_model import fit_local_model, local_predict_proba


@pytest.mark.parametrize("load, rows", [(load_breast_cancer, 60), (load_iris, 150)])
def test_the_own_model_is_the_standard_penalised_logistic_regression(load, rows):
    X, y = load(return_X_y=True)
    X, y = X[:rows], y[:rows]
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    reference = LogisticRegression(C=1.0, max_iter=10_000, tol=1e-12).fit(Z, y).predict_proba(Z)
    ours = local_predict_proba(fit_local_model(X, y, len(np.unique(y))), X)
    assert np.abs(ours - reference).max() < 1e-3
