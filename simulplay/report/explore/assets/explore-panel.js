/* simulplay explorer: the panel view — the η table of the chosen variant (conditions ×
 * panels, with intervals and direction counts) and the talk × condition grid of per-talk
 * η in the chosen panel, coloured by sign (blue: η < 0, A's gap shrinks; red: η > 0)
 * and size (saturation ∝ |η| / the grid's largest |η|). Clicking a cell opens that talk
 * and condition. Every table shows its signatures and notes. */
"use strict";
(function () {
  const X = window.simulplayExplorer;
  const P = (X.panelView = {});
  const ETA_LABELS = {
    n_talks: "talks", eta_s: "η (s)", ci_low_s: "CI low (s)", ci_high_s: "CI high (s)", n_negative: "η<0",
    n_zero: "η=0", n_positive: "η>0", delta_ref_s: "δ(0) (s)", delta_s: "δ(w) (s)", duration_part_s: "duration part (s)",
    idle_part_s: "idle part (s)",
  };

  function column(table, name) { return table.columns.indexOf(name); }

  function etaTable(v, panels) {
    const t = v.eta;
    const shown = t.columns.filter(function (c) { return c in ETA_LABELS; });
    const head = X.el("tr", null, X.el("th", { text: "panel" }), X.el("th", { text: "condition" }),
      shown.map(function (c) { return X.el("th", { class: "num", text: ETA_LABELS[c] }); }));
    const rows = t.rows.map(function (r) {
      const p = r[0] >= 0 ? X.panelName(panels[r[0]]) : "–";
      return X.el("tr", { "data-condition": r[column(t, "condition")], "data-panel": r[0] },
        X.el("td", { text: p }), X.el("td", { text: r[column(t, "condition")] }),
        shown.map(function (c) {
          const x = r[column(t, c)];
          return X.el("td", { class: "num", text: c.startsWith("n_") ? String(x) : X.fmt(x) });
        }));
    });
    return X.el("div", { class: "scroll" }, X.el("table", { class: "eta" }, X.el("thead", null, head),
      X.el("tbody", null, rows)));
  }

  function colour(eta, scale) {
    if (eta === null || !isFinite(eta)) return "#eee";
    const a = scale > 0 ? Math.min(1, Math.abs(eta) / scale) : 0;
    const base = eta < 0 ? [44, 110, 190] : [200, 60, 50];
    const mix = function (c) { return Math.round(255 - (255 - c) * (0.12 + 0.88 * a)); };
    return "rgb(" + base.map(mix).join(",") + ")";
  }

  function grid(state, v) {
    const panel = X.data.panel;
    const t = v.per_talk;
    const ci = column(t, "condition"), ti = column(t, "talk_id"), ei = column(t, "eta_s");
    const conds = panel.conditions.filter(function (c) { return c !== panel.reference; });
    const cells = {};
    let scale = 0;
    t.rows.forEach(function (r) {
      if (r[0] !== state.panel) return;
      cells[r[ti] + "\u0000" + r[ci]] = r;
      if (r[ei] !== null) scale = Math.max(scale, Math.abs(r[ei]));
    });
    const head = X.el("tr", null, X.el("th", { text: "talk" }),
      conds.map(function (c) { return X.el("th", { class: "num", text: c }); }));
    const body = panel.talks.map(function (talk) {
      return X.el("tr", null, X.el("th", { scope: "row", text: talk.id }), conds.map(function (c) {
        const r = cells[talk.id + "\u0000" + c];
        if (!r) return X.el("td", { class: "cell empty", text: "–" });
        const open = function () { X.open(talk.id, c); };
        return X.el("td", {
          class: "cell num", role: "button", tabindex: 0, "data-talk": talk.id, "data-condition": c,
          "data-eta": String(r[ei]), style: "background:" + colour(r[ei], scale),
          title: "talk " + talk.id + " · " + c + ": η = " + X.fmt(r[ei]) + " s",
          onclick: open, onkeydown: function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); open(); } },
          text: X.fmt(r[ei]),
        });
      }));
    });
    return X.el("div", { class: "scroll" }, X.el("table", { class: "grid" }, X.el("thead", null, head),
      X.el("tbody", null, body)));
  }

  P.render = function (state) {
    const panel = X.data.panel;
    const v = panel.variants[state.variant];
    X.fill(X.clear(document.getElementById("panel-view")),
      X.el("h2", { text: "η: " + panel.a + " vs " + panel.f + ", reference " + panel.reference }),
      X.el("p", { class: "caption", text: "Replay: " + v.title + ". η = δ(w) − δ(0) with δ = L(" + panel.a + ") − L(" +
        panel.f + "), equal-talk means in seconds, paired talk-bootstrap intervals; η<0 and η>0 count the talks " +
        "moving each way, η=0 those within the tie tolerance of zero." }),
      etaTable(v, panel.panels), X.notes(v.notes), X.signatures(v.eta_lines),
      X.el("h2", { text: "Per-talk η in " + X.panelName(panel.panels[state.panel]) }),
      X.el("p", { class: "caption", text: "Each cell is one talk's η (s) under one condition against the " +
        "reference; blue: negative (A's gap to F shrinks), red: positive, stronger for larger |η|. Click a cell to " +
        "see that talk's timeline." }),
      grid(state, v), X.signatures(v.talk_lines));
  };
})();
