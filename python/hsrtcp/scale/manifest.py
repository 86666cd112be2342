"""A corpus as a CSV manifest: :func:`read_manifest` (docs/scale.md, "Manifest").

One row per capture file (or run bundle directory); columns, by name, in any order:

- ``capture`` (required): the file or bundle directory, relative to the manifest's directory
  or absolute;
- ``vantage``: ``client`` or ``server`` (empty: unknown);
- ``pair`` (or ``pair_id``): rows sharing a pair id are one two-vantage input, exactly one
  ``client`` and one ``server`` row; the pair id is the input id;
- ``id``: the input id of a single capture (default: from its path);
- ``radio``, ``radio_format``, ``radio_offset``, ``radio_map``, ``carrier``: the radio/GPS
  log of the input and how to read it (the ``--radio*`` / ``--carrier`` options of one
  analysis; ``radio_map`` as ``--radio-map``, quoted in the CSV since it holds commas);
- any other column is a label (``trip``, ``carrier``, ``train`` ...): it lands in the
  input's ``labels.parquet``, which the study can group by. ``carrier`` is both.

A malformed row is a usage error naming the line (nothing is analyzed); a pair that is
not one client plus one server is reported per pair as a failure (:class:`ManifestProblem`).
"""

from __future__ import annotations

import csv
import os

from hsrtcp.scale.discover import Input, input_id

KNOWN = {"capture", "vantage", "pair", "pair_id", "id", "radio", "radio_format", "radio_offset", "radio_map"}
FORMATS = ("auto", "lab", "csv", "nmea", "gpx")


class ManifestProblem(Input):
    """A manifest group that cannot be analyzed (becomes a failures row, not a task)."""

    def __init__(self, id: str, files: list[str], reason: str) -> None:
        super().__init__(id, "problem", files)
        self.reason = reason


def read_manifest(path: str) -> list[Input]:
    """The inputs a manifest lists, in the order of the file; ValueError on a bad manifest."""
    base = os.path.dirname(os.path.abspath(path))
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.DictReader(f))
            header = list(rows[0].keys()) if rows else []
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"{path}: not a readable CSV manifest ({exc})") from None
    if not rows:
        raise ValueError(f"{path}: manifest without rows")
    header = [h.strip() for h in header if h is not None]
    if "capture" not in header:
        raise ValueError(f"{path}: manifest without a 'capture' column (columns: {', '.join(header)})")
    singles: list[Input] = []
    groups: dict[str, list[tuple[int, dict, Input]]] = {}
    order: list[tuple[str, str]] = []  # ("single", index) / ("pair", id) in file order
    for line, raw in enumerate(rows, start=2):
        row = {(k or "").strip(): (v or "").strip() for k, v in raw.items() if k is not None}
        cap = row.get("capture", "")
        if not cap:
            raise ValueError(f"{path}:{line}: empty 'capture'")
        full = cap if os.path.isabs(cap) else os.path.join(base, cap)
        vantage = row.get("vantage") or None
        if vantage not in (None, "client", "server"):
            raise ValueError(f"{path}:{line}: vantage must be client or server, not {vantage!r}")
        fmt = row.get("radio_format") or "auto"
        if fmt not in FORMATS:
            raise ValueError(f"{path}:{line}: radio_format must be one of {', '.join(FORMATS)}, not {fmt!r}")
        try:
            offset = float(row.get("radio_offset") or 0.0)
        except ValueError:
            raise ValueError(f"{path}:{line}: radio_offset {row['radio_offset']!r} is not a number") from None
        try:
            from hsrtcp.context.csvlog import parse_mapping

            rmap = parse_mapping(row.get("radio_map") or None)
        except ValueError as exc:
            raise ValueError(f"{path}:{line}: radio_map: {exc}") from None
        radio = row.get("radio") or None
        if radio and not os.path.isabs(radio):
            radio = os.path.join(base, radio)
        labels = {k: v for k, v in row.items() if k not in KNOWN and k and v != ""}
        from hsrtcp.context.labels import LABEL_SCHEMA

        clash = [k for k in labels if k in LABEL_SCHEMA]
        if clash:
            raise ValueError(f"{path}:{line}: column(s) {', '.join(clash)} are built-in labels columns; rename them")
        inp = Input(row.get("id") or input_id(cap), "capture", [full], vantage=vantage, radio=radio,
                    radio_format=fmt, radio_offset=offset, radio_map=rmap, carrier=row.get("carrier") or None,
                    labels=labels)
        pair = row.get("pair") or row.get("pair_id")
        if pair:
            if pair not in groups:
                order.append(("pair", pair))
            groups.setdefault(pair, []).append((line, row, inp))
        else:
            if row.get("id") and input_id(row["id"]) != row["id"]:
                raise ValueError(f"{path}:{line}: id {row['id']!r}: use only A-Z a-z 0-9 . _ -")
            order.append(("single", str(len(singles))))
            singles.append(inp)
    out: list[Input] = []
    for what, key in order:
        if what == "single":
            out.append(singles[int(key)])
            continue
        members = groups[key]
        pid = input_id(key)
        by_side = {inp.vantage: inp for _, _, inp in members}
        files = [inp.files[0] for _, _, inp in members]
        if len(members) != 2 or set(by_side) != {"client", "server"}:
            lines = ", ".join(str(ln) for ln, _, _ in members)
            out.append(ManifestProblem(pid, files, f"{path}: pair {key!r} (lines {lines}) needs exactly one "
                                                   f"client and one server row"))
            continue
        c, s = by_side["client"], by_side["server"]
        out.append(Input(pid, "pair", [c.files[0], s.files[0]], radio=c.radio or s.radio,
                         radio_format=c.radio_format if c.radio else s.radio_format,
                         radio_offset=c.radio_offset if c.radio else s.radio_offset,
                         radio_map=c.radio_map if c.radio else s.radio_map,
                         carrier=c.carrier or s.carrier, labels={**s.labels, **c.labels}))
    # a capture row naming a bundle directory is a bundle
    for inp in out:
        if inp.kind == "capture" and os.path.isdir(inp.files[0]):
            inp.kind = "bundle"
    return out
