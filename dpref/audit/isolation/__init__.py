"""Where and how an untrusted target runs: the sandbox, the worker process and its framed
protocol, the runners, the noise-recording generator, bit-level output channels.
"""
