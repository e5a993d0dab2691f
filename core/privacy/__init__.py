"""The site's measured disclosure score (issue #24): attacks, limits, assessment, formal noise. No Qt."""

from .assessment import AttackFinding, PrivacyAssessment, assess_export
from .thresholds import PrivacyThresholds, parse_threshold_args

__all__ = ["AttackFinding", "PrivacyAssessment", "PrivacyThresholds", "assess_export", "parse_threshold_args"]
