"""Issue 31 in the report, in a real headless Chromium (browser.py): the flow table and the
chart axes in one human format (units in headers and axis labels, no exponent, no bare SI
letters), the filter takes the names the table shows and says when a column is unknown, and
every drill-down has its own address (#flow=ID). Skipped with a message without chromium."""

from __future__ import annotations

import re

import polars as pl
import pytest

from hsrtcp.report.build import html_table

from .browser import browser, built_page, load

EXPONENT = re.compile(r"\d[eE][+-]?\d")
SI_LETTER = re.compile(r"^-?[\d.]+[kMGmµ]$")


@pytest.fixture(scope="module")
def drops_html(drops, tmp_path_factory):
    return built_page(tmp_path_factory, "drops", drops)


@pytest.fixture(scope="module")
def pair_html(pair, tmp_path_factory):
    return built_page(tmp_path_factory, "pair", pair["drops_cubic"], pair["study"])


def _col(d, key):
    return d.execute_script(f"return window.hsrtcpReport.data.flow_table.columns.find(c => c.key === '{key}')")


def _filter(d, text):
    box = d.find_element("id", "flow-filter")
    d.execute_script("arguments[0].value = ''", box)  # (clear() fires no input event)
    box.send_keys(text or " ")
    return d.find_element("id", "flow-count").text, d.find_element("id", "flow-filter-error").text


def test_table_humanized_with_units_in_headers(drops_html, drops):
    flow = pl.read_parquet(drops / "flows.parquet").row(0, named=True)
    with browser() as d:
        load(d, drops_html)
        table = d.find_element("id", "flow-table").text
        assert not EXPONENT.search(table), table
        rtt, rate = _col(d, "rtt_mean"), _col(d, "rate_bps")
        assert rtt["header"] == f"RTT mean ({rtt['shown']})" and rtt["shown"] in ("µs", "ms", "s")
        assert rate["header"] == f"mean rate ({rate['shown']})" and rate["shown"].endswith("bit/s")
        headers = [th.text.rstrip(" ▲▼") for th in d.find_elements("css selector", "#flow-table th")]
        assert rtt["header"] in headers and rate["header"] in headers
        # the cell is the stored value in the header's unit, 3 significant digits
        shown_rtt = flow["rtt_mean"] / rtt["scale"]
        cell = d.execute_script("return document.querySelector('#flow-table tbody tr').children[%d].textContent"
                                % headers.index(rtt["header"]))
        assert float(cell) == pytest.approx(shown_rtt, rel=5e-3)


def test_filter_takes_shown_headers_and_names_unknown_columns(drops_html, drops):
    flow = pl.read_parquet(drops / "flows.parquet").row(0, named=True)
    with browser() as d:
        load(d, drops_html)
        rtt = _col(d, "rtt_mean")
        below, above = flow["rtt_mean"] / rtt["scale"] * 0.9, flow["rtt_mean"] / rtt["scale"] * 1.1
        # the header as shown, unit and all, and without the unit; values in the shown unit
        assert _filter(d, f"{rtt['header']}>{below:.6f}") == ("1 of 1 flows", "")
        assert _filter(d, f"{rtt['header']}>{above:.6f}") == ("0 of 1 flows", "")
        assert _filter(d, f"rtt mean < {above:.6f} retx=15") == ("1 of 1 flows", "")
        # a value with its own unit; the internal key keeps its base unit (seconds)
        assert _filter(d, f"RTT mean>{flow['rtt_mean'] * 1.1 * 1e3:.6f}ms") == ("0 of 1 flows", "")
        assert _filter(d, f"rtt_mean>{flow['rtt_mean'] * 0.9:.9f}") == ("1 of 1 flows", "")
        # an unknown column is said (and not applied), never a silent 0 rows
        count, error = _filter(d, "rtt_avg>0.04")
        assert count == "1 of 1 flows" and 'unknown column "rtt_avg"' in error and rtt["header"] in error
        assert "invalid" in d.find_element("id", "flow-filter").get_attribute("class")
        count, error = _filter(d, "RTT mean>40 parsecs")
        assert 'unit "parsecs"' not in error  # "parsecs" is a word term here, not a unit
        count, error = _filter(d, "RTT mean>40parsecs")
        assert 'unit "parsecs" does not apply' in error
        assert _filter(d, "") == ("1 of 1 flows", "")


def test_chart_axes_carry_units_and_plain_ticks(pair_html, pair):
    flows = pl.read_parquet(pair["drops_cubic"] / "flows.parquet")
    top = flows.sort("s2c_payload_bytes", descending=True)["flow_id"][0]
    with browser() as d:
        load(d, pair_html)
        for cid, unit in ((f"tput-{top}", r"(k|M)?bit/s"), (f"rtt-{top}", r"(µs|ms|s)"),
                          (f"tseq-{top}", r"(bytes|kB|MB)"), ("cdf-throughput", r"(k|M)?bit/s")):
            axes = d.execute_script(f"""const u = window.hsrtcpReport.charts['{cid}'].plot;
                return u.axes.map((a, i) => [typeof a.label === 'function' ? a.label(u, i) : a.label, a._values]);""")
            (xlabel, xticks), (ylabel, yticks) = axes
            assert re.search(r"\((µs|ms|s)\)$", xlabel) or cid.startswith("cdf"), xlabel
            assert re.search(rf"\({unit}\)$|^{unit}$", ylabel if not cid.startswith("cdf") else xlabel), (cid, axes)
            for t in [*xticks, *yticks]:
                assert not EXPONENT.search(t) and not SI_LETTER.match(t), (cid, t)
        # a CDF's share axis is in percent
        ylabel, yticks = d.execute_script("""const u = window.hsrtcpReport.charts['cdf-throughput'].plot;
            return [u.axes[1].label(u, 1), u.axes[1]._values];""")
        assert ylabel == "CDF (% ≤ x)" and "100" in yticks
        # the legend names the x value without the stored unit: its value carries the axis's unit
        for cid in ("cdf-throughput", f"tput-{top}", f"rtt-{top}"):
            label = d.execute_script(f"return window.hsrtcpReport.charts['{cid}'].plot.series[0].label")
            assert not re.search(r"\((bit/s|s|bytes)\)", label), (cid, label)


def test_each_flow_has_an_address(pair_html, pair):
    flows = pl.read_parquet(pair["drops_cubic"] / "flows.parquet")
    matched = str(flows.filter(pl.col("vantage") == "matched")["flow_id"][0])
    with browser() as d:
        load(d, pair_html)
        shown = "return document.getElementById('flow-select').value"
        assert d.execute_script(shown) != matched
        link = d.find_element("css selector", f"#flow-table a[data-flow='{matched}']")
        assert link.get_attribute("href").endswith(f"#flow={matched}")
        link.click()
        assert d.execute_script("return location.hash") == f"#flow={matched}"
        assert d.execute_script(shown) == matched and f"flow {matched}" in d.find_element("id", "flow-title").text
        # opened from the address alone (a link shared or bookmarked)
        d.get(pair_html.resolve().as_uri() + f"#flow={matched}")
        d.refresh()
        from selenium.webdriver.support.ui import WebDriverWait

        WebDriverWait(d, 20).until(lambda x: x.execute_script("return document.body.dataset.ready === '1'"))
        assert d.execute_script(shown) == matched and f"flow {matched}" in d.find_element("id", "flow-title").text


def test_study_tables_in_the_report_are_humanized(pair):
    """The study's long tables showed 1.53421e+06 (bit/s) and 0.0580302 (a share)."""
    from hsrtcp.report.inputs import load_study

    st = load_study(pair["study"])
    perf = st.tables["performance"]
    text = html_table(perf)
    assert not EXPONENT.search(text)
    row = perf.filter((pl.col("metric") == "throughput_bps") & pl.col("value").is_not_null()).row(0, named=True)
    from hsrtcp.units import human_rate

    assert f"<td>{human_rate(row['value'], 4)}</td>" in text
    share = perf.filter((pl.col("unit") == "share") & pl.col("value").is_not_null()).row(0, named=True)
    from hsrtcp.units import human_share

    assert f"<td>{human_share(share['value'], 4)}</td>" in text and human_share(share["value"], 4).endswith(" %")


def test_connections_table_is_humanized(pair):
    """The connections table showed RTT ``0.0401705`` (seconds, no unit) and goodput
    ``1000001`` (bytes): each side's metric is now in the human format of its metric's unit."""
    from hsrtcp.api import Dataset
    from hsrtcp.report.build import _connections_html, _flow_frame
    from hsrtcp.report.inputs import load_results
    from hsrtcp.units import human_bytes, human_duration, human_share

    res = load_results(pair["drops_cubic"])
    text = _connections_html(res, _flow_frame(res))
    assert not EXPONENT.search(text)
    empty = pl.DataFrame()
    c = Dataset(res.flows, empty, empty, empty, empty).connections().row(0, named=True)
    for key, shown in (("server_rtt_mean", human_duration), ("server_goodput_bytes", human_bytes),
                       ("matched_p_d", human_share)):
        assert c[key] is not None, key
        assert f"<td>{shown(c[key], 4)}</td>" in text, (key, c[key])


def test_models_table_gives_d_in_percent(tmp_path):
    """The Models section's D table printed mean_d 0.912152: a relative error, now in %."""
    from hsrtcp.models.fitting import fit_flows
    from hsrtcp.report.build import _models_section
    from hsrtcp.report.inputs import load_results
    from hsrtcp.units import human_share, plain

    from .common import DATA, run

    out = tmp_path / "r"  # a pair with a timeout: the models have every input
    assert run(["analyze", "--client", DATA / "data_blackout.client.pcap", "--server", DATA / "data_blackout.server.pcap",
                "-q", "--no-plot", "-o", out]) == 0
    res = load_results(out)
    text, _charts = _models_section(res)
    d = fit_flows(res.flows).summary.filter(pl.col("mean_d").is_not_null()).row(0, named=True)
    assert f"<td>{human_share(d['mean_d'], 4)}</td>" in text and f"<td>{human_share(d['median_d'], 4)}</td>" in text
    # the predicted and measured means: packets/s in the header, 4 digits (it printed 34.4409)
    assert "<th>mean_pred (packets/s)</th>" in text and "<th>mean_measured (packets/s)</th>" in text
    assert f"<td>{plain(d['mean_pred_pkts'], 4)}</td>" in text and f"<td>{plain(d['mean_pred_pkts'], 6)}</td>" not in text
