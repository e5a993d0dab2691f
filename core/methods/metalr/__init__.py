"""Meta-analysed logistic regression: the seam (:mod:`.method`), a site's penalised logistic regression with its
covariance (:mod:`.site_logit`) and the fixed-effect combination with heterogeneity (:mod:`.fixed_effect`)."""

from .method import MetaLR

__all__ = ["MetaLR"]
