"""Passive traces (issue 36): many users at once, their applications.

:mod:`hsrtcp.passive.users` groups flows by phone; :mod:`hsrtcp.passive.apps` names each
flow's application from what its first packets carry. Both read an ``hsrtcp analyze``
results directory (the tunnel columns of docs/engine.md, "Encapsulations", included).
"""
