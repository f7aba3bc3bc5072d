"""Comparing runs: `coevo-compare` groups run directories by curriculum (or any config key)
and gives each group's per-seed figures, IQM with stratified-bootstrap 95 % intervals,
α-CVaR and the probability of improvement over a baseline group (coevo.compare.stats)."""
