"""What `hsrtcp analyze` does once its arguments are parsed: :func:`run`.

Both parsers of the command line call it: click's (:mod:`hsrtcp.cli.analyze`) and the quick
one for plain invocations (:mod:`hsrtcp.cli.quick`). It imports only what the run needs:
a plain single-capture run (the default: no ``--plot``) loads the native module and nothing
heavy (no click, polars, rich or pathlib); the summary is plain text.
"""

from __future__ import annotations

import os
import sys


def _import_for_the_end() -> None:
    try:
        import hsrtcp.caveats  # noqa: F401
        import hsrtcp.report.summary  # noqa: F401
    except BaseException:  # noqa: BLE001 - the main thread's own import says what is wrong
        pass


def _summary(flows: list[dict], capture_rows: list[dict]) -> str:
    """The summary a run prints: the flows and their caveat lines."""
    from hsrtcp.caveats import lines
    from hsrtcp.report.summary import connections, summary_text

    text = summary_text(flows, capture_rows)
    connections(flows)  # the short ids (f1, f1s, ...) the caveat lines name
    return "\n".join([text, *lines(flows)])


def run(captures: list, vantages: list, out: str | os.PathLike, csv: bool, plot: bool,
        workers: int | None, quiet: bool, client: list | None = None, server: list | None = None,
        window_s: float = 30.0, context: dict | None = None, match_memory_mb: int = 256,
        packets: bool = False) -> int:
    """Analyze, write the tables to ``out``, draw the plot if asked, print the summary; the exit code.

    Single captures go straight to Parquet (:func:`hsrtcp.analyze_to`: flat memory, and
    polars is imported only for --csv and --plot); so do two-vantage pairs and run bundles
    (:func:`hsrtcp.pair.analyze_pairs_to`: the matched rows follow the captures' rows). Every file
    of the run (tables, CSVs, context tables, plot) is staged and committed together
    (:mod:`hsrtcp.output`); ``out`` is locked from before the analysis (a busy or unusable
    directory is refused before any work) to the commit.
    ``context``: the radio/label options (``radio``, ``radio_format``, ``radio_map``,
    ``radio_offset``, ``carrier``, ``labels``) of :func:`hsrtcp.context.write_context`, which
    runs when they are given or a run bundle is analyzed. ``packets``: also the packets
    table (docs/formats/packets.md).
    """
    from hsrtcp.errors import ExitCode
    from hsrtcp.output import OutputSet, shown
    # This process ends with the run: the allocator may keep what it frees (fewer page
    # faults and TLB flushes on the analysis threads).
    from hsrtcp.runner import native

    native().keep_freed_memory()
    summary: list[str] = []

    def meanwhile(flows: list[dict] | None, capture_rows: list[dict]) -> None:
        # While the Parquet writer finishes the files, on the core that would otherwise wait
        # for it: the modules the end of the run needs are imported and the summary is
        # written (it is printed after the commit).
        import hsrtcp.caveats  # noqa: F401

        if not quiet:
            try:
                summary.append(_summary(flows, capture_rows))
            except Exception:  # noqa: BLE001
                # The tables must not depend on the summary: they are committed, and the
                # summary is written again after the commit, where its error is reported.
                pass

    with OutputSet(out) as output:
        if client or server or any(os.path.isdir(p) for p in captures):
            # What runs after the analysis is imported while the native threads analyze (they
            # hold no GIL). (_thread: built in; threading's own imports cost half of it.)
            import _thread

            _thread.start_new_thread(_import_for_the_end, ())
            # Pairs and run bundles stream to Parquet too (the matcher's rows joined in Rust).
            from hsrtcp.pair import analyze_pairs_to, split_inputs
            from hsrtcp.streaming import stage_csv

            pairs, singles, single_vs = split_inputs(captures, vantages, client, server)
            w = analyze_pairs_to(pairs, out, singles=singles, single_vantage=single_vs, window_s=window_s,
                                 workers=workers, progress=not quiet, keep_flows=not quiet, output=output,
                                 match_memory_mb=match_memory_mb, packets=packets)
            if csv:
                stage_csv(output, [os.path.basename(f) for f in w.files])
            flows, capture_rows, errors, warnings = w.flows, w.captures, w.errors, w.warnings
            if w.swapped:  # the context tables name each pair's sides as analyzed
                from hsrtcp.pair import _norm

                turned = set(w.swapped)
                sides = [(s, c) if (_norm(c), _norm(s)) in turned else (c, s) for c, s in zip(client, server)]
                client, server = [c for c, _ in sides], [s for _, s in sides]
        else:
            from hsrtcp.streaming import analyze_to, stage_csv

            w = analyze_to(captures, out, vantage=vantages, workers=workers, progress=not quiet,
                           keep_flows=not quiet, output=output, packets=packets, meanwhile=meanwhile)
            if csv:
                stage_csv(output, [os.path.basename(f) for f in w.files])
            flows, capture_rows, errors, warnings = w.flows, w.captures, w.errors, []
        context_problems = []
        if context or any(os.path.isdir(p) for p in captures):
            from hsrtcp.context.enrich import write_context

            _, context_problems = write_context(out, captures=captures, client=client or (),
                                                server=server or (), csv=csv, output=output,
                                                **(context or {}))
        from hsrtcp.caveats import NAME, TABLE

        # the audit's verdict per condition travels with the results (docs/formats/caveats.md)
        with open(TABLE, "rb") as src, output.file(NAME) as p, open(p, "wb") as dst:
            dst.write(src.read())
        if plot:
            import polars as pl

            from hsrtcp.plot.throughput import plot_throughput

            # (files opened here: polars takes no path that is not UTF-8)
            with open(output.staged("flows.parquet"), "rb") as f, open(output.staged("series.parquet"), "rb") as s:
                png = plot_throughput(pl.read_parquet(f), pl.read_parquet(s), output.stage("throughput.png"))
            if not png:
                output.discard("throughput.png")
        written = output.commit()
    # Input errors go to stderr whatever else is printed (with -q, they are all there is).
    for e in errors:
        print(f"error: {shown(e)}", file=sys.stderr)
    for m in context_problems:
        print(f"hsrtcp: {m}", file=sys.stderr)
    for m in warnings:
        print(f"warning: {m}", file=sys.stderr)
    if not quiet:
        print(summary[0] if summary else _summary(flows, capture_rows))
        print(f"wrote {', '.join(os.path.basename(p) for p in written)} to {shown(out)}/")
    # Input errors still write the partial results, then exit 3.
    return ExitCode.INPUT if errors or context_problems else ExitCode.OK
