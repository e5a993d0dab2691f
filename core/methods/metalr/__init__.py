"""Meta-analysed logistic regression: the seam (:mod:`.method`), a site's penalised logistic regression with its
covariance (:mod:`.site_logit`), the fixed-effect combination with heterogeneity (:mod:`.fixed_effect`), random
effects and each site's empirical-Bayes coefficients (:mod:`.random_effects`), and the shared model's out-of-fold
predictions at the site (:mod:`.shared_oof`)."""

from .method import MetaLR

__all__ = ["MetaLR"]
