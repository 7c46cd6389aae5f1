"""A binary mechanism that takes injected node noise, for ``dpref golden run`` (docs/golden.md).

``release(stream, noise)`` is the Python target; run as a script it is the external command:
one golden vector as JSON on stdin, the outputs as a JSON array on stdout.  Standard library
only, as an implementation in another language would be.
"""

import json
import sys


def _nodes(T):
    """The binary mechanism's nodes [t - lsb(t) + 1, t], one per t: canonical order."""
    return [(t - (t & -t) + 1, t) for t in range(1, T + 1)]


def release(stream, noise):
    """out_t = the noisy nodes of t's binary decomposition; node t-1 gets noise[t-1]."""
    T = len(stream)
    prefix = [0]
    for x in stream:
        prefix.append(prefix[-1] + int(x))
    noisy = [prefix[hi] - prefix[lo - 1] + float(z) for (lo, hi), z in zip(_nodes(T), noise)]
    out = []
    for t in range(1, T + 1):
        total, u = 0.0, 0
        for bit in reversed(range(t.bit_length())):
            if t >> bit & 1:
                u += 1 << bit
                total += noisy[u - 1]
        out.append(total)
    return out


def release_level_order(stream, noise):
    """A classic bug: the noise is consumed level by level (all single items first, then
    the pairs, ...) instead of in canonical order (release time first)."""
    nodes = _nodes(len(stream))
    level_order = sorted(range(len(nodes)), key=lambda n: (nodes[n][1] - nodes[n][0], n))
    reordered = [0.0] * len(nodes)
    for k, n in enumerate(level_order):
        reordered[n] = noise[k]
    return release(stream, reordered)


if __name__ == "__main__":
    vector = json.load(sys.stdin)
    json.dump(release(vector["stream"], vector["noise"]), sys.stdout)
