"""The Python side of ``chute bench``: the peers it compares with, a real small model's step time
and the plots of its report. The C++ bench runs these as ``python -m chute.bench.peers``,
``chute.bench.model`` and ``chute.bench.plots``; the ``chute`` package itself never imports them.
"""
