"""The tables of an analysis in memory: :class:`Dataset` (made by :func:`hsrtcp.analyze`
and by the two-vantage path, :func:`hsrtcp.pair.analyze_pairs`; both import it from here)."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from hsrtcp.errors import InputError
from hsrtcp.runner import TABLES


#: the flows columns a Dataset adds at read time (hsrtcp.results.flow_names), not stored
NAMES = ("short_id", "connection")


class Dataset:
    """Results of an analysis: one polars DataFrame per table (schemas in docs/formats/).
    ``flows`` starts with each row's ``short_id`` and ``connection`` (f1, f1s, ...), the names
    ``hsrtcp query`` and the report give, from the same function; they are not written.
    The names are derived on first use of ``flows`` (a join over every row): reading,
    writing, :meth:`tables` and :meth:`connections` never pay for them."""

    def __init__(self, flows: pl.DataFrame, events: pl.DataFrame, rtt: pl.DataFrame, series: pl.DataFrame,
                 captures: pl.DataFrame, extra: dict[str, pl.DataFrame] | None = None):
        self.flows = flows
        self.events, self.rtt, self.series, self.captures = events, rtt, series, captures
        self.extra = {} if extra is None else extra

    @property
    def flows(self) -> pl.DataFrame:
        if self._named is None:
            from hsrtcp.results import NAME_COLUMNS, with_names

            given = self._given
            self._named = with_names(given) if set(NAME_COLUMNS) <= set(given.columns) else given
        return self._named

    @flows.setter
    def flows(self, flows: pl.DataFrame) -> None:
        self._given, self._named = flows, None

    def __repr__(self) -> str:
        return (f"Dataset(flows={self.flows!r}, events={self.events!r}, rtt={self.rtt!r}, series={self.series!r}, "
                f"captures={self.captures!r}, extra={self.extra!r})")

    def stored_flows(self) -> pl.DataFrame:
        """``flows`` as written: without the names derived at read time."""
        return self._given.drop([c for c in NAMES if c in self._given.columns])

    def tables(self) -> dict[str, pl.DataFrame]:
        return {"flows": self.stored_flows(), "events": self.events, "rtt": self.rtt, "series": self.series,
                "captures": self.captures, **self.extra}

    @property
    def errors(self) -> list[str]:
        """Errors that stopped reading a capture (each names the file and byte offset)."""
        if self.captures.is_empty():
            return []
        return [e for e in self.captures["error"].to_list() if e]

    def write(self, out_dir: str | os.PathLike, csv: bool = False) -> list[Path]:
        """Write every table as Parquet (and CSV on request) into ``out_dir``, all together
        or not at all (:mod:`hsrtcp.output`: staged, then committed; the files of an
        earlier run there that this one does not write are removed). Raises
        :class:`hsrtcp.errors.OutputError` naming the path when the directory cannot take them."""
        from hsrtcp.output import OutputSet

        with OutputSet(out_dir) as output:
            self.stage(output, csv=csv)
            return [Path(p) for p in output.commit()]

    def stage(self, output, csv: bool = False) -> list[str]:
        """Write every table (and its CSV) into the open :class:`hsrtcp.output.OutputSet`
        ``output`` under staging names, for the caller to commit; returns the final names."""
        from hsrtcp.results import VERSIONS, metadata

        names = []
        try:
            for name, df in self.tables().items():
                # (files opened here: polars takes no path that is not UTF-8); the schema version
                # goes into the file for the readers (hsrtcp.results)
                with open(output.stage(f"{name}.parquet"), "wb") as f:
                    df.write_parquet(f, metadata=metadata(name) if name in VERSIONS else None)
                names.append(f"{name}.parquet")
                if csv:
                    with open(output.stage(f"{name}.csv"), "wb") as f:
                        df.write_csv(f)
                    names.append(f"{name}.csv")
        except OSError as exc:
            from hsrtcp.errors import OutputError
            from hsrtcp.output import shown

            raise OutputError(f"{shown(exc.filename or output.dir)}: {exc.strerror or exc}") from None
        return names

    def connections(self) -> pl.DataFrame:
        """One row per connection: its name (f1, ...), identity, each vantage's row side by
        side (``client_*``, ``server_*``) and the matched row's two-capture metrics
        (``matched_*``): the ``connections`` view of :mod:`hsrtcp.query` (docs/query.md), over
        these tables."""
        return connections(self.stored_flows())

    def flow(self, spec) -> dict:
        """The flows row ``spec`` names: a short id (``"f1"``, ``"f1s"``), a 4-tuple
        (``"10.0.1.2:41068-10.0.2.2:5201"``) or a flow_id (:func:`hsrtcp.results.select_flow`)."""
        from hsrtcp.results import select_flow

        return select_flow(self.flows, spec, "flows")

    @classmethod
    def read(cls, out_dir: str | os.PathLike) -> Dataset:
        """Load a results directory written by :meth:`write` or ``hsrtcp analyze``: the tables
        its manifest lists (every ``*.parquet`` of a directory without one), each checked
        against its versioned schema by the results reader (:mod:`hsrtcp.results`)."""
        from hsrtcp.output import manifest
        from hsrtcp.results import ResultsDir

        out = Path(out_dir)
        listed = manifest(out)
        files = sorted(out.glob("*.parquet")) if listed is None else \
            [out / n for n in listed if n.endswith(".parquet")]
        missing = [t for t in TABLES if t not in {f.stem for f in files}]
        if missing:
            raise InputError(f"{out}: not an hsrtcp results directory (missing {', '.join(missing)})")
        res = ResultsDir(out)
        frames = {f.stem: res.read(f.stem) for f in files}
        return cls(**{t: frames.pop(t) for t in TABLES}, extra=frames)


def connections(flows: pl.DataFrame) -> pl.DataFrame:
    """:meth:`Dataset.connections` of stored ``flows`` rows, without building a Dataset (the
    report's table of a million flows need not pay for the read-time names first)."""
    import duckdb

    from hsrtcp.query import PARTITION, connections_sql, names_sql

    con = duckdb.connect()
    con.register("_flows", flows.with_columns(pl.lit("dataset").alias(PARTITION)))
    con.execute(f"CREATE VIEW flows AS {names_sql('SELECT * FROM _flows', set(flows.columns) | {PARTITION})}")
    cols = [r[0] for r in con.execute("DESCRIBE flows").fetchall()]
    return con.sql(connections_sql(cols)).pl().drop(PARTITION)
