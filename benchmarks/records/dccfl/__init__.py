"""Scripts behind records in docs/results/dccfl/."""
