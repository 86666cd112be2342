"""Corpus scale: ``hsrtcp analyze CORPUS -o RESULTS`` (docs/scale.md).

A corpus (a directory tree, a glob or a CSV manifest) becomes a list of inputs
(:mod:`.discover`, :mod:`.manifest`): single captures, client/server pairs and run bundles.
Each input is analyzed on its own by the same code the one-input ``hsrtcp analyze`` uses
(:mod:`.tasks`) into one hive-style partition ``RESULTS/input=<id>/`` written atomically;
a content key (:mod:`.hashing`) lets a re-run skip what is done. The inputs run on a local
process pool (:mod:`.pool`) or a Dask cluster (:mod:`.dask`), with one progress display
(:mod:`.progress`); what fails becomes a row of ``RESULTS/failures.parquet``
(:mod:`.failures`). :func:`hsrtcp.scale.run.run_corpus` ties them together.
"""
