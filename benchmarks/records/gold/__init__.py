"""Scripts behind records in docs/results/gold/."""
