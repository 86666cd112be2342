"""Witnesses for the analyzer: a real-TCP namespace testbed, ground truth from two captures,
peer tools (tshark, tcptrace) and a small independent pcap reader.

- :mod:`hsrtcp.testing.netbed`: client — router — server namespaces, random drops with nftables,
  tbf rate limit, captures on both ends, TCP_INFO at the end of each transfer.
- :mod:`hsrtcp.testing.truth`: per connection, the fate of every data segment and pure ACK.
- :mod:`hsrtcp.testing.peers`: run tshark/tcptrace on a capture and parse their numbers.
- :mod:`hsrtcp.testing.pcapio`: pure-Python pcap/pcapng reading and rewriting.

Nothing here imports the native module: the witnesses stay independent of what they check.
"""
