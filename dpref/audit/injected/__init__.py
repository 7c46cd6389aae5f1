"""Exact audits of noise-injectable targets: recover the linear structure by scripting the
noise, verify it on probes, and compute the exact loss.
"""
