"""The HSR lab: real Linux TCP/MPTCP through an emulated high-speed-rail path on one machine.

Pieces (each usable alone):

- :mod:`hsrtcp.lab.scenario` compiles an HSR scenario TOML into a Rattan config + traces.
- :mod:`hsrtcp.lab.rattan` validates and runs Rattan configs, and cleans up after it.
- :mod:`hsrtcp.lab.netns` root/tool checks, namespaces, process cleanup, signal handling
  (shared with the witness testbed :mod:`hsrtcp.testing.netbed`).
- :mod:`hsrtcp.lab.capture` tcpdump capture processes (shared with the testbed too).
- :mod:`hsrtcp.lab.measure` the traffic generator (server samples ``TCP_INFO`` every 10 ms).
- :mod:`hsrtcp.lab.tcpinfo` ``struct tcp_info`` decoding.
- :mod:`hsrtcp.lab.agent` what runs inside the phone and server namespaces of a run.
- :mod:`hsrtcp.lab.emulate` one run: topology, captures, workload, cleanup.
- :mod:`hsrtcp.lab.campaign` scenario × cc × flow × repetition matrices of runs.
- :mod:`hsrtcp.lab.bundle` the run-bundle format (docs/formats/bundle.md).

Importing this package does not import any of them.
"""
