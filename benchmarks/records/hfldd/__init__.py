"""Scripts behind records in docs/results/hfldd/."""
