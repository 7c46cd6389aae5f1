"""The pure-DP (ε) privacy-loss audit: neighbouring pairs, candidate events, the sampled audit,
the exact loss of built-in mechanisms and the L1 algebra of linear releases.
"""
