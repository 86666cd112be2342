"""The report's "Studies' gallery": what `hsrtcp figures` makes from what the report has
(docs/report.md, docs/figures.md).

With a STUDY the gallery is ``hsrtcp figures STUDY RESULTS``; without one, a study is made
from RESULTS first, in a temporary directory, as ``hsrtcp study RESULTS`` makes it (its
defaults), unless the results are too large for that to be quick (:data:`MAX_FLOWS_FOR_STUDY`:
then the section says how to make the study and give it). Every item made is embedded —
figures as PNG (96 dpi, a few tens of kB each), tables as HTML — up to :data:`BUDGET_BYTES` in
all (the report's size bound; an item beyond it is listed with its coverage, not embedded),
followed by the coverage list: every item, its status and exactly what is missing.
"""

from __future__ import annotations

import base64
import html
import io
import os
import tempfile
from pathlib import Path

#: embedded images and tables at most (bytes of HTML): the report must stay small
BUDGET_BYTES = 3_000_000
#: without a STUDY, a study is made from RESULTS only up to this many flows rows
MAX_FLOWS_FOR_STUDY = 200_000
DPI = 96
STATUS_CLASS = {"made": "made", "partly": "partly", "not made": "missing", "drawing": "drawing"}


def _md_html(text: str) -> str:
    """The gallery's Markdown (pipe tables and plain lines) as escaped HTML."""
    out, rows = [], []

    def cells(row: str) -> list[str]:
        return [c.strip() for c in row.strip().strip("|").split("|")]

    def flush():
        if not rows:
            return
        rule = len(rows) > 1 and set(rows[1].replace("|", "").strip()) <= set("-: ")
        head, body = rows[0], rows[2:] if rule else rows[1:]
        out.append('<div class="wide"><table class="static gallery-table"><thead><tr>'
                   + "".join(f"<th>{html.escape(c)}</th>" for c in cells(head)) + "</tr></thead><tbody>"
                   + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells(r)) + "</tr>" for r in body)
                   + "</tbody></table></div>")
        rows.clear()

    for line in text.splitlines():
        if line.lstrip().startswith("|"):
            rows.append(line.replace("\\|", "\u2502"))
            continue
        flush()
        if line.strip() and not line.startswith("# "):
            out.append(f"<p>{html.escape(line.strip())}</p>")
    flush()
    return "".join(out)


def _png(figure) -> bytes:
    buf = io.BytesIO()
    figure.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def _flows_rows(results: Path) -> int:
    import polars as pl

    from hsrtcp.results import ResultsDir, partitions

    n = 0
    for p in partitions(results):
        res = ResultsDir(p)  # the checked reader: a flows table of a newer version is refused
        if res.has("flows"):
            n += res.scan("flows", ["flow_id"]).select(pl.len()).collect().item()
    return n


def _study_from_results(results: Path, tmp: str) -> tuple[Path | None, str]:
    """A study of ``results`` made as ``hsrtcp study RESULTS -o DIR`` makes it, in ``tmp``;
    (None, why) when it is not made."""
    from hsrtcp.errors import InputError
    from hsrtcp.study import study as make_study

    n = _flows_rows(results)
    if n > MAX_FLOWS_FOR_STUDY:
        return None, (f"no STUDY given, and the results hold {n:,} flows rows (more than {MAX_FLOWS_FOR_STUDY:,}): "
                      "make the study once with <code>hsrtcp study RESULTS -o STUDY</code> and give it: "
                      "<code>hsrtcp report RESULTS STUDY</code>")
    out = Path(tmp) / "study"
    try:
        s = make_study([os.fspath(results)], stream=True, progress=False, spool_dir=tmp)
        s.write(out)
    except (InputError, ValueError) as exc:
        return None, f"no STUDY given, and a study of the results could not be made: {html.escape(str(exc))}"
    return out, ("no STUDY given: the items below come from a study of the results made here as "
                 "<code>hsrtcp study RESULTS</code> makes it (its defaults: 1000 bootstrap draws, seed 0)")


def gallery_html(results: str | os.PathLike, study: str | os.PathLike | None) -> str:
    """The section's HTML (see the module docstring)."""
    from hsrtcp.errors import InputError
    from hsrtcp.figures import build

    results = Path(results)
    with tempfile.TemporaryDirectory(prefix="hsrtcp-gallery-") as tmp:
        if study is None:
            study_dir, origin = _study_from_results(results, tmp)
            if study_dir is None:
                return f'<p class="note" id="gallery-origin">{origin}.</p>'
            with_results = [results]
        else:
            study_dir, origin = Path(study), f"from the study <code>{html.escape(str(study))}</code> and the results"
            with_results = [results]
            n = _flows_rows(results)
            if n > MAX_FLOWS_FOR_STUDY:  # the items that read RESULTS load every flow: not at this size
                with_results = []
                origin = (f"from the study <code>{html.escape(str(study))}</code> alone (the results hold {n:,} "
                          f"flows rows, more than {MAX_FLOWS_FOR_STUDY:,}: <code>hsrtcp figures STUDY RESULTS</code> "
                          "adds the items that need them)")
        try:
            g = build(study_dir, with_results)
        except InputError as exc:
            return f'<p class="warn" id="gallery-origin">No gallery: {html.escape(str(exc))}</p>'
        except Exception as exc:  # a defect of one item must not cost the whole report
            return (f'<p class="warn" id="gallery-origin">No gallery: hsrtcp figures failed (a defect, please '
                    f"report it): {html.escape(type(exc).__name__)}: {html.escape(str(exc))}</p>")
        return _render(g, origin)


def _render(g, origin: str) -> str:
    from hsrtcp.figures.render import _why  # the missing-input text of coverage.md

    c = g.counts()
    parts = [f'<p class="note" id="gallery-origin">What <code>hsrtcp figures</code> makes of the seeds\' '
             f"{len(g.outcomes)} numbered tables and figures (docs/figures.md), {origin}: made {c['made']}, "
             f"partly {c['partly']}, not made {c['not made']}, drawings of a method {c['drawing']}. "
             "<code>hsrtcp figures STUDY RESULTS -o DIR</code> writes the same items as files (PDF, CSV, "
             "Markdown).</p>"]
    used, left_out = 0, []
    items = []
    for o in g.outcomes:
        if o.made is None:
            continue
        title = html.escape(f"{o.item.id}: {o.item.title}")
        gaps = "".join(f"<li>{html.escape(x)}</li>" for x in o.made.gaps)
        gaps = f'<ul class="note">{gaps}</ul>' if gaps else ""
        if o.made.figure is not None:
            png = _png(o.made.figure)
            body = (f'<img alt="{title}" data-item="{o.item.id}" '
                    f'src="data:image/png;base64,{base64.b64encode(png).decode()}">')
        else:
            body = _md_html(o.made.markdown or "")
        if used + len(body) > BUDGET_BYTES:
            left_out.append(o.item.id)
            continue
        used += len(body)
        items.append(f'<figure class="gallery-item" id="gallery-{o.item.id}" data-status="{o.status}">'
                     f"<figcaption><b>{title}</b> ({o.status})</figcaption>{body}{gaps}</figure>")
    parts.append('<div class="gallery">' + "".join(items) + "</div>")
    if left_out:
        parts.append(f'<p class="warn">Not embedded (the report\'s size bound, {BUDGET_BYTES / 1e6:.0f} MB of '
                     f"images and tables): {html.escape(', '.join(left_out))}; hsrtcp figures writes them.</p>")
    rows = "".join(
        f'<tr class="{STATUS_CLASS[o.status]}" data-item="{o.item.id}"><td>{html.escape(o.item.id)}</td>'
        f"<td>{html.escape(o.item.title)}</td><td>{html.escape(o.status)}</td>"
        f"<td>{html.escape(_why(o))}</td></tr>" for o in g.outcomes)
    parts.append('<h3>Coverage</h3><div class="wide"><table class="static" id="gallery-coverage"><thead><tr>'
                 "<th>item</th><th>what</th><th>status</th><th>missing</th></tr></thead>"
                 f"<tbody>{rows}</tbody></table></div>")
    return "".join(parts)

