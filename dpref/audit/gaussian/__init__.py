"""The approximate-DP (μ-GDP, ρ-zCDP, (ε, δ)) audit: claims and bounds, half-line events, the
Gaussian output law of a reference and the L2 algebra of linear releases.
"""
