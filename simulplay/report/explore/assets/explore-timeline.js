/* simulplay explorer: one talk's timeline — four lanes (A and F, under the reference and
 * the chosen condition) on one shared, zoomable source-time axis, as the report's
 * Figure 3. Per lane: text updates as they became available (ticks), each request from
 * dispatch (thin line: waiting) through synthesis (bar) to readiness, playback segments
 * (alternating shades) with idle gaps, the limiting part outlined, the output's end;
 * source end S across all lanes. Times are the replay's nanoseconds shown as seconds;
 * each segment carries its numbers in data attributes (data-ready, data-play, data-end).
 * With a live run, each output's "live" lane lies under its predicted lane: the parts the
 * live run's virtual player played (arrival tick, playback bar), its stalls (red) and its
 * end; hovering gives the request's send lateness and ΔL = L predicted − L live. With a
 * `simulplay quality` joins table, the primary replay's lanes mark each join (diamond at
 * the next part's start in the listener audio), its level step (dB) on hover. */
"use strict";
(function () {
  const X = window.simulplayExplorer;
  const T = (X.timeline = {});
  const LANE_H = 92, LIVE_H = 46, TOP = 8, LEFT = 150, RIGHT = 14, AXIS_H = 30;
  function laneH(lane) { return lane.live ? LIVE_H : lane.hyp ? T.HYP_H : LANE_H; }

  /* One output of the talk under one variant: its requests and parts in ns, by the
   * replay's recurrences in exact integers (the build checked that they give the replay's
   * numbers, and wrote out `ready` and `play` where they would not):
   *   start = max(dispatch, previous ready), ready = start + service (missing dispatch: 0);
   *   a chunk is ready at its request's start + offset;
   *   a part plays at max(ready, previous end) and ends dur later; idle = play − previous end. */
  T.model = function (talk, vkey, o) {
    const req = talk.requests[o];
    const variant = talk.variants[vkey];
    const vo = variant && variant.outputs[o];
    if (!req || !vo) return null;
    const P = vo.parts;
    let prevReady = null;
    const requests = req.seq.map(function (seq, i) {
      const dispatch = req.dispatch[i] === null ? 0 : req.dispatch[i];
      let ready, start;
      if (vo.ready) { ready = vo.ready[i]; start = ready - vo.service[i]; }
      else { start = prevReady === null ? dispatch : Math.max(dispatch, prevReady); ready = start + vo.service[i]; }
      prevReady = ready;
      return { i: i, seq: seq, text: req.text[i], trigger: talk.triggers[req.trigger[i]] || "",
        dispatch: req.dispatch[i], service: vo.service[i], start: start, ready: ready,
        queued: req.queued ? req.queued[i] : null, inFlight: req.in_flight ? req.in_flight[i] : null };
    });
    const rows = [];  // [request index, chunk or null, ready]
    if (P.count) {
      let k = 0;
      P.count.forEach(function (c, i) { for (let j = 0; j < c; j++, k++) rows.push([i, j, requests[i].start + P.off[k]]); });
    } else {
      requests.forEach(function (r, i) { rows.push([i, null, P.ready ? P.ready[i] : r.ready]); });
    }
    const parts = [];
    let prevEnd = 0;
    rows.forEach(function (row, j) {
      const r = row[0], ready = row[2];
      const dur = P.dur ? P.dur[j] : req.dur[r];
      let play;
      if (P.play) play = P.play[j];
      else play = dur > 0 || variant.silent === "hold" ? Math.max(ready, prevEnd) : null;
      const end = play === null ? null : play + dur;
      const idle = play === null ? 0 : Math.max(0, ready - prevEnd);
      const gapFrom = prevEnd;
      if (play !== null) prevEnd = end;
      parts.push({ j: j, seq: req.seq[r], chunk: row[1], request: requests[r], ready: ready, play: play, end: end,
        dur: dur, idle: idle, gapFrom: gapFrom, key: req.audio ? req.audio[r] : -1, n: req.n ? req.n[r] : 0,
        s0: P.s0 ? P.s0[j] : 0, s1: P.s1 ? P.s1[j] : (req.n ? req.n[r] : 0) });
    });
    return { output: talk.outputs[o], o: o, requests: requests, parts: parts, summary: vo.summary,
      signature: variant.signatures[vo.sig], rate: req.rate || 0, closed: !!req.queued };
  };

  /* A closed-loop output's queued audio q(t) = max(0, C_k − t), k the last part ready by t
   * (C_k its end of playback), as [t, q] corners in ns: it jumps at each readiness and falls
   * with slope −1 until the next readiness or 0. */
  T.queued = function (m) {
    const played = m.parts.filter(function (p) { return p.play !== null; });
    const pts = [];
    played.forEach(function (p, k) {
      const prevC = k ? played[k - 1].end : p.ready;
      pts.push([p.ready, Math.max(0, prevC - p.ready)], [p.ready, Math.max(0, p.end - p.ready)]);
      const next = k + 1 < played.length ? played[k + 1].ready : p.end;
      if (p.end <= next) { if (p.end > p.ready) pts.push([p.end, 0]); }
      else pts.push([next, p.end - next]);
    });
    return pts;
  };

  /* Output index of (system, condition) in the chosen panel, or -1. */
  T.find = function (talk, panel, system, condition) {
    return talk.outputs.findIndex(function (o) {
      if (o.system !== system || o.condition !== condition) return false;
      return Object.keys(panel).every(function (k) { return String(o[k]) === String(panel[k]); });
    });
  };

  function ticks(t0, t1, width) {
    const steps = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600];
    const want = (t1 - t0) / Math.max(2, width / 90);
    const step = steps.find(function (s) { return s >= want; }) || steps[steps.length - 1];
    const out = [];
    for (let t = Math.ceil(t0 / step) * step; t <= t1 + 1e-9; t += step) out.push(Number(t.toFixed(6)));
    return out;
  }

  function s(ns) { return X.sec(ns); }
  function us(ns) { return ns === null || ns === undefined ? "–" : X.fmt(ns / 1e9, 6) + " s"; }

  /* What hovering a request, a part or a text update shows (plain text). */
  function ms(ns) { return ns === null || ns === undefined ? "–" : X.fmt(ns / 1e6, 3) + " ms"; }
  function signed(v) { return v === null || v === undefined ? "–" : (v > 0 ? "+" : "") + X.fmt(v, 6) + " s"; }

  /* What hovering a live part ("l") or a live stall ("s") shows. */
  function liveTip(lane, kind, i) {
    const d = lane.data;
    const chunk = d.chunk[i] >= 0 ? ", chunk " + d.chunk[i] : "";
    const lines = [];
    if (kind === "s") {
      lines.push("live stall: " + us(d.wait[i]) + " of silence before request seq " + d.seq[i] + chunk + " (" +
        us(d.end[i - 1]) + " → " + us(d.play[i]) + ")");
    }
    lines.push("live part: request seq " + d.seq[i] + chunk + " · arrived " + us(d.arrival[i]) + " · playback " +
      us(d.play[i]) + " → " + us(d.end[i]) + " · waited " + us(d.wait[i]),
    "send lateness of its request: " + ms(d.late[i]));
    const S = d.summary;
    lines.push("output: L live " + signed(S.offset_s) + ", predicted by this replay " + signed(lane.predicted) +
      "; ΔL = predicted − live " + signed(lane.dL));
    lines.push("first playback " + signed(S.first_play_s) + " · stalls " + S.stall_count + " (" +
      X.fmt(S.stall_total_s, 6) + " s)" + (S.complete === false ? " · incomplete: " + S.n_failed + " request(s) failed" : ""));
    return lines.join("\n");
  }

  function joinTip(lane, i) {
    const J = lane.joins;
    const step = J.step_db[i];
    return ["join " + (i + 1) + ": request seq " + J.seq_before[i] + " → seq " + J.seq[i] + " at " + us(J.at[i]),
      "level step " + (step === null ? "–" : (step > 0 ? "+" : "") + X.fmt(step, 2)) + " dB (before " +
      X.fmt(J.level_before_db[i], 2) + " dBFS, after " + X.fmt(J.level_after_db[i], 2) + " dBFS)",
      "pause " + X.fmt(J.pause_s[i], 4) + " s · discontinuity " + X.fmt(J.discontinuity_db[i], 2) + " dB",
      "simulplay quality, listener audio of the primary replay"].join("\n");
  }

  T.tip = function (lane, kind, i) {
    if (lane.live) return liveTip(lane, kind, i);
    if (lane.hyp) return T.hypTip(lane, kind, i);
    if (kind === "j") return joinTip(lane, i);
    if (kind === "q") {
      return "queued audio q(t) = max(0, C_k − t), k the last request ready by t (closed loop); at most " +
        us(lane.qmax) + " in this lane";
    }
    if (kind === "u") {
      const u = lane.updates;
      return "text update at " + X.fmt(u.t[i], 6) + " s (" + lane.model.output.system + ")\n" + u.text[i];
    }
    const p = kind === "p" ? lane.model.parts[i] : null;
    const r = p ? p.request : lane.model.requests[i];
    const lines = [(p ? "part: request seq " + r.seq + (p.chunk !== null ? ", chunk " + p.chunk : "") : "request seq " + r.seq) +
      (r.trigger ? " · trigger " + r.trigger : ""), "text: " + r.text,
      ...(r.queued === null ? [] : ["the policy saw at dispatch: queued audio " + us(r.queued) + " · in flight " +
        (r.inFlight === null ? "–" : r.inFlight)]),
      "dispatch " + us(r.dispatch) + " · synthesis start " + us(r.start) + " · service " + us(r.service) +
      " · ready " + us(r.ready) + " (waited " + us(r.start - r.dispatch) + ")"];
    const shown = p ? [p] : lane.model.parts.filter(function (q) { return q.request === r; });
    shown.forEach(function (q) {
      if (q.play === null) lines.push("silent part (not played): ready " + us(q.ready));
      else lines.push((q.chunk !== null ? "chunk " + q.chunk + ": " : "") + "ready " + us(q.ready) + " · playback " +
        us(q.play) + " → " + us(q.end) + " · audio " + us(q.dur) + " · idle before " + us(q.idle));
    });
    if (shown.some(function (q) { return q.seq === lane.model.summary.limiting_seq; })) {
      lines.push("limiting part: the output's end follows from its readiness");
    }
    return lines.join("\n");
  };

  function drawLane(g, lane, y, x) {
    const m = lane.model;
    g.append(X.svg("rect", { class: "lane-bg", x: 0, y: y, width: "100%", height: LANE_H - 6 }));
    if (lane.updates) {
      lane.updates.t.forEach(function (t, i) {
        g.append(X.svg("line", { class: "update", x1: x(t), x2: x(t), y1: y + 4, y2: y + 16, "data-tip": "u:" + i }));
      });
    }
    m.requests.forEach(function (r, i) {
      const xd = x(s(r.dispatch)), xs = x(s(r.start)), xr = x(s(r.ready));
      g.append(X.svg("line", { class: "wait", x1: xd, x2: xs, y1: y + 27, y2: y + 27 }));
      g.append(X.svg("rect", { class: "req", x: xs, y: y + 21, width: Math.max(1, xr - xs), height: 12,
        "data-tip": "r:" + i, "data-seq": r.seq, "data-dispatch": s(r.dispatch), "data-start": s(r.start),
        "data-ready": s(r.ready) }));
    });
    const limiting = m.summary.limiting_seq;
    m.parts.forEach(function (p, i) {
      g.append(X.svg("line", { class: "ready-tick", x1: x(s(p.ready)), x2: x(s(p.ready)), y1: y + 38, y2: y + 44 }));
      if (p.play === null) return;
      if (p.play > p.gapFrom) {
        g.append(X.svg("rect", { class: "idle", x: x(s(p.gapFrom)), y: y + 46, width: Math.max(0.5, x(s(p.play)) - x(s(p.gapFrom))),
          height: 22, "data-tip": "p:" + i }));
      }
      g.append(X.svg("rect", { class: "seg" + (i % 2 ? " odd" : "") + (p.seq === limiting ? " limiting" : ""),
        x: x(s(p.play)), y: y + 46, width: Math.max(0.5, x(s(p.end)) - x(s(p.play))), height: 22, "data-tip": "p:" + i,
        "data-seq": p.seq, "data-chunk": p.chunk === null ? null : p.chunk, "data-ready": s(p.ready),
        "data-play": s(p.play), "data-end": s(p.end), "data-idle": s(p.idle) }));
    });
    if (m.closed) {
      const pts = T.queued(m);
      const qmax = Math.max.apply(null, [0].concat(pts.map(function (q) { return q[1]; })));
      lane.qmax = qmax;
      const yq = function (q) { return y + 68 - (qmax > 0 ? q / qmax * 22 : 0); };
      g.append(X.svg("polyline", { class: "queued", "data-tip": "q:0", "data-max": s(qmax),
        "data-points": pts.map(function (q) { return s(q[0]) + "," + s(q[1]); }).join(" "),
        points: pts.map(function (q) { return x(s(q[0])) + "," + yq(q[1]); }).join(" ") }));
    }
    if (m.summary.end_s !== null) {
      const xe = x(m.summary.end_s);
      g.append(X.svg("line", { class: "out-end", x1: xe, x2: xe, y1: y + 40, y2: y + 74, "data-end": m.summary.end_s }));
    }
    if (lane.joins) {
      lane.joins.at.forEach(function (at, k) {
        const xj = x(s(at)), yj = y + 78;
        g.append(X.svg("path", { class: "join", d: "M" + xj + " " + (yj - 5) + "l4 5l-4 5l-4 -5z", "data-tip": "j:" + k,
          "data-seq": lane.joins.seq[k], "data-at": s(at), "data-step": lane.joins.step_db[k] }));
      });
    }
    lane.playhead = X.svg("line", { class: "playhead", x1: -10, x2: -10, y1: y, y2: y + LANE_H - 6, "data-t": "" });
    g.append(lane.playhead);
  }

  /* A live lane: what the live run's virtual player did for this output. */
  function drawLive(g, lane, y, x) {
    const d = lane.data;
    g.append(X.svg("rect", { class: "lane-bg live-bg", x: 0, y: y, width: "100%", height: LIVE_H - 6 }));
    const stalls = new Set(d.stall);
    d.seq.forEach(function (seq, i) {
      g.append(X.svg("line", { class: "live-arrival", x1: x(s(d.arrival[i])), x2: x(s(d.arrival[i])), y1: y + 4, y2: y + 10 }));
      if (stalls.has(i)) {
        g.append(X.svg("rect", { class: "live-stall", x: x(s(d.end[i - 1])), y: y + 12, height: 20,
          width: Math.max(0.5, x(s(d.play[i])) - x(s(d.end[i - 1]))), "data-tip": "s:" + i, "data-seq": seq,
          "data-from": s(d.end[i - 1]), "data-to": s(d.play[i]) }));
      }
      g.append(X.svg("rect", { class: "live-seg" + (i % 2 ? " odd" : ""), x: x(s(d.play[i])), y: y + 12, height: 20,
        width: Math.max(0.5, x(s(d.end[i])) - x(s(d.play[i]))), "data-tip": "l:" + i, "data-seq": seq,
        "data-chunk": d.chunk[i], "data-arrival": s(d.arrival[i]), "data-play": s(d.play[i]), "data-end": s(d.end[i]),
        "data-late": s(d.late[i]) }));
    });
    if (d.summary.end_s !== null && d.summary.end_s !== undefined) {
      const xe = x(d.summary.end_s);
      g.append(X.svg("line", { class: "out-end live-end", x1: xe, x2: xe, y1: y + 8, y2: y + 36, "data-end": d.summary.end_s }));
    }
  }

  /* Draw the lanes of `view` (lanes, t0, t1) into the SVG element `svg`. */
  T.draw = function (svg, view) {
    const width = Math.max(480, svg.parentNode.clientWidth || 900);
    const plotW = width - LEFT - RIGHT;
    const ys = [];
    let bottom = TOP;
    view.lanes.forEach(function (lane) { ys.push(bottom); bottom += laneH(lane); });
    const height = bottom + AXIS_H;
    const span = view.t1 - view.t0;
    const x = function (t) { return LEFT + (t - view.t0) / span * plotW; };
    X.clear(svg);
    svg.setAttribute("width", width);
    svg.setAttribute("height", height);
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    svg.setAttribute("data-t0", view.t0);  // the axis: x = left + (t − t0) / (t1 − t0) · plot width
    svg.setAttribute("data-t1", view.t1);
    svg.setAttribute("data-left", LEFT);
    svg.setAttribute("data-plot-width", plotW);
    svg.append(X.svg("defs", null, X.svg("clipPath", { id: "plot-clip" },
      X.svg("rect", { x: LEFT, y: 0, width: plotW, height: height }))));
    const plot = X.svg("g", { "clip-path": "url(#plot-clip)" });
    svg.append(plot);
    view.lanes.forEach(function (lane, k) {
      const y = ys[k];
      if (lane.hyp) {
        svg.append(X.svg("text", { class: "lane-label hyp-label", x: 6, y: y + 18, text: "hypothesis" }),
          X.svg("text", { class: "lane-sub", x: 6, y: y + 32, text: lane.system + " · " + lane.condition }));
        const hg = X.svg("g", { class: "hyp-lane", "data-lane": k, "data-system": lane.system,
          "data-condition": lane.condition });
        plot.append(hg);
        T.drawHyp(hg, lane, y, x);
        return;
      }
      if (lane.live) {
        svg.append(X.svg("text", { class: "lane-label live-label", x: 6, y: y + 18, text: "live" }),
          X.svg("text", { class: "lane-sub", x: 6, y: y + 32, text: lane.system + " · " + lane.condition }));
        const lg = X.svg("g", { class: "live-lane", "data-lane": k, "data-system": lane.system,
          "data-condition": lane.condition, "data-release": lane.release, "data-dl": lane.dL });
        plot.append(lg);
        drawLive(lg, lane, y, x);
        return;
      }
      svg.append(X.svg("text", { class: "lane-label", x: 6, y: y + 30, text: lane.system }),
        X.svg("text", { class: "lane-sub", x: 6, y: y + 46, text: lane.condition }));
      const g = X.svg("g", { class: "lane", "data-lane": k, "data-system": lane.system, "data-condition": lane.condition,
        "data-output": lane.model ? lane.model.o : "" });
      plot.append(g);
      if (!lane.model) {
        svg.append(X.svg("text", { class: "lane-missing", x: LEFT + 8, y: y + 50, text: "no output under this variant" }));
        return;
      }
      drawLane(g, lane, y, x);
    });
    if (view.source !== null) {
      const xs = x(view.source);
      plot.append(X.svg("line", { class: "source-end", x1: xs, x2: xs, y1: TOP, y2: bottom,
        "data-s": view.source }));
      plot.append(X.svg("text", { class: "source-label", x: xs + 4, y: TOP + 10, text: "S" }));
    }
    const axisY = bottom + 4;
    const axis = X.svg("g", { class: "axis" }, X.svg("line", { x1: LEFT, x2: LEFT + plotW, y1: axisY, y2: axisY }));
    ticks(view.t0, view.t1, plotW).forEach(function (t) {
      axis.append(X.svg("line", { x1: x(t), x2: x(t), y1: axisY, y2: axisY + 5 }),
        X.svg("text", { x: x(t), y: axisY + 17, "text-anchor": "middle", text: String(t) }));
    });
    axis.append(X.svg("text", { x: LEFT - 6, y: axisY + 17, "text-anchor": "end", text: "s from source start" }));
    svg.append(axis);
    view.x = x;
    view.toTime = function (px) { return view.t0 + (px - LEFT) / plotW * span; };
    view.inPlot = function (px) { return px >= LEFT && px <= LEFT + plotW; };
    T.playheads(view);
  };

  /* Move each lane's playhead to its audio's position (source clock = audio clock). */
  T.playheads = function (view) {
    view.lanes.forEach(function (lane) {
      if (!lane.playhead) return;
      const a = lane.audio;
      if (!a || !a.src || a.readyState < 1) { lane.playhead.setAttribute("data-t", ""); return; }
      const px = view.x(a.currentTime);
      lane.playhead.setAttribute("x1", px);
      lane.playhead.setAttribute("x2", px);
      lane.playhead.setAttribute("data-t", String(a.currentTime));
    });
  };

  /* Zoom by `factor` around source time `at` (seconds), within the talk's extent. */
  T.zoom = function (view, factor, at) {
    const span = Math.min(view.max, Math.max(0.05, (view.t1 - view.t0) * factor));
    let t0 = at - (at - view.t0) * span / (view.t1 - view.t0);
    t0 = Math.max(0, Math.min(view.max - span, t0));
    view.t0 = t0;
    view.t1 = t0 + span;
  };
  T.pan = function (view, seconds) {
    const span = view.t1 - view.t0;
    view.t0 = Math.max(0, Math.min(view.max - span, view.t0 + seconds));
    view.t1 = view.t0 + span;
  };
})();
