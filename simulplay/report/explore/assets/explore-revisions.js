/* simulplay explorer: the revision lane of a re-translating translator's output, under its
 * lane. Top row: the spans of the final hypothesis at the time the update that wrote them
 * arrived (a tick and its text). Middle row: each span a later update took back, from when it was
 * written to when it was retracted (bar, text struck through). Bottom row: the commits of
 * the output's commit policy (ticks); hovering one names its text and the requests it
 * became. Times are seconds from source start. */
"use strict";
(function () {
  const X = window.simulplayExplorer;
  const T = X.timeline;
  T.HYP_H = 58;

  function struck(text) { return Array.from(text).map(function (c) { return c + "\u0336"; }).join(""); }
  function sec(t) { return X.fmt(t, 6) + " s"; }

  T.drawHyp = function (g, lane, y, x) {
    const sp = lane.spans, cm = lane.commits;
    g.append(X.svg("rect", { class: "lane-bg hyp-bg", x: 0, y: y, width: "100%", height: T.HYP_H - 6 }));
    sp.t0.forEach(function (t0, i) {
      const t1 = sp.t1[i], x0 = x(t0);
      if (t1 === null) {
        g.append(X.svg("rect", { class: "span kept", x: x0 - 1, y: y + 3, width: 2, height: 12, "data-tip": "h:" + i,
          "data-t0": t0, "data-text": sp.text[i] }));
        g.append(X.svg("text", { class: "span-text", x: x0 + 2, y: y + 13, text: sp.text[i] }));
        return;
      }
      const x1 = x(t1);
      g.append(X.svg("rect", { class: "span retracted", x: x0, y: y + 18, width: Math.max(1, x1 - x0), height: 12,
        "data-tip": "h:" + i, "data-t0": t0, "data-t1": t1, "data-text": sp.text[i] }));
      g.append(X.svg("line", { class: "strike", x1: x0, x2: Math.max(x0 + 1, x1), y1: y + 24, y2: y + 24 }));
      g.append(X.svg("text", { class: "span-text struck", x: x0 + 2, y: y + 28, text: sp.text[i] }));
    });
    cm.t.forEach(function (t, k) {
      const xc = x(t);
      g.append(X.svg("rect", { class: "commit", x: xc - 1.5, y: y + 35, width: 3, height: 14, "data-tip": "c:" + k,
        "data-t": t, "data-text": cm.text[k], "data-req": cm.req[k].join(",") }));
    });
  };

  T.hypTip = function (lane, kind, i) {
    if (kind === "c") {
      const c = lane.commits, req = c.req[i];
      return "commit at " + sec(c.t[i]) + " (" + lane.system + " · " + lane.condition + ")\n" + c.text[i] + "\n→ " +
        (req.length ? "request" + (req.length > 1 ? "s" : "") + " seq " + req.join(", ") : "no request");
    }
    const s = lane.spans;
    if (s.t1[i] === null) return "written at " + sec(s.t0[i]) + "; in the final hypothesis\n" + s.text[i];
    return "written at " + sec(s.t0[i]) + ", retracted at " + sec(s.t1[i]) + "\n" + struck(s.text[i]);
  };
})();
