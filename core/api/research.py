"""For experiments only (``benchmarks/``; see :mod:`core.api`): the methods' algorithms and the building blocks
behind them, the file formats' internals the fuzzing and kill benchmarks take apart, and the site's round pieces a
benchmark runs without files. The app and the command line never import it. Heavy: it loads every method's
algorithm (torch, scikit-learn)."""

from ..data.encoding import encoded_means, encoded_scales
from ..data.harmony import unit_warnings
from ..data.public_stats import SHARE_FLOOR
from ..formats import envelope
from ..formats.anchor import extended_smote, statistics_seed
from ..formats.envelope import TRAILER_LEN, Payload, open_sealed, seal
from ..formats.fields import SCHEMAS, site_rows
from ..formats.kit import SIGNATURE_DOMAIN as KIT_SIGNATURE_DOMAIN
from ..learn import own_cv
from ..learn.alignment import AnchorBasis, DCAlignment
from ..learn.client_clustering import LabelDistributionClustering
from ..learn.clinical_metrics import _delong_components as delong_components
from ..learn.clinical_metrics import calibration_fit, delong
from ..learn.cluster_models import adjust_proba, prior_logit, train_cluster_models
from ..learn.local_model import fit_local_model, local_predict_proba
from ..learn.mlp import BatchedMLP, MLPWeights, average_weights, init_weights
from ..learn.own_cv import cross_validate_own
from ..learn.reduction import AffineMap
from ..methods.dc_analysis import derived_seed, site_order
from ..methods.dc_site import site_map
from ..methods.dccfl import DC, DCCFL
from ..methods.dcclustering import DCClustering
from ..methods.dcclustering.data_clustering import DataClustering, kmeans, knn_affinity, spectral_embedding
from ..methods.feddag import FedDAG
from ..methods.feddag import similarity as feddag_similarity
from ..methods.gold import Gold
from ..methods.gold import cpl as gold_cpl
from ..methods.gold.cpl import GUARDS as GOLD_GUARDS
from ..methods.hfldd import HFLDD
from ..methods.hfldd.kip import (
    KIPSettings,
    anchor_whitening,
    distill_sites,
    kl_clusters,
    kl_matrix,
    krr_predict,
    local_soft_labels,
    nn_disclosure,
)
from ..methods.hfldd.near_copies import keep_apart, spacing_of
from ..methods.metalr import MetaLR
from ..methods.metalr import private_site as metalr_private_site
from ..methods.metalr.fixed_effect import stratified
from ..methods.metalr.random_effects import posterior, prior_without
from ..methods.metalr.site_logit import fit_site_logit
from ..methods.metalr.site_logit import predict_proba as site_logit_proba
from ..methods.promise import CHECK_SHARE, export_with_check, own_model_state, proba_of, promised_columns
from ..parallel import one_blas_thread
from ..participant import apply_checked, check_package, hash_ids, package_limits
from ..privacy.assessment import assess_export

__all__ = ["CHECK_SHARE", "DC", "DCCFL", "GOLD_GUARDS", "HFLDD", "KIT_SIGNATURE_DOMAIN", "SCHEMAS", "SHARE_FLOOR",
           "TRAILER_LEN",
           "AffineMap", "AnchorBasis", "BatchedMLP", "DCAlignment", "DCClustering", "DataClustering", "FedDAG", "Gold",
           "KIPSettings", "LabelDistributionClustering", "MLPWeights", "MetaLR", "Payload", "adjust_proba",
           "anchor_whitening", "apply_checked", "assess_export", "average_weights", "calibration_fit", "check_package",
           "cross_validate_own", "delong", "delong_components", "derived_seed", "distill_sites", "encoded_means",
           "encoded_scales", "envelope", "export_with_check", "extended_smote", "feddag_similarity", "fit_local_model",
           "fit_site_logit", "gold_cpl", "hash_ids", "init_weights", "keep_apart", "kl_clusters", "kl_matrix",
           "kmeans", "knn_affinity", "krr_predict", "local_predict_proba", "local_soft_labels", "metalr_private_site",
           "nn_disclosure", "one_blas_thread", "open_sealed", "own_cv", "own_model_state", "package_limits",
           "posterior", "prior_logit", "prior_without", "proba_of", "promised_columns", "seal", "site_logit_proba",
           "site_map", "site_order", "site_rows", "spacing_of", "spectral_embedding", "statistics_seed", "stratified",
           "train_cluster_models", "unit_warnings"]
