"""Scripts behind records in docs/results/hfldd/rbf_matching/."""
