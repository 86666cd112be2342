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
  analysis, checked by the same code: :mod:`hsrtcp.context.options`; ``radio_map`` as
  ``--radio-map``, quoted in the CSV since it holds commas);
- any other column is a label (``trip``, ``carrier``, ``train`` ...): it lands in the
  input's ``labels.parquet``, which the study can group by. ``carrier`` is both.

Anything wrong inside the manifest (a row with another field count than the header, a bad
value, a repeated or misspelt ``radio*`` column ...) is an :class:`InputError` (exit 3)
listing every bad row as ``FILE:LINE: COLUMN: ...``, before anything is analyzed: a row
whose columns shifted cannot be trusted for any of its values, not even its input id. A
pair whose rows are each fine but that is not one client plus one server row, or whose two
rows name different radio logs, is reported per pair as a failure (:class:`ManifestProblem`)
and the rest runs.
"""

from __future__ import annotations

import csv
import os

from hsrtcp.errors import InputError
from hsrtcp.inputs import Input, input_id

RADIO_COLUMNS = ("radio", "radio_format", "radio_offset", "radio_map")
KNOWN = {"capture", "vantage", "pair", "pair_id", "id", *RADIO_COLUMNS}
MAX_LISTED = 20  # bad rows listed in one message


class ManifestProblem(Input):
    """A manifest group that cannot be analyzed (becomes a failures row, not a task)."""

    def __init__(self, id: str, files: list[str], reason: str) -> None:
        super().__init__(id, "problem", files)
        self.reason = reason


def _read(path: str) -> tuple[int, list[str], list[tuple[int, list[str]]]]:
    """The header's line, the header and the (line, fields) of every row that is not blank;
    the line is where the row starts (a quoted field may span lines)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f)
            header, header_line, rows, start = None, 1, [], 1
            for fields in reader:
                if any(v.strip() for v in fields):
                    if header is None:
                        header, header_line = [h.strip() for h in fields], start
                    else:
                        rows.append((start, fields))
                start = reader.line_num + 1
    except OSError as exc:
        raise InputError(f"{path}: cannot read the manifest: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start}): not a CSV manifest?") from None
    except csv.Error as exc:
        raise InputError(f"{path}:{reader.line_num}: not a CSV manifest ({exc})") from None
    if header is None or not rows:
        raise InputError(f"{path}: manifest without rows")
    return header_line, header, rows


def _check_header(path: str, at: int, header: list[str]) -> None:
    named = [h for h in header if h]
    twice = sorted({h for h in named if named.count(h) > 1})
    if twice:
        raise InputError(f"{path}:{at}: column(s) {', '.join(twice)} appear more than once")
    if "capture" not in header:
        raise InputError(f"{path}:{at}: manifest without a 'capture' column (columns: {', '.join(named)})")
    odd = [h for h in named if h.startswith("radio") and h not in RADIO_COLUMNS]
    if odd:
        # a misspelt option would otherwise become a label, and the option silently unused
        raise InputError(f"{path}:{at}: unknown column(s) {', '.join(odd)} (the radio columns are "
                         f"{', '.join(RADIO_COLUMNS)})")
    from hsrtcp.context.labels import LABEL_SCHEMA

    clash = [h for h in named if h not in KNOWN and h != "carrier" and h in LABEL_SCHEMA]
    if clash:
        raise InputError(f"{path}:{at}: column(s) {', '.join(clash)} are built-in labels columns; rename them")


class _RowError(Exception):
    def __init__(self, column: str, message: str) -> None:
        super().__init__(f"{column}: {message}")


def _row_input(base: str, row: dict[str, str]) -> Input:
    """The input of one row (a pair's member as a capture input); _RowError for a bad value."""
    from hsrtcp.context.options import OptionError, check_options, check_vantage

    cap = row.get("capture", "")
    if not cap:
        raise _RowError("capture", "empty")
    try:
        vantage = check_vantage(row.get("vantage"))
        opts = check_options(radio=row.get("radio"), radio_format=row.get("radio_format"),
                             radio_map=row.get("radio_map"), radio_offset=row.get("radio_offset"),
                             carrier=row.get("carrier") or None)
    except OptionError as exc:
        raise _RowError(exc.field, str(exc)) from None
    if not (row.get("pair") or row.get("pair_id")) and row.get("id") and input_id(row["id"]) != row["id"]:
        raise _RowError("id", f"{row['id']!r}: use only A-Z a-z 0-9 . _ -")
    radio = opts["radio"]
    if radio and not os.path.isabs(radio):
        radio = os.path.join(base, radio)
    labels = {k: v for k, v in row.items() if k not in KNOWN and k and v != ""}
    return Input(row.get("id") or input_id(cap), "capture", [cap if os.path.isabs(cap) else os.path.join(base, cap)],
                 vantage=vantage, radio=radio, radio_format=opts["radio_format"],
                 radio_offset=opts["radio_offset"], radio_map=opts["radio_map"], carrier=opts["carrier"],
                 labels=labels)


def _radio_of(inp: Input) -> tuple:
    return inp.radio, inp.radio_format, inp.radio_offset, inp.radio_map


def read_manifest(path: str) -> list[Input]:
    """The inputs a manifest lists, in the order of the file; InputError on a bad manifest
    (see the module doc)."""
    base = os.path.dirname(os.path.abspath(path))
    at, header, rows = _read(path)
    _check_header(path, at, header)
    problems: list[str] = []
    singles: list[Input] = []
    groups: dict[str, list[tuple[int, Input]]] = {}
    order: list[tuple[str, str]] = []  # ("single", index) / ("pair", id) in file order
    for line, fields in rows:
        if len(fields) != len(header):
            hint = " (a value with commas, such as a radio_map, must be quoted)" if len(fields) > len(header) else ""
            problems.append(f"{path}:{line}: {len(fields)} fields, the header has {len(header)}{hint}")
            continue
        row = {h: v.strip() for h, v in zip(header, fields) if h}
        try:
            inp = _row_input(base, row)
        except _RowError as exc:
            problems.append(f"{path}:{line}: {exc}")
            continue
        pair = row.get("pair") or row.get("pair_id")
        if pair:
            if pair not in groups:
                order.append(("pair", pair))
            groups.setdefault(pair, []).append((line, inp))
        else:
            order.append(("single", str(len(singles))))
            singles.append(inp)
    if problems:
        more = f"\n... and {len(problems) - MAX_LISTED} more" if len(problems) > MAX_LISTED else ""
        raise InputError(f"{path}: {len(problems)} bad row(s), nothing analyzed:\n"
                         + "\n".join(problems[:MAX_LISTED]) + more)
    out: list[Input] = []
    for what, key in order:
        if what == "single":
            out.append(singles[int(key)])
            continue
        members = groups[key]
        pid = input_id(key)
        by_side = {inp.vantage: inp for _, inp in members}
        files = [inp.files[0] for _, inp in members]
        lines = ", ".join(str(ln) for ln, _ in members)
        if len(members) != 2 or set(by_side) != {"client", "server"}:
            out.append(ManifestProblem(pid, files, f"{path}: pair {key!r} (lines {lines}) needs exactly one "
                                                   f"client and one server row"))
            continue
        c, s = by_side["client"], by_side["server"]
        if ((c.radio and s.radio and _radio_of(c) != _radio_of(s))
                or (c.carrier and s.carrier and c.carrier != s.carrier)):
            out.append(ManifestProblem(pid, files, f"{path}: pair {key!r} (lines {lines}): its two rows give "
                                                   f"different radio logs or carriers; give them on one row"))
            continue
        r = c if c.radio else s
        out.append(Input(pid, "pair", [c.files[0], s.files[0]], radio=r.radio, radio_format=r.radio_format,
                         radio_offset=r.radio_offset, radio_map=r.radio_map,
                         carrier=c.carrier or s.carrier, labels={**s.labels, **c.labels}))
    # a capture row naming a bundle directory is a bundle
    for inp in out:
        if inp.kind == "capture" and os.path.isdir(inp.files[0]):
            inp.kind = "bundle"
    return out
