/* hsrtcp report: flow table, and uPlot charts from the chart specifications of
   python/hsrtcp/report/charts.py (embedded as JSON in #report-data). No network access. */
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const report = { data: data, charts: {}, showFlow: showFlow };
  window.hsrtcpReport = report;

  // ------------------------------------------------------------------ flow table
  const table = document.getElementById("flow-table");
  const cols = data.flow_table.columns;
  const nRows = data.flow_table.rows;
  let order = [...Array(nRows).keys()];
  let sortCol = -1, sortDir = 1;

  // ------------------------------------------------------------------ units
  // The human format of python/hsrtcp/units.py: 3 significant digits in positional notation
  // (never an exponent), times in µs/ms/s, rates in kbit/s/Mbit/s, shares in %.
  function plain(v, digits) {
    digits = digits || 3;
    if (v === null || v === undefined || Number.isNaN(v)) return "—";
    if (!isFinite(v)) return v > 0 ? "inf" : "-inf";
    if (v === 0) return "0";
    const mag = Math.floor(Math.log10(Math.abs(v)));
    let text = v.toFixed(Math.min(Math.max(digits - 1 - mag, 0), 100));
    if (text.includes(".")) text = text.replace(/0+$/, "").replace(/\.$/, "");
    return text === "-0" ? "0" : text;
  }
  // base unit -> [divisor, shown unit] from the largest first; what a value is shown in
  const STEPS = {
    "s": [[1, "s"], [1e-3, "ms"], [1e-6, "µs"], [1e-9, "ns"]],
    "bit/s": [[1e9, "Gbit/s"], [1e6, "Mbit/s"], [1e3, "kbit/s"], [1, "bit/s"]],
    "bytes": [[1e12, "TB"], [1e9, "GB"], [1e6, "MB"], [1e3, "kB"], [1, "bytes"]],
    "packets/s": [[1, "packets/s"]],
    "share": [[0.01, "%"]],
  };
  // units named in the charts' axis labels ("RTT (s)", "bit/s", "CDF (share ≤ x)")
  const UNIT_NAMES = { "s": "s", "bit/s": "bit/s", "bytes": "bytes", "B": "bytes", "share": "share",
                       "share ≤ x": "share", "packets/s": "packets/s" };
  function scaleFor(maxAbs, unit) {
    const steps = STEPS[unit];
    if (!steps) return [1, unit];
    const a = Math.abs(maxAbs);
    if (!(a > 0) || !isFinite(a)) return unit === "s" ? [1, "s"] : steps[steps.length - 1];
    return steps.find(([f]) => a >= f) || steps[steps.length - 1];
  }
  // shown unit -> [base unit, factor]: a filter value may carry its unit ("rtt<40ms", "rate>1.5Mbit/s")
  const SUFFIXES = {};
  for (const [unit, steps] of Object.entries(STEPS)) for (const [f, shown] of steps) SUFFIXES[shown.toLowerCase()] = [unit, f];
  Object.assign(SUFFIXES, { "us": ["s", 1e-6], "b": ["bytes", 1], "kb/s": ["bit/s", 1e3], "mb/s": ["bit/s", 1e6] });

  function fmt(v, kind, col) {
    if (v === null || v === undefined) return "—";
    if (kind === "num") return col && col.scale ? plain(v / col.scale) : plain(v);
    if (kind === "int") return v.toLocaleString("en");
    if (kind === "bool") return v ? "yes" : "no";
    return String(v);
  }

  function compare(a, b, kind) {  // nulls last in both directions
    if (a === b) return 0;
    if (a === null || a === undefined) return 1;
    if (b === null || b === undefined) return -1;
    if (kind === "id") return (a.length - b.length || (a < b ? -1 : 1)) * sortDir;  // decimal strings
    return (a < b ? -1 : 1) * sortDir;
  }

  // Filter terms: words (match any cell as shown or as stored) and NAME OP VALUE, where NAME
  // is a column as its header shows it ("RTT mean (ms)", "RTT mean": the value in the shown
  // unit), or its key ("rtt_mean": the value in the base unit, seconds); a VALUE may carry a
  // unit ("40ms", "1.5Mbit/s"). An unknown column is said, never silently 0 rows.
  const OP = /^\s*(<=|>=|<|>|=)\s*/;
  function names(c) {  // [lower-case name, scale of its values]
    const out = [[c.key.toLowerCase(), 1], [c.header.toLowerCase(), c.scale || 1]];
    if (c.name) out.push([c.name.toLowerCase(), c.scale || 1]);
    return out;
  }
  function parseFilter(text) {
    const terms = [], errors = [];
    let rest = text.trim();
    while (rest.length) {
      const low = rest.toLowerCase();
      let best = null;  // the longest column name followed by an operator
      cols.forEach((c, idx) => names(c).forEach(([name, scale]) => {
        if (low.startsWith(name) && OP.test(rest.slice(name.length)) && (!best || name.length > best.len))
          best = { idx: idx, len: name.length, scale: scale };
      }));
      if (best) {
        const after = rest.slice(best.len), op = after.match(OP);
        const value = after.slice(op[0].length).match(/^("[^"]*"|\S*)/)[1].replace(/^"|"$/g, "");
        rest = after.slice(op[0].length + value.length).trim();
        const t = { idx: best.idx, op: op[1], value: value, scale: best.scale };
        const bad = numberOf(t);
        if (bad) errors.push(bad); else terms.push(t);
        continue;
      }
      const tok = rest.match(/^\S+/)[0];
      rest = rest.slice(tok.length).trim();
      const m = tok.match(/^([^<>=]+)(<=|>=|<|>|=)(.*)$/);
      if (m) errors.push(`unknown column "${m[1]}"`);
      else terms.push({ word: tok.toLowerCase() });
    }
    return { terms: terms, errors: errors };
  }
  // the number a comparison term tests the stored (base-unit) values against; an error text
  function numberOf(t) {
    const c = cols[t.idx];
    t.x = null;
    if (c.kind !== "num" && c.kind !== "int") return null;
    const m = t.value.match(/^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)\s*(\S*)$/i);
    if (!m) return t.op === "=" ? null : `"${c.header}": "${t.value}" is not a number`;
    const suffix = m[2].toLowerCase();
    if (!suffix) { t.x = Number(m[1]) * t.scale; return null; }
    const known = SUFFIXES[suffix];
    if (!known || known[0] !== (c.unit === "B" ? "bytes" : c.unit))
      return `"${c.header}": unit "${m[2]}" does not apply${c.shown ? ` (shown in ${c.shown})` : ""}`;
    t.x = Number(m[1]) * known[1];
    return null;
  }

  function matches(r, terms) {
    return terms.every((t) => {
      if (t.word !== undefined) return cols.some((c) => fmt(c.values[r], c.kind, c).toLowerCase().includes(t.word) ||
                                                       String(c.values[r]).toLowerCase().includes(t.word));
      const c = cols[t.idx], v = c.values[r];
      if (v === null || v === undefined) return false;
      if (t.op === "=") {
        if (typeof v !== "number" || t.x === null) return String(v).toLowerCase() === t.value.toLowerCase() ||
                                                        fmt(v, c.kind, c).toLowerCase() === t.value.toLowerCase();
        // equal as shown: 3 significant digits of the shown unit
        return v === t.x || plain(v / (c.scale || 1)) === plain(t.x / (c.scale || 1));
      }
      const x = t.x;
      if (x === null || typeof v !== "number") return false;
      return t.op === ">" ? v > x : t.op === "<" ? v < x : t.op === ">=" ? v >= x : v <= x;
    });
  }

  function renderTable() {
    const parsed = parseFilter(document.getElementById("flow-filter").value);
    const terms = parsed.terms;
    const note = document.getElementById("flow-filter-error");
    note.textContent = parsed.errors.length
      ? `Filter: ${parsed.errors.join("; ")} (ignored). Columns: ${cols.map((c) => c.header).join(", ")}.` : "";
    document.getElementById("flow-filter").classList.toggle("invalid", parsed.errors.length > 0);
    const rows = order.filter((r) => matches(r, terms));
    const head = "<thead><tr>" + cols.map((c, i) =>
      `<th data-col="${i}" class="${i === sortCol ? (sortDir > 0 ? "sorted-asc" : "sorted-desc") : ""}">${esc(c.header)}</th>`).join("") + "</tr></thead>";
    const detailIdx = cols.findIndex((c) => c.key === "detail");
    const body = rows.map((r) => {
      const detail = detailIdx >= 0 && cols[detailIdx].values[r];
      return `<tr class="${detail ? "detail" : ""}" data-flow="${cols[0].values[r]}">` + cols.map((c, i) =>
        i === 0 && detail ? `<td><a href="#flow=${c.values[r]}" data-flow="${c.values[r]}">${fmt(c.values[r], c.kind)}</a></td>`
                          : `<td>${esc(fmt(c.values[r], c.kind, c))}</td>`).join("") + "</tr>";
    }).join("");
    table.innerHTML = head + "<tbody>" + body + "</tbody>";
    document.getElementById("flow-count").textContent = `${rows.length} of ${nRows} flows`;
  }

  function esc(s) {
    return String(s).replace(/[&<>"]/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[ch]));
  }

  table.addEventListener("click", (ev) => {
    const th = ev.target.closest("th");
    if (th) {
      const i = Number(th.dataset.col);
      sortDir = i === sortCol ? -sortDir : 1;
      sortCol = i;
      const vals = cols[i].values;
      order.sort((a, b) => compare(vals[a], vals[b], cols[i].kind) || a - b);
      renderTable();
      return;
    }
    const a = ev.target.closest("a[data-flow]");
    if (a) { ev.preventDefault(); openFlow(a.dataset.flow); }
  });
  document.getElementById("flow-filter").addEventListener("input", renderTable);
  renderTable();

  // ------------------------------------------------------------------ charts

  function extent(values, into) {
    for (const v of values) if (v !== null && v !== undefined && isFinite(v)) { into[0] = Math.min(into[0], v); into[1] = Math.max(into[1], v); }
    return into;
  }

  function padded(r, log) {
    if (!(r[0] <= r[1])) return log ? [1, 10] : [0, 1];
    if (log) return [r[0] / 1.5, r[1] * 1.5];
    const pad = (r[1] - r[0]) * 0.04 || Math.abs(r[1]) * 0.1 || 1;
    return [r[0] - pad, r[1] + pad];
  }

  function keep(initial) {
    return (u, min, max) => (min == null || max == null || !isFinite(min) || !isFinite(max) ? initial.slice() : [min, max]);
  }

  function makeChart(spec, parent) {
    const box = document.createElement("div");
    box.className = "chart";
    box.id = "chart-" + spec.id;
    box.innerHTML = `<h4>${esc(spec.title)}</h4>`;
    parent.appendChild(box);
    const series = spec.series.filter((s) => s.x.length > 0).map((s) => {
      if (!spec.x_log && !spec.y_log) return s;
      const inDomain = s.x.map((x, i) => (!spec.x_log || x > 0) && (!spec.y_log || (s.y[i] !== null && s.y[i] > 0)));
      return Object.assign({}, s, { x: s.x.filter((_, i) => inDomain[i]), y: s.y.filter((_, i) => inDomain[i]) });
    }).filter((s) => s.x.length > 0);
    const sacks = spec.sacks || [];
    const seg = spec.segments ? decodeSegments(spec.segments) : null;
    // the window chart per ACK reads the time–sequence graph's packets (drawn before it, embedded once)
    const src = spec.per_ack && report.charts[spec.per_ack] ? report.charts[spec.per_ack].segments : null;
    const pa = src ? perAck(src) : null;
    if (series.length === 0 && spec.marks.length === 0 && !(seg && seg.n + seg.na > 0) && !(pa && pa.t.length)) {
      box.insertAdjacentHTML("beforeend", '<p class="note">No data for this chart.</p>');
      return null;
    }
    const aligned = series.length
      ? uPlot.join(series.map((s) => [s.x, s.y]))
      : seg || pa ? [[0, spec.x_max || 0]] : [spec.marks.map((m) => m.t).sort((a, b) => a - b)];
    // initial ranges: lines, marks, bands and the flow's duration
    const xr = extent(aligned[0], [Infinity, -Infinity]);
    const yr = [Infinity, -Infinity];
    series.forEach((s) => extent(s.y, yr));
    spec.marks.forEach((m) => { extent([m.t], xr); if (!m.tick) extent([m.s0, m.s1], yr); });
    sacks.forEach((m) => { extent([m.t], xr); extent([m.s0, m.s1], yr); });
    if (seg) { extent(seg.extX, xr); extent(seg.extY, yr); }
    if (pa) { extent(pa.t, xr); extent([0], yr); extent(pa.owin, yr); extent(pa.window, yr); }
    spec.bands.forEach((b) => extent([b.t0, b.t1], xr));
    if (spec.x_max !== undefined && spec.x_max !== null) extent([0, spec.x_max], xr);
    // a log axis only helps (and only gets ticks) across at least a decade
    const xLog = spec.x_log && xr[1] / xr[0] >= 10, yLog = spec.y_log && yr[1] / yr[0] >= 10;
    const x0 = padded(xr, xLog), y0 = spec.y_range ? spec.y_range.slice() : padded(yr, yLog);
    if (!xLog && xr[0] >= 0 && x0[0] < 0) x0[0] = 0;
    if (!yLog && yr[0] >= 0 && y0[0] < 0) y0[0] = 0;

    const drawn = [], drawnSacks = [], drawnBands = [], drawnSeg = { segments: [], ack: [], edge: [], mode: null, inView: 0, owin: [], window: [], owinVals: [], windowVals: [] };
    const width = Math.max(400, Math.min(parent.clientWidth || 1200, 1300));
    const opts = {
      width: width, height: 340,
      scales: {
        // fixed initial ranges (lines, marks and bands all in view); a zoom's range passes through
        x: { time: false, auto: false, range: keep(x0), distr: xLog ? 3 : 1 },
        y: { auto: false, range: keep(y0), distr: yLog ? 3 : 1 },
      },
      axes: [axis(spec.x_label, "x", 50), axis(spec.y_label, "y", 80)],
      cursor: { drag: { x: true, y: !!spec.zoom_y, uni: 30 }, bind: { dblclick: () => null } },
      legend: { live: true },
      series: [{ label: legendLabel(spec.x_label), value: legendValue(spec.x_label, "x") }].concat(series.map((s) => ({
        label: s.label, stroke: s.color, width: s.width || 1.5, value: legendValue(spec.y_label, "y"),
        paths: s.style === "points" ? () => null : s.style === "step" ? uPlot.paths.stepped({ align: 1 }) : undefined,
        points: s.style === "points" || s.x.length < 3 ? { show: true, size: 4, stroke: s.color, fill: s.color } : { show: false },
        spanGaps: !!s.span_gaps,
      }))),
      hooks: {
        drawClear: [(u) => drawBands(u, spec, drawnBands)],
        draw: [(u) => { if (seg) drawSegments(u, seg, drawnSeg); if (pa) drawPerAck(u, pa, drawnSeg); drawSacks(u, sacks, drawnSacks); drawMarks(u, spec, drawn); }],
      },
    };
    const u = new uPlot(opts, aligned, box);
    // uPlot first fits x to the series' own extent; marks, bands and the duration may reach further
    u.setScale("x", { min: x0[0], max: x0[1] });
    u.over.addEventListener("dblclick", () => {
      u.batch(() => { u.setScale("x", { min: x0[0], max: x0[1] }); u.setScale("y", { min: y0[0], max: y0[1] }); });
    });
    legendExtras(box, spec);
    report.charts[spec.id] = { plot: u, spec: spec, drawnMarks: drawn, drawnSacks: drawnSacks, drawnBands: drawnBands,
                               drawnSegments: drawnSeg, segments: seg,
                               initial: { x: x0, y: y0 } };
    return u;
  }

  // Axes: the label names the unit the ticks are in, one unit per axis chosen from the range
  // in view ("time (ms)" while zoomed in, "throughput (Mbit/s)"), the ticks plain numbers
  // of that unit — never an SI letter or an exponent. Labels are "text (unit)" or a unit.
  function labelUnit(label) {
    const m = label.match(/^(.*?)\s*\(([^()]*)\)\s*$/);
    if (m && UNIT_NAMES[m[2]]) return { text: m[1], unit: UNIT_NAMES[m[2]], ofX: m[2] === "share ≤ x" };
    if (UNIT_NAMES[label]) return { text: "", unit: UNIT_NAMES[label] };
    return { text: label, unit: null };
  }
  function axisScale(u, key, unit) {
    const sc = u.scales[key];
    const a = Math.max(Math.abs(sc.min || 0), Math.abs(sc.max || 0));
    return scaleFor(a, unit);
  }
  // the cursor's values in the legend: in the axis's unit, with it
  function legendValue(label, key) {
    const lu = labelUnit(label);
    return (u, v) => {
      if (v === null || v === undefined) return "—";
      if (!lu.unit) return plain(v, 4);
      const [f, shown] = axisScale(u, key, lu.unit);
      return `${plain(v / f, 4)} ${shown}`;
    };
  }
  // the legend's name of the x value: the label without its stored unit (the value next to
  // it carries the unit the axis shows, e.g. Mbit/s where the label says bit/s)
  function legendLabel(label) {
    const lu = labelUnit(label);
    return lu.unit ? lu.text || "x" : label;
  }
  function axis(label, key, size) {
    const lu = labelUnit(label);
    if (!lu.unit) return { label: label, size: size, values: (u, splits) => splits.map((v) => (v == null ? "" : plain(v, 4))) };
    return {
      size: size,
      label: (u) => {
        const shown = axisScale(u, key, lu.unit)[1];
        return lu.ofX ? `${lu.text} (${shown} ≤ x)` : lu.text ? `${lu.text} (${shown})` : shown;
      },
      values: (u, splits) => {
        const f = axisScale(u, key, lu.unit)[0];
        return splits.map((v) => (v == null ? "" : plain(v / f, 4)));
      },
    };
  }

  // Bands: shaded time ranges over the plot's height, or (strip "top"/"bottom") a strip of
  // 7 % of it; "edge" outlines the band's sides, "hatch" draws diagonal lines over it (the
  // lab's ground truth: dropped outages). Every band drawn is recorded with its pixels.
  function drawBands(u, spec, drawn) {
    if (drawn) drawn.length = 0;
    const dpr = devicePixelRatio;
    const ctx = u.ctx, top = u.bbox.top, h = u.bbox.height, left = u.bbox.left, right = left + u.bbox.width;
    ctx.save();
    for (const b of spec.bands) {
      const a = Math.max(left, u.valToPos(b.t0, "x", true)), z = Math.min(right, u.valToPos(b.t1, "x", true));
      if (z < left || a > right) continue;
      const sh = b.strip ? h * 0.07 : h, y = b.strip === "bottom" ? top + h - sh : top, w = Math.max(z - a, 1);
      ctx.fillStyle = b.color;
      ctx.fillRect(a, y, w, sh);
      if (b.hatch) {
        ctx.save();
        ctx.beginPath(); ctx.rect(a, y, w, sh); ctx.clip();
        ctx.strokeStyle = b.hatch; ctx.lineWidth = dpr;
        ctx.beginPath();
        for (let k = a - sh; k < a + w; k += 8 * dpr) { ctx.moveTo(k, y + sh); ctx.lineTo(k + sh, y); }
        ctx.stroke();
        ctx.restore();
      }
      if (b.edge) {
        ctx.strokeStyle = b.edge; ctx.lineWidth = dpr;
        ctx.beginPath(); ctx.moveTo(a, y); ctx.lineTo(a, y + sh); ctx.moveTo(a + w, y); ctx.lineTo(a + w, y + sh); ctx.stroke();
      }
      if (drawn) drawn.push({ id: b.id || null, label: b.label, t0: b.t0, t1: b.t1, x0: a, x1: a + w, y0: y, y1: y + sh });
    }
    ctx.lineWidth = 1.5 * dpr;
    for (const v of spec.vlines) {
      const x = u.valToPos(v.t, "x", true);
      if (x < left || x > right) continue;
      ctx.strokeStyle = v.color;
      ctx.setLineDash(v.solid ? [] : [4 * dpr, 3 * dpr]);
      ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, top + h); ctx.stroke();
      if (drawn) drawn.push({ id: v.id || null, label: v.label, t0: v.t, t1: v.t, x0: x, x1: x, y0: top, y1: top + h });
    }
    ctx.restore();
  }

  // SACK blocks: a thin segment over each block at its ACK's time (under the retransmission
  // ticks); D-SACK blocks wider, yellow on a black outline
  function drawSacks(u, sacks, drawn) {
    drawn.length = 0;
    if (!sacks.length) return;
    const ctx = u.ctx, dpr = devicePixelRatio, top = u.bbox.top, bottom = top + u.bbox.height;
    const left = u.bbox.left, right = left + u.bbox.width;
    ctx.save();
    ctx.beginPath(); ctx.rect(left, top, u.bbox.width, u.bbox.height); ctx.clip();
    for (const m of sacks) {
      const x = u.valToPos(m.t, "x", true);
      if (x < left - 2 || x > right + 2) continue;
      let y0 = u.valToPos(m.s0, "y", true), y1 = u.valToPos(m.s1, "y", true);
      if (Math.max(y0, y1) < top || Math.min(y0, y1) > bottom) continue;
      if (Math.abs(y0 - y1) < 2 * dpr) { const c = (y0 + y1) / 2; y0 = c + dpr; y1 = c - dpr; }
      if (m.cls === "dsack") {
        ctx.strokeStyle = "#000000"; ctx.lineWidth = 4 * dpr;
        ctx.beginPath(); ctx.moveTo(x, y0 + dpr); ctx.lineTo(x, y1 - dpr); ctx.stroke();
      }
      ctx.strokeStyle = m.color; ctx.lineWidth = (m.cls === "dsack" ? 2 : 1) * dpr;
      ctx.beginPath(); ctx.moveTo(x, y0); ctx.lineTo(x, y1); ctx.stroke();
      drawn.push({ t: m.t, s0: m.s0, s1: m.s1, cls: m.cls, x: x, y0: y0, y1: y1 });
    }
    ctx.restore();
  }

  function drawMarks(u, spec, drawn) {
    drawn.length = 0;
    if (!spec.marks.length) return;
    const ctx = u.ctx, dpr = devicePixelRatio, top = u.bbox.top, bottom = top + u.bbox.height;
    const left = u.bbox.left, right = left + u.bbox.width;
    ctx.save();
    ctx.beginPath(); ctx.rect(left, top, u.bbox.width, u.bbox.height); ctx.clip();
    ctx.lineWidth = 2 * dpr;
    for (const m of spec.marks) {
      const x = u.valToPos(m.t, "x", true);
      if (x < left - 2 || x > right + 2) continue;
      let y0, y1;
      if (m.tick) { y0 = bottom; y1 = bottom - 12 * dpr; }
      else {
        y0 = u.valToPos(m.s0, "y", true); y1 = u.valToPos(m.s1, "y", true);
        if (Math.abs(y0 - y1) < 4 * dpr) { const c = (y0 + y1) / 2; y0 = c + 2 * dpr; y1 = c - 2 * dpr; }
      }
      ctx.strokeStyle = m.color;
      ctx.beginPath(); ctx.moveTo(x, y0); ctx.lineTo(x, y1);
      if (!m.tick) { ctx.moveTo(x - 3 * dpr, y1); ctx.lineTo(x + 3 * dpr, y1); }
      ctx.stroke();
      drawn.push({ t: m.t, s0: m.s0, s1: m.s1, cls: m.cls, color: m.color, x: x, y0: y0, y1: y1 });
    }
    ctx.restore();
  }

  // ------------------------------------------------------------------ per-segment time–sequence graph
  // spec.segments (flow_detail.packet_segments): the flow's packets, delta-coded integers.
  // Times are µs since the flow's first packet; a data segment's seq is coded from the
  // previous segment's end. Decoded once into typed arrays, in time order.
  function undelta(d, scale) {
    const out = new Float64Array(d.length);
    let acc = 0;
    for (let i = 0; i < d.length; i++) { acc += d[i]; out[i] = acc / scale; }
    return out;
  }
  function decodeSegments(sp) {
    const n = sp.data.dt.length, t = undelta(sp.data.dt, 1e6), s0 = new Float64Array(n), s1 = new Float64Array(n);
    let end = 0;
    for (let i = 0; i < n; i++) { s0[i] = end + sp.data.ds[i]; s1[i] = s0[i] + sp.data.len[i]; end = s1[i]; }
    const rx = new Map();  // segment index -> its retransmission class
    sp.data.rx_i.forEach((i, k) => rx.set(i, sp.data.rx_c[k]));
    const ta = undelta(sp.acks.dt, 1e6), ack = undelta(sp.acks.ack, 1);
    const edge = sp.acks.win ? undelta(sp.acks.win, 1).map((w, i) => ack[i] + w) : null;
    const extY = [Infinity, -Infinity];
    for (let i = 0; i < n; i++) { if (s0[i] < extY[0]) extY[0] = s0[i]; if (s1[i] > extY[1]) extY[1] = s1[i]; }
    for (const a of [ack, edge]) if (a) for (let i = 0; i < a.length; i++) { if (a[i] < extY[0]) extY[0] = a[i]; if (a[i] > extY[1]) extY[1] = a[i]; }
    const extX = [];
    if (n) extX.push(t[0], t[n - 1]);
    if (ta.length) extX.push(ta[0], ta[ta.length - 1]);
    return { n: n, na: ta.length, t: t, s0: s0, s1: s1, rx: rx, ta: ta, ack: ack, edge: edge, extX: extX,
             extY: extY[0] <= extY[1] ? extY : [], max: sp.max_exact, colors: sp.colors,
             lost: sp.fates ? sp.fates.lost_i : [],
             ackLostT: sp.fates ? sp.fates.ack_lost_t.map((v) => v / 1e6) : [], ackLostAck: sp.fates ? sp.fates.ack_lost_ack : [],
             lostColor: sp.fates ? sp.fates.color : null, ackLostColor: sp.fates ? sp.fates.ack_color : null };
  }
  function lowerBound(a, v) {  // first index with a[i] >= v
    let lo = 0, hi = a.length;
    while (lo < hi) { const m = (lo + hi) >> 1; if (a[m] < v) lo = m + 1; else hi = m; }
    return lo;
  }
  // Up to seg.max data segments in view: each a tick from seq to seq + len at its time;
  // above, one bar per pixel column from its lowest to its highest byte (never a line between
  // bins). The ACK and advertised-window lines: steps at each ACK, or per pixel column its
  // first, lowest, highest and last value when the view holds more than 2 × seg.max ACKs.
  function drawSegments(u, seg, drawn) {
    drawn.segments.length = 0; drawn.ack.length = 0; drawn.edge.length = 0;
    drawn.lost = []; drawn.ackLost = [];
    const ctx = u.ctx, dpr = devicePixelRatio, top = u.bbox.top, left = u.bbox.left, w = u.bbox.width;
    const xmin = u.scales.x.min, xmax = u.scales.x.max;
    ctx.save();
    ctx.beginPath(); ctx.rect(left, top, w, u.bbox.height); ctx.clip();
    const i0 = lowerBound(seg.t, xmin), i1 = lowerBound(seg.t, xmax + 1e-9);
    drawn.inView = i1 - i0;
    drawn.mode = i1 - i0 <= seg.max ? "segments" : "envelope";
    ctx.lineWidth = dpr;
    if (drawn.mode === "segments") {
      for (let i = i0; i < i1; i++) {
        const x = u.valToPos(seg.t[i], "x", true);
        let y0 = u.valToPos(seg.s0[i], "y", true), y1 = u.valToPos(seg.s1[i], "y", true);
        const cls = seg.rx.get(i) || null;
        if (Math.abs(y0 - y1) < 2 * dpr) { const c = (y0 + y1) / 2; y0 = c + dpr; y1 = c - dpr; }
        ctx.strokeStyle = cls ? (seg.colors[cls] || seg.colors.unclassified) : "#000000";
        ctx.beginPath(); ctx.moveTo(x, y0); ctx.lineTo(x, y1); ctx.stroke();
        drawn.segments.push({ i: i, t: seg.t[i], s0: seg.s0[i], s1: seg.s1[i], cls: cls, x: x, y0: y0, y1: y1 });
      }
    } else {
      const cols = Math.max(1, Math.round(w)), lo = new Float64Array(cols).fill(Infinity), hi = new Float64Array(cols).fill(-Infinity);
      const span = (xmax - xmin) / cols;
      for (let i = i0; i < i1; i++) {
        const c = Math.min(cols - 1, Math.floor((seg.t[i] - xmin) / span));
        if (seg.s0[i] < lo[c]) lo[c] = seg.s0[i];
        if (seg.s1[i] > hi[c]) hi[c] = seg.s1[i];
      }
      ctx.strokeStyle = "#000000";
      ctx.beginPath();
      for (let c = 0; c < cols; c++) {
        if (hi[c] < lo[c]) continue;
        const x = left + c + 0.5, y0 = u.valToPos(lo[c], "y", true), y1 = u.valToPos(hi[c], "y", true);
        ctx.moveTo(x, y0 + dpr * 0.5); ctx.lineTo(x, Math.min(y1, y0 - dpr) - dpr * 0.5);
        drawn.segments.push({ t: xmin + c * span, s0: lo[c], s1: hi[c], x: x, y0: y0, y1: y1 });
      }
      ctx.stroke();
    }
    stepLine(u, seg.ta, seg.ack, "#0072B2", 1.5 * dpr, drawn.ack, xmin, xmax, seg.max);
    if (seg.edge) stepLine(u, seg.ta, seg.edge, "#009E73", dpr, drawn.edge, xmin, xmax, seg.max);
    drawFates(u, seg, drawn, xmin, xmax);
    ctx.restore();
  }
  // The matcher's verdicts (pair runs): every lost data segment a cross at (time, seq), every
  // lost pure ACK an open triangle at (time, ack), also when the segments are envelopes.
  function drawFates(u, seg, drawn, xmin, xmax) {
    const ctx = u.ctx, dpr = devicePixelRatio, r = 3 * dpr;
    const inView = (t) => t >= xmin && t <= xmax + 1e-9;
    ctx.lineWidth = 1.2 * dpr;
    ctx.strokeStyle = seg.lostColor;
    ctx.beginPath();
    for (const i of seg.lost) {
      if (!inView(seg.t[i])) continue;
      const x = u.valToPos(seg.t[i], "x", true), y = u.valToPos(seg.s0[i], "y", true);
      ctx.moveTo(x - r, y - r); ctx.lineTo(x + r, y + r); ctx.moveTo(x - r, y + r); ctx.lineTo(x + r, y - r);
      drawn.lost.push({ i: i, t: seg.t[i], s0: seg.s0[i], x: x, y: y });
    }
    ctx.stroke();
    ctx.strokeStyle = seg.ackLostColor;
    ctx.beginPath();
    for (let i = 0; i < seg.ackLostT.length; i++) {
      const t = seg.ackLostT[i], a = seg.ackLostAck[i];
      if (!inView(t)) continue;
      const x = u.valToPos(t, "x", true), y = u.valToPos(a, "y", true);
      ctx.moveTo(x - r, y - r); ctx.lineTo(x + r, y - r); ctx.lineTo(x, y + r); ctx.closePath();
      drawn.ackLost.push({ t: t, ack: a, x: x, y: y });
    }
    ctx.stroke();
  }
  // Per ACK (plot/window.py:outstanding, the same definition): owin = the highest byte end of
  // the data segments captured before the ACK (equal times count as before) minus its ACK
  // number, never below 0, none before any data; window = the window the ACK advertises.
  function perAck(seg) {
    const t = [], owin = [], tw = [], window = [];
    let j = 0, high = -Infinity;
    for (let i = 0; i < seg.na; i++) {
      while (j < seg.n && seg.t[j] <= seg.ta[i]) { if (seg.s1[j] > high) high = seg.s1[j]; j++; }
      if (j > 0) { t.push(seg.ta[i]); owin.push(Math.max(high - seg.ack[i], 0)); }
      if (seg.edge) { tw.push(seg.ta[i]); window.push(seg.edge[i] - seg.ack[i]); }
    }
    return { t: t, owin: owin, tw: tw, window: window, max: seg.max };
  }
  // step lines as the time–sequence graph's ACK line: exact up to 2 × max ACKs in view, else envelopes
  function drawPerAck(u, pa, drawn) {
    for (const k of ["owin", "window", "owinVals", "windowVals"]) drawn[k].length = 0;
    const ctx = u.ctx, dpr = devicePixelRatio, xmin = u.scales.x.min, xmax = u.scales.x.max;
    ctx.save();
    ctx.beginPath(); ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height); ctx.clip();
    stepLine(u, pa.tw, pa.window, "#999999", dpr, drawn.window, xmin, xmax, pa.max, drawn.windowVals);
    stepLine(u, pa.t, pa.owin, "#0072B2", 1.5 * dpr, drawn.owin, xmin, xmax, pa.max, drawn.owinVals);
    const n = lowerBound(pa.t, xmax + 1e-9) - Math.max(0, lowerBound(pa.t, xmin) - 1);
    drawn.mode = n <= 2 * pa.max ? "per ACK" : "envelope";
    ctx.restore();
  }
  // vals (optional): the [time, value] of each vertex drawn (a test reads them)
  function stepLine(u, t, y, colour, width, out, xmin, xmax, max, vals) {
    if (!t.length) return;
    const ctx = u.ctx, right = u.bbox.left + u.bbox.width;
    const i0 = Math.max(0, lowerBound(t, xmin) - 1), i1 = lowerBound(t, xmax + 1e-9);
    let idx = [];
    if (i1 - i0 <= 2 * max) for (let i = i0; i < i1; i++) idx.push(i);
    else {  // per pixel column: first, lowest, highest, last (in time order)
      const span = (xmax - xmin) / Math.max(1, Math.round(u.bbox.width));
      let c0 = null, first = 0, lo = 0, hi = 0;
      const flush = (last) => idx.push(...[...new Set([first, lo, hi, last])].sort((a, b) => a - b));
      for (let i = i0; i < i1; i++) {
        const c = Math.floor((t[i] - xmin) / span);
        if (c !== c0) { if (c0 !== null) flush(i - 1); c0 = c; first = lo = hi = i; }
        if (y[i] < y[lo]) lo = i;
        if (y[i] > y[hi]) hi = i;
      }
      flush(i1 - 1);
    }
    ctx.strokeStyle = colour; ctx.lineWidth = width;
    ctx.beginPath();
    let py = null;
    for (const i of idx) {
      const x = Math.max(u.valToPos(t[i], "x", true), u.bbox.left - 2), yy = u.valToPos(y[i], "y", true);
      if (vals) vals.push([t[i], y[i]]);
      if (py === null) ctx.moveTo(x, yy); else { ctx.lineTo(x, py); ctx.lineTo(x, yy); out.push([x, py]); }
      out.push([x, yy]);
      py = yy;
    }
    // the last value holds to the view's right edge (until the next ACK, or the end of the flow)
    if (py !== null) { ctx.lineTo(right + 2, py); out.push([right + 2, py]); }
    ctx.stroke();
  }

  function legendExtras(box, spec) {
    const classes = new Map(), bands = new Map();
    spec.marks.forEach((m) => classes.set(m.cls, m.color));
    spec.bands.forEach((b) => bands.set(b.label, b.color));
    const sackCounts = spec.sack_counts || {};
    if (!classes.size && !bands.size && !spec.vlines.length && !Object.keys(sackCounts).length && !spec.segments && !spec.per_ack) return;
    const div = document.createElement("div");
    div.className = "marks-legend";
    let htmlText = "";
    if (spec.segments) {
      const sg = spec.segments;
      htmlText += `<span class="segments-legend"><i style="background:#000000"></i>data segment, seq to seq + len (${sg.data.dt.length}; ` +
        `each drawn up to ${sg.max_exact} in view, else per pixel column its lowest to highest byte)</span>` +
        `<span><i style="background:#0072B2"></i>cumulative ACK, step per ACK (${sg.acks.dt.length})</span>` +
        (sg.acks.win ? `<span><i style="background:#009E73"></i>advertised window edge: ACK + window, per ACK</span>` : "") +
        (sg.fates ? `<span class="fate-legend" data-fate="lost"><i style="background:${sg.fates.color}"></i>× lost in the network (matcher): ` +
          `${sg.fates.lost_i.length} data segments, at (time, seq)</span>` +
          (sg.fates.ack_lost_t.length ? `<span class="fate-legend" data-fate="ack_lost"><i style="background:${sg.fates.ack_color}"></i>` +
            `▽ ACK lost in the network (matcher): ${sg.fates.ack_lost_t.length}, at (time, ack)</span>` : "") : "");
    }
    if (spec.per_ack) {
      htmlText += `<span><i style="background:#0072B2"></i>outstanding data (owin): highest byte sent before the ACK − ACK, step per ACK</span>` +
        `<span><i style="background:#999999"></i>advertised window, step per ACK</span>`;
    }
    classes.forEach((c, k) => { htmlText += `<span><i style="background:${c}"></i>retransmission: ${esc(k)} (${spec.marks.filter((m) => m.cls === k).length})</span>`; });
    for (const [cls, name] of [["sack", "SACK block"], ["dsack", "D-SACK block"]]) {
      if (!sackCounts[cls]) continue;
      const colour = (spec.sacks.find((m) => m.cls === cls) || {}).color || "#56B4E9";
      const outline = cls === "dsack" ? ";outline:1px solid #000" : "";
      htmlText += `<span class="sack-legend" data-cls="${cls}"><i style="background:${colour}${outline}"></i>${name} (${sackCounts[cls]})</span>`;
    }
    bands.forEach((c, k) => {
      const n = spec.bands.filter((b) => b.label === k).length;
      htmlText += `<span><b style="background:${c}"></b>${esc(k)}${k.startsWith("truth:") ? ` (${n})` : ""}</span>`;
    });
    const lines = new Map();  // handoffs by label: the truth's (solid) and the radio log's (dashed)
    spec.vlines.forEach((v) => { const l = v.label || "handoff"; lines.set(l, [v.color, (lines.get(l) || [0, 0])[1] + 1]); });
    lines.forEach(([c, n], k) => { htmlText += `<span><i style="background:${c}"></i>${esc(k)} (${n})</span>`; });
    div.innerHTML = htmlText;
    box.appendChild(div);
  }

  // ------------------------------------------------------------------ sections

  const select = document.getElementById("flow-select");
  data.details.forEach((d) => {
    const o = document.createElement("option");
    o.value = d.flow_id;
    o.textContent = `${d.name || "flow " + d.flow_id} (flow ${d.flow_id}, ${d.retransmissions} retransmissions)`;
    select.appendChild(o);
  });
  select.addEventListener("change", () => openFlow(select.value));

  // every flow's drill-down has its own address: report.html#flow=ID (a link to share, and
  // the back button goes to the flow seen before)
  function openFlow(id) {
    if (location.hash !== `#flow=${id}`) location.hash = `flow=${id}`;
    else showFlow(id);
  }
  function flowFromHash() {
    const m = decodeURIComponent(location.hash).match(/^#flow=(\d+)$/);
    return m ? m[1] : null;
  }
  window.addEventListener("hashchange", () => {
    const id = flowFromHash();
    if (id !== null) { showFlow(id); document.getElementById("detail").scrollIntoView(); }
  });

  function showFlow(id) {
    id = String(id);  // flow ids are decimal strings (uint64)
    const d = data.details.find((x) => x.flow_id === id);
    const holder = document.getElementById("detail-charts");
    for (const key of Object.keys(report.charts)) {
      if (report.charts[key].flow !== undefined) { report.charts[key].plot.destroy(); delete report.charts[key]; }
    }
    holder.innerHTML = "";
    document.getElementById("flow-notes").innerHTML = "";
    if (!d) {
      document.getElementById("flow-title").textContent = `flow ${id}: no drill-down embedded (not among the largest flows)`;
      return false;
    }
    select.value = String(id);
    document.getElementById("flow-title").textContent = d.title;
    document.getElementById("flow-notes").innerHTML = d.notes.map((n) => `<li>${esc(n)}</li>`).join("");
    d.charts.forEach((spec) => {
      const u = makeChart(spec, holder);
      if (u) report.charts[spec.id].flow = id;
    });
    return true;
  }

  const classHolder = document.getElementById("class-charts");
  data.class_charts.forEach((spec) => makeChart(spec, classHolder));
  const modelHolder = document.getElementById("model-charts");
  data.model_charts.forEach((spec) => makeChart(spec, modelHolder));
  const linked = flowFromHash();
  if (linked !== null) { showFlow(linked); document.getElementById("detail").scrollIntoView(); }
  else if (data.details.length) showFlow(data.details[0].flow_id);
  else document.getElementById("flow-title").textContent = "No flow carried data: no drill-down.";
  document.body.dataset.ready = "1";
})();
