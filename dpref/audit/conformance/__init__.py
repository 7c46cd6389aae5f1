"""Conformance of a target to the reference it claims to be (``dpref conform``) and third-party
implementations against the golden vectors (``dpref golden run``).
"""
