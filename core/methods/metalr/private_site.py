"""``meta-lr``'s site side under the formal option (``privacy_epsilon``), and how the combination takes its noise.

The site releases its logistic regression with central (ε, δ)-DP (:mod:`.private_fit`: objective perturbation in
the kit's public units, the covariance of a public model, and the covariance of the noise itself); every kit class
is fitted, so which classes a site has does not leak, and the fit's iteration count does not ship. The analyst
weights each site by the inverse of V + N (:func:`total_covariance`): the noise is part of the estimate's
uncertainty, so a noisier site counts less and the combined intervals include the noise.
"""

from __future__ import annotations

import numpy as np

from ...control import JobControl, ensure
from ...errors import ConfigError
from ...privacy.mechanism import default_delta
from ...privacy.protective import protective_rng
from ..base import Disclosure, SiteExport, SiteInput
from ..settings import Setting
from .private_fit import NOT_COVERED, fit_private_logit

PRIVATE_SETTINGS = (
    Setting("privacy_epsilon", "float", None, "formal privacy: what leaves (coefficients and covariances) is "
            "(ε, δ)-differentially private for every row (objective perturbation, noise added once for the site); "
            "smaller ε = more noise", label="Formal privacy (ε)", low=0.01, high=100.0, optional=True,
            none_help="off", side="site", advanced=True),
    Setting("privacy_delta", "float", None, "formal privacy: the δ of (ε, δ)", label="Formal privacy (δ)",
            low=1e-15, high=1e-3, optional=True, none_help="min(1e-5, 1/rows²)", side="site", advanced=True),
)


def total_covariance(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """V + N: a site's covariance with its formal noise's own covariance added (N = 0 without the option)."""
    cov = np.asarray(arrays["cov"], dtype=np.float64)
    noise = arrays.get("noise_cov")
    return cov if noise is None else cov + np.asarray(noise, dtype=np.float64)


def private_site_compute(site: SiteInput, control: JobControl | None = None) -> SiteExport:
    """The formal option's export: ``coef`` (K − 1, p), ``cov`` and ``noise_cov`` (d, d), the row count and the
    accounting (``privacy``)."""
    control = ensure(control)
    X = np.asarray(site.X, dtype=np.float64)
    n, m = X.shape
    K = len(site.classes)
    if site.scale is None or site.centre is None or len(site.scale) != m or len(site.centre) != m:
        raise ConfigError("the formal privacy option (privacy_epsilon) needs the kit's public mean and spread of "
                          "every column, which this kit does not publish; ask the analyst for a kit made with "
                          "--statistics, or export without privacy_epsilon")
    settings = site.settings or {}
    delta = default_delta(n) if settings.get("privacy_delta") is None else float(settings["privacy_delta"])
    control.step(0.1, "fitting the formally private logistic regression")
    fit = fit_private_logit(X, np.asarray(site.y, np.int64), K, epsilon=float(settings["privacy_epsilon"]),
                            delta=delta, centre=np.asarray(site.centre, np.float64),
                            scale=np.asarray(site.scale, np.float64), rng=protective_rng())
    acc = fit.accounting
    q, p = K - 1, m + 1
    privacy = {k: acc[k] for k in ("epsilon", "delta", "mechanism", "adjacency", "composition")}
    privacy.update(sigma=acc["sigma"], not_covered=list(NOT_COVERED))
    manifest = {"n_rows": n, "n_features": m, "n_classes": K, "estimate": "fitted", "ridge": acc["ridge"],
                "penalty_scale": "public", "privacy": privacy}
    arrays = {"coef": np.ascontiguousarray(fit.coef), "cov": np.ascontiguousarray(fit.cov),
              "noise_cov": np.ascontiguousarray(fit.noise_cov)}
    d = q * p
    disclosures = [
        Disclosure("coef", (q, p), "float64", f"the {q} × {p} coefficients of a logistic regression of your rows, "
                   f"noised for (ε = {acc['epsilon']:g}, δ = {acc['delta']:.1e})-differential privacy",
                   "how strongly each column goes with each class, with noise that hides any one row"),
        Disclosure("cov", (d, d), "float64", "the covariance of a public model of those coefficients (a function of "
                   "your row count and public numbers only)", "how precise the coefficients are, from your row count"),
        Disclosure("noise_cov", (d, d), "float64", "the covariance of the added noise (public numbers only)",
                   "how much noise was added"),
        Disclosure("n_rows", (1,), "number", "how many rows you have", "your row count")]
    plain = (f"{q * p} noised coefficients of a logistic regression of your {n:,} rows, two covariance matrices "
             f"computed from your row count and public numbers only, and that row count. Formal privacy: what leaves "
             f"is (ε = {acc['epsilon']:g}, δ = {acc['delta']:.1e})-differentially private for every row "
             f"({acc['mechanism']}). Not covered: {'; '.join(NOT_COVERED)}. No row, no names, no labels.")
    control.step(1.0, "done")
    return SiteExport(arrays, manifest, {}, {"estimate": "fitted"}, disclosures,
                      ["your data file and every original value in it", "the class of every row"], plain)
