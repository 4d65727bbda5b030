"""Ranking: fusion of the modalities' lists (fusion.py) and the priors applied once to
the result (priors.py)."""
