/* simulplay explorer: the sweep view (only for a run with sweep/sweep.parquet). Per rule
 * family two charts against the family's parameter: modelled η, and modelled L of A
 * (solid) and F (dashed), each with its interval as a band, one line per panel (backend,
 * realization) and per value of the family's other varying keys. The points synthesized
 * for real are drawn on top with their measured intervals (bars); a green ring marks the
 * points confirmed by synthesis (--confirm). Hovering a point shows its rule and every
 * value in seconds. Each marker keeps its row and value in data attributes. */
"use strict";
(function () {
  const X = window.simulplayExplorer;
  const S = (X.sweepView = {});
  const COLORS = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860"];
  const H = 250, TOP = 12, LEFT = 66, RIGHT = 16, BOTTOM = 40;
  /* The series of each chart: modelled value and interval, measured value and interval. */
  const SERIES = {
    eta: [{ key: "eta", y: "modelled_eta_s", lo: "modelled_ci_low_s", hi: "modelled_ci_high_s", my: "measured_eta_s",
      mlo: "measured_ci_low_s", mhi: "measured_ci_high_s", dash: null }],
    L: ["a", "f"].map(function (t) {
      return { key: t, y: "modelled_L_" + t + "_s", lo: "modelled_L_low_" + t + "_s", hi: "modelled_L_high_" + t + "_s",
        my: "measured_L_" + t + "_s", mlo: "measured_L_low_" + t + "_s", mhi: "measured_L_high_" + t + "_s",
        dash: t === "f" ? "5 4" : null };
    }),
  };

  function finite(x) { return x !== null && x !== undefined && isFinite(x); }
  function cell(d, r, name) { const i = d.columns.indexOf(name); return i < 0 ? null : d.rows[r][i]; }
  function seriesName(d, s) { return s.key === "eta" ? "η" : "L(" + (s.key === "a" ? d.a : d.f) + ")"; }

  function ticks(lo, hi, n) {
    const raw = (hi - lo) / n;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map(function (m) { return m * mag; }).find(function (s) { return s >= raw; });
    const out = [];
    for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push(Number(t.toFixed(10)));
    return out;
  }

  function lineLabel(d, line) {
    const parts = d.panels.length > 1 ? [X.panelName(d.panels[line.panel])] : [];
    line.other.forEach(function (kv) { parts.push(kv[0] + "=" + kv[1]); });
    return parts.join(", ");
  }

  /* What hovering a point of row `r` shows (plain text, seconds). */
  S.tip = function (d, r) {
    const v = function (name) { return cell(d, r, name); };
    const interval = function (x, lo, hi) {
      return X.fmt(v(x)) + " s (interval " + X.fmt(v(lo)) + " to " + X.fmt(v(hi)) + " s)";
    };
    const lines = ["rule " + v("rule") + " (family " + v("family") + ")"];
    const panel = d.panels[v("panel")];
    if (panel && Object.keys(panel).length) lines.push(X.panelName(panel));
    lines.push("modelled η = " + interval("modelled_eta_s", "modelled_ci_low_s", "modelled_ci_high_s"));
    SERIES.L.forEach(function (s) { lines.push("modelled " + seriesName(d, s) + " = " + interval(s.y, s.lo, s.hi)); });
    if (v("measured")) {
      lines.push("measured η = " + interval("measured_eta_s", "measured_ci_low_s", "measured_ci_high_s"));
      SERIES.L.forEach(function (s) { lines.push("measured " + seriesName(d, s) + " = " + interval(s.my, s.mlo, s.mhi)); });
      lines.push(v("confirmed") ? "measured: yes, confirmed by synthesis (--confirm)" : "measured: yes, a condition the run synthesized");
    } else {
      lines.push("measured: no (modelled only)");
    }
    if (v("n_requests_a") !== null) lines.push("requests: " + d.a + " " + v("n_requests_a") + ", " + d.f + " " + v("n_requests_f"));
    return lines.join("\n");
  };

  /* One chart ("eta" or "L") of family `fam` as an SVG element `width` px wide. */
  function chart(d, fam, kind, width) {
    const series = SERIES[kind];
    const xOf = function (line, k) { return fam.axis ? cell(d, line.rows[k], fam.axis) : k; };
    const xs = [], ys = kind === "eta" ? [0] : [];
    fam.lines.forEach(function (line) {
      line.rows.forEach(function (r, k) {
        xs.push(xOf(line, k));
        series.forEach(function (s) {
          [s.y, s.lo, s.hi].concat(cell(d, r, "measured") ? [s.my, s.mlo, s.mhi] : []).forEach(function (c) {
            const y = cell(d, r, c);
            if (finite(y)) ys.push(y);
          });
        });
      });
    });
    let x0 = Math.min.apply(null, xs), x1 = Math.max.apply(null, xs);
    if (!(x1 > x0)) { x0 -= 1; x1 += 1; }
    const xpad = (x1 - x0) * 0.04;
    x0 -= xpad; x1 += xpad;
    let y0 = ys.length ? Math.min.apply(null, ys) : -1, y1 = ys.length ? Math.max.apply(null, ys) : 1;
    if (!(y1 > y0)) { y0 -= 1; y1 += 1; }
    const ypad = (y1 - y0) * 0.06;
    y0 -= ypad; y1 += ypad;
    const plotW = width - LEFT - RIGHT, plotH = H - TOP - BOTTOM;
    const px = function (x) { return LEFT + (x - x0) / (x1 - x0) * plotW; };
    const py = function (y) { return TOP + (y1 - y) / (y1 - y0) * plotH; };
    const label = kind === "eta" ? "modelled η (s)" : "modelled L: end offset (s)";
    const svg = X.svg("svg", { class: "sweep-chart", "data-chart": kind, "data-family": fam.family, width: width,
      height: H, viewBox: "0 0 " + width + " " + H, role: "img", "aria-label": label + " over " + fam.family });
    const axes = X.svg("g", { class: "axis" });
    ticks(y0, y1, 5).forEach(function (t) {
      axes.append(X.svg("line", { class: "grid", x1: LEFT, x2: LEFT + plotW, y1: py(t), y2: py(t) }),
        X.svg("text", { x: LEFT - 6, y: py(t) + 4, "text-anchor": "end", text: String(t) }));
    });
    if (fam.axis) {
      ticks(x0, x1, Math.max(2, Math.floor(plotW / 80))).forEach(function (t) {
        axes.append(X.svg("line", { x1: px(t), x2: px(t), y1: TOP + plotH, y2: TOP + plotH + 5 }),
          X.svg("text", { x: px(t), y: TOP + plotH + 17, "text-anchor": "middle", text: String(t) }));
      });
    } else if (fam.lines.length) {
      fam.lines[0].rows.forEach(function (r, k) {
        axes.append(X.svg("text", { x: px(k), y: TOP + plotH + 17, "text-anchor": "middle", text: cell(d, r, "rule") }));
      });
    }
    axes.append(X.svg("line", { x1: LEFT, x2: LEFT + plotW, y1: TOP + plotH, y2: TOP + plotH }),
      X.svg("line", { x1: LEFT, x2: LEFT, y1: TOP, y2: TOP + plotH }),
      X.svg("text", { x: LEFT + plotW / 2, y: H - 4, "text-anchor": "middle", text: fam.axis || "grid point" }),
      X.svg("text", { class: "y-label", x: 12, y: TOP + plotH / 2, "text-anchor": "middle",
        transform: "rotate(-90 12 " + (TOP + plotH / 2) + ")", text: label }));
    if (kind === "eta") axes.append(X.svg("line", { class: "zero", x1: LEFT, x2: LEFT + plotW, y1: py(0), y2: py(0) }));
    svg.append(axes);
    const bands = X.svg("g"), curves = X.svg("g"), points = X.svg("g"), measured = X.svg("g");
    fam.lines.forEach(function (line, li) {
      const color = COLORS[li % COLORS.length];
      series.forEach(function (s) {
        const at = function (c) { return line.rows.map(function (r, k) { return [px(xOf(line, k)), cell(d, r, c)]; }); };
        const upper = at(s.hi).filter(function (p, k) { return finite(p[1]) && finite(cell(d, line.rows[k], s.lo)); });
        const lower = at(s.lo).filter(function (p, k) { return finite(p[1]) && finite(cell(d, line.rows[k], s.hi)); });
        if (upper.length) {
          bands.append(X.svg("path", { class: "band band-" + s.key, fill: color, "data-line": li,
            d: "M" + upper.concat(lower.reverse()).map(function (p) { return p[0] + "," + py(p[1]); }).join("L") + "Z" }));
        }
        let path = "", pen = "M";
        at(s.y).forEach(function (p) {
          if (!finite(p[1])) { pen = "M"; return; }
          path += pen + p[0] + "," + py(p[1]);
          pen = "L";
        });
        curves.append(X.svg("path", { class: "curve curve-" + s.key, stroke: color, "stroke-dasharray": s.dash,
          "data-line": li, "data-panel": line.panel, "data-label": lineLabel(d, line), d: path }));
        line.rows.forEach(function (r, k) {
          const y = cell(d, r, s.y);
          if (finite(y)) {
            points.append(X.svg("circle", { class: "point point-" + s.key, cx: px(xOf(line, k)), cy: py(y), r: 3, fill: color,
              "data-line": li, "data-row": r, "data-rule": cell(d, r, "rule"), "data-value": y }));
          }
          const my = cell(d, r, s.my);
          if (!cell(d, r, "measured") || !finite(my)) return;
          const x = px(xOf(line, k)), lo = cell(d, r, s.mlo), hi = cell(d, r, s.mhi);
          if (finite(lo) && finite(hi)) {
            measured.append(X.svg("path", { class: "errbar", d: "M" + x + "," + py(lo) + "V" + py(hi) + "M" + (x - 4) + "," +
              py(lo) + "h8M" + (x - 4) + "," + py(hi) + "h8" }));
          }
          const cls = "measured measured-" + s.key + (cell(d, r, "confirmed") ? " confirmed" : "");
          const data = { class: cls, fill: color, "data-line": li, "data-row": r, "data-rule": cell(d, r, "rule"),
            "data-value": my, "data-low": lo, "data-high": hi };
          measured.append(s.key === "f" ? X.svg("rect", Object.assign({ x: x - 4.5, y: py(my) - 4.5, width: 9, height: 9 }, data))
            : X.svg("circle", Object.assign({ cx: x, cy: py(my), r: 5 }, data)));
        });
      });
    });
    svg.append(bands, curves, points, measured);
    return svg;
  }

  function legend(d, fam, kind) {
    const items = [];
    fam.lines.forEach(function (line, li) {
      const name = lineLabel(d, line);
      items.push(X.el("span", { class: "item" }, SERIES[kind].map(function (s) {
        return [X.el("span", { class: "swatch" + (s.dash ? " dashed" : ""), style: "border-color:" + COLORS[li % COLORS.length] }),
          "modelled " + seriesName(d, s) + " "];
      }), "with interval" + (name ? " (" + name + ")" : "")));
    });
    const shapes = kind === "eta" ? "● measured η" : "● measured L(" + d.a + "), ■ measured L(" + d.f + ")";
    items.push(X.el("span", { class: "item", text: shapes + " with the measured interval; green ring: confirmed by synthesis" }));
    return X.el("p", { class: "legend" }, items);
  }

  function interact(svg, d) {
    const tip = document.getElementById("tip");
    svg.addEventListener("pointermove", function (e) {
      const r = e.target.getAttribute && e.target.getAttribute("data-row");
      if (r === null || r === undefined) { tip.hidden = true; return; }
      tip.textContent = S.tip(d, Number(r));
      tip.hidden = false;
      tip.style.left = Math.min(e.pageX + 14, document.documentElement.scrollWidth - 380) + "px";
      tip.style.top = e.pageY + 14 + "px";
    });
    svg.addEventListener("pointerleave", function () { tip.hidden = true; });
  }

  /* Draw the sweep view into #sweep-view from X.data.sweep. */
  S.render = function () {
    const d = X.data.sweep;
    const section = document.getElementById("sweep-view");
    if (!d || !section) return;
    X.clear(section);
    const width = Math.max(480, Math.min(900, section.clientWidth || 900));
    X.fill(section,
      X.el("h2", { text: "Modelled sweep: " + d.a + " vs " + d.f + ", reference " + d.reference }),
      X.el("p", { class: "caption", text: "From " + d.source + " (simulplay sweep). Lines and bands are modelled: a " +
        "model of the run's own requests, not a measurement — η = δ(w) − δ(" + d.reference + ") with δ = L(" + d.a +
        ") − L(" + d.f + "), and L, the mean end offset over talks, in seconds, each with its paired talk-bootstrap " +
        "interval. Points with bars were synthesized for real (measured value and interval). Hover a point for its " +
        "rule and values." }),
      d.notes.map(function (n) { return X.el("p", { class: "caption sweep-note", text: n }); }),
      d.families.map(function (fam) {
        const eta = chart(d, fam, "eta", width), ends = chart(d, fam, "L", width);
        interact(eta, d);
        interact(ends, d);
        return X.el("div", { class: "sweep-family", "data-family": fam.family },
          X.el("h3", { text: "Modelled sweep " + fam.family }),
          X.el("div", { class: "plot sweep-plot" }, eta), legend(d, fam, "eta"),
          X.el("div", { class: "plot sweep-plot" }, ends), legend(d, fam, "L"),
          X.signatures(fam.signature_lines));
      }));
    section.setAttribute("data-state", "ready");
  };
})();
