/* simulplay explorer: state, controls and the timeline's interaction (hover, zoom, pan,
 * listening). The view is named in the address (#talk=…&condition=…&variant=…&panel=…),
 * so a link opens the same talk. */
"use strict";
(function () {
  const X = window.simulplayExplorer;
  const state = { variant: 0, panel: 0, talk: null, condition: null };
  let view = null;
  const rendered = {};  // variant key + output index → blob URL of the lane's listener audio

  function intro() {
    const p = X.data.panel;
    const node = X.clear(document.getElementById("intro"));
    node.append("Translators A = " + p.a + " and F = " + p.f + ", reference condition " + p.reference + ", " +
      p.talks.length + " talk(s), " + p.panels.length + " panel(s). Times are seconds from source start. ");
    const facts = X.el("ul", { class: "facts" }, p.measured.map(function (m) {
      return X.el("li", null, m[1].startsWith(m[0] + ":") ? m[1] : [X.el("strong", { text: m[0] + ": " }), m[1]]);
    }));
    const notes = p.notes.concat(p.audio_note ? [p.audio_note] : []);
    node.after(facts, X.el("ul", { class: "notes", id: "run-notes" },
      notes.map(function (n) { return X.el("li", { text: n }); })));
  }

  function select(id, label, options, value, onchange) {
    return X.el("label", null, label + " ", X.el("select", { id: id, onchange: function (e) { onchange(Number(e.target.value)); } },
      options.map(function (o, i) { return X.el("option", { value: i, selected: i === value, text: o }); })));
  }

  function controls() {
    const p = X.data.panel;
    X.fill(X.clear(document.getElementById("controls")),
      select("variant", "Replay", p.variants.map(function (v) { return v.title; }), state.variant, function (i) {
        state.variant = i; refresh();
      }),
      select("panel", "Panel", p.panels.map(X.panelName), state.panel, function (i) { state.panel = i; refresh(); }),
      X.data.sweep ? X.el("button", { type: "button", id: "to-sweep", text: "modelled sweep ↓", onclick: function () {
        document.getElementById("sweep-view").scrollIntoView({ block: "start" });
      } }) : null);
  }

  function writeHash() {
    const v = X.data.panel.variants[state.variant].key;
    const parts = ["variant=" + encodeURIComponent(v), "panel=" + state.panel];
    if (state.talk !== null) parts.push("talk=" + encodeURIComponent(state.talk), "condition=" + encodeURIComponent(state.condition));
    history.replaceState(null, "", "#" + parts.join("&"));
  }

  function readHash() {
    const got = {};
    location.hash.slice(1).split("&").forEach(function (kv) {
      const i = kv.indexOf("=");
      if (i > 0) { try { got[kv.slice(0, i)] = decodeURIComponent(kv.slice(i + 1)); } catch (e) { /* ignored */ } }
    });
    const p = X.data.panel;
    const v = p.variants.findIndex(function (x) { return x.key === got.variant; });
    if (v >= 0) state.variant = v;
    if (Number(got.panel) >= 0 && Number(got.panel) < p.panels.length) state.panel = Number(got.panel);
    return got;
  }

  function refresh() {
    writeHash();
    X.panelView.render(state);
    if (state.talk !== null) showTimeline();
  }

  X.open = function (talk, condition) {
    state.talk = talk;
    state.condition = condition;
    view = null;
    writeHash();
    const section = document.getElementById("timeline-view");
    section.hidden = false;
    const entry = X.data.panel.talks.find(function (t) { return t.id === talk; });
    if (!entry) { X.clear(section).append(X.el("p", { class: "note", text: "No talk " + talk + " in this run." })); return; }
    section.setAttribute("data-state", "loading");
    X.loadScript("data/talks/" + encodeURIComponent(entry.file)).then(function () {
      showTimeline();
      section.scrollIntoView({ block: "start" });
    }, function (e) {
      X.clear(section).append(X.el("p", { class: "note", text: "The data of talk " + talk + " could not be loaded (" + e.message + ")." }));
    });
  };

  function lanesOf(talk) {
    const p = X.data.panel;
    const vkey = p.variants[state.variant].key;
    const panel = p.panels[state.panel];
    const lanes = [];
    p.systems.slice(0, 2).forEach(function (system) {
      [p.reference, state.condition].forEach(function (condition) {
        const o = X.timeline.find(talk, panel, system, condition);
        const model = o >= 0 ? X.timeline.model(talk, vkey, o) : null;
        const joins = model && talk.joins && talk.joins.variant === vkey ? talk.joins.outputs[o] : null;
        lanes.push({ system: system, condition: condition, model: model, updates: talk.updates[system] || null,
          id: vkey + "\u0000" + o, joins: joins });
        const commits = o >= 0 && talk.commits ? talk.commits[o] : null;
        if (commits) lanes.push({ hyp: true, system: system, condition: condition, spans: talk.hyp[system], commits: commits });
        const live = o >= 0 && talk.live ? talk.live.outputs[o] : null;
        const release = talk.live ? talk.live.releases[vkey] : null;
        if (live && live[release]) {
          lanes.push({ live: true, system: system, condition: condition, release: release, data: live[release],
            dL: vkey in live[release].dL ? live[release].dL[vkey] : null, predicted: model ? model.summary.offset_s : null });
        }
      });
    });
    return lanes;
  }

  function showTimeline() {
    const p = X.data.panel;
    const talk = X.data.talk[state.talk];
    if (!talk) return;
    const v = p.variants[state.variant];
    const lanes = lanesOf(talk);
    const ends = lanes.map(function (l) { return l.live ? l.data.summary.end_s : l.model && l.model.summary.end_s; })
      .filter(function (e) { return e; });
    const source = talk.outputs.length ? talk.outputs[0].source_s : null;
    const max = Math.max.apply(null, ends.concat([source || 1])) * 1.02;
    const keep = view && view.talk === state.talk ? view : null;
    view = { talk: state.talk, lanes: lanes, source: source, max: max, t0: keep ? keep.t0 : 0, t1: keep ? Math.min(keep.t1, max) : max };
    const section = X.clear(document.getElementById("timeline-view"));
    const svg = X.svg("svg", { id: "lanes", role: "img", "aria-label": "timeline of talk " + state.talk });
    X.fill(section,
      X.el("h2", { text: "Talk " + state.talk + ": " + state.condition + " against " + p.reference }),
      X.el("p", { class: "caption", text: "Replay: " + v.title + "; " + X.panelName(p.panels[state.panel]) + ". Per lane: " +
        "text updates (ticks), each request waiting (line) and synthesizing (bar) until ready, playback (blue, " +
        "alternating shades) with idle time (orange), the limiting part outlined red, the output's end (black) and " +
        "source end S (red dashes). Scroll to zoom, drag to pan, double-click for the whole talk; hover for times; " +
        "click a part to hear it." + (talk.live ? " Under a lane the live run played, live: the parts its virtual player " +
        "played (" + (talk.live.releases[v.key] || "request") + " release; ticks: arrival), its stalls (red) and its end; " +
        "hover for the send lateness and ΔL = L predicted − L live." : "") + (talk.joins && talk.joins.variant === v.key ?
        " Diamonds mark the joins of the listener audio (simulplay quality); hover for the level step in dB." : "") +
        (talk.hyp ? " Under a lane of a translator that revises, its hypothesis: the final text where each update " +
        "wrote it, each span a later update took back struck through until then, and the commits of the lane's " +
        "commit policy (ticks; hover for the requests they became)." : "") }),
      timelineControls(talk),
      X.el("div", { class: "plot" }, svg),
      laneAudio(talk),
      X.el("h3", { text: "Signatures" }),
      lanes.map(function (l) {
        if (l.live || l.hyp) return null;
        return l.model ? X.signatures([l.model.signature], l.system + " · " + l.condition) : null;
      }),
      talk.live ? X.signatures([talk.live.signature], "live run " + talk.live.source) : null,
      talk.joins ? X.signatures([talk.joins.signature], "joins " + talk.joins.source) : null);
    interact(svg);
    X.timeline.draw(svg, view);
    section.setAttribute("data-state", "ready");
    section.setAttribute("data-talk", state.talk);
    section.setAttribute("data-variant", v.key);
  }

  function timelineControls(talk) {
    const p = X.data.panel;
    const conds = p.conditions.filter(function (c) { return c !== p.reference; });
    const zoom = function (f) { return function () { X.timeline.zoom(view, f, (view.t0 + view.t1) / 2); redraw(); }; };
    return X.el("div", { class: "tools" },
      select("talk", "Talk", p.talks.map(function (t) { return t.id; }), p.talks.findIndex(function (t) { return t.id === talk.talk; }),
        function (i) { X.open(p.talks[i].id, state.condition); }),
      select("condition", "Condition", conds, conds.indexOf(state.condition), function (i) { X.open(state.talk, conds[i]); }),
      X.el("button", { type: "button", onclick: zoom(1 / 1.5), text: "zoom in" }),
      X.el("button", { type: "button", onclick: zoom(1.5), text: "zoom out" }),
      X.el("button", { type: "button", onclick: function () { view.t0 = 0; view.t1 = view.max; redraw(); }, text: "whole talk" }));
  }

  let pending = false;
  function redraw() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () { pending = false; X.timeline.draw(document.getElementById("lanes"), view); });
  }

  function interact(svg) {
    const tip = document.getElementById("tip");
    let drag = null;
    svg.addEventListener("wheel", function (e) {
      const px = e.clientX - svg.getBoundingClientRect().left;  // offsetX is the target's in some browsers
      if (!view.inPlot(px)) return;
      e.preventDefault();
      X.timeline.zoom(view, e.deltaY > 0 ? 1.25 : 0.8, view.toTime(px));
      redraw();
    }, { passive: false });
    svg.addEventListener("pointerdown", function (e) { drag = { x: e.clientX, moved: false }; });
    svg.addEventListener("pointermove", function (e) {
      if (drag && Math.abs(e.clientX - drag.x) > 3) {
        X.timeline.pan(view, view.toTime(drag.x) - view.toTime(e.clientX));
        drag.x = e.clientX;
        drag.moved = true;
        redraw();
      }
      const t = e.target.getAttribute && e.target.getAttribute("data-tip");
      const g = e.target.closest && e.target.closest("g.lane, g.live-lane, g.hyp-lane");
      if (!t || !g) { tip.hidden = true; return; }
      const lane = view.lanes[Number(g.getAttribute("data-lane"))];
      const kind = t.split(":")[0], i = Number(t.split(":")[1]);
      tip.textContent = X.timeline.tip(lane, kind, i);
      tip.hidden = false;
      tip.style.left = Math.min(e.pageX + 14, document.documentElement.scrollWidth - 380) + "px";
      tip.style.top = e.pageY + 14 + "px";
    });
    svg.addEventListener("pointerleave", function () { tip.hidden = true; });
    svg.addEventListener("pointerup", function (e) {
      const moved = drag && drag.moved;
      drag = null;
      const t = e.target.getAttribute && e.target.getAttribute("data-tip");
      const g = e.target.closest && e.target.closest("g.lane");
      if (moved || !t || !g || t[0] !== "p") return;
      const lane = view.lanes[Number(g.getAttribute("data-lane"))];
      const part = lane.model.parts[Number(t.split(":")[1])];
      if (part.play !== null) listen(lane, X.sec(part.play));
    });
    svg.addEventListener("dblclick", function () { view.t0 = 0; view.t1 = view.max; redraw(); });
  }

  function laneAudio(talk) {
    const p = X.data.panel;
    const entry = p.talks.find(function (t) { return t.id === talk.talk; });
    return X.el("div", { class: "lane-audio" }, view.lanes.map(function (lane, k) {
      if (lane.live || lane.hyp) return null;
      const status = X.el("span", { class: "status" });
      const audio = X.el("audio", { controls: true, preload: "auto", "data-lane": k });
      lane.audio = audio;
      lane.status = status;
      lane.entry = entry;
      audio.addEventListener("timeupdate", function () { X.timeline.playheads(view); });
      audio.addEventListener("seeked", function () { X.timeline.playheads(view); });
      const button = X.el("button", { type: "button", class: "play", "data-lane": k, text: "▶ listen",
        onclick: function () { listen(lane, null); } });
      if (p.audio_note || !lane.model || !entry.audio) {
        status.textContent = p.audio_note || (lane.model ? "No stored audio for this talk." : "");
        button.disabled = true;
      }
      if (rendered[lane.id]) audio.src = rendered[lane.id];
      return X.el("div", { class: "lane-row", "data-lane": k }, X.el("strong", { text: lane.system + " · " + lane.condition }),
        button, audio, status);
    }));
  }

  /* Render the lane's listener audio (once per variant and output), then play it from `at` s. */
  function listen(lane, at) {
    if (!lane.model || X.data.panel.audio_note || !lane.entry.audio) return;
    const ready = rendered[lane.id] ? Promise.resolve() : X.audio.load(state.talk, lane.entry.file).then(function (got) {
      lane.status.textContent = "rendering…";
      return X.audio.render(lane.model.parts.map(function (q) {
        return { play: q.play, end: q.end, key: X.data.talk[state.talk].audio_keys[q.key], s0: q.s0, s1: q.s1, n: q.n };
      }), lane.model.rate, got.files, got.problems);
    }).then(function (samples) {
      rendered[lane.id] = URL.createObjectURL(X.audio.wav(samples, lane.model.rate));
      lane.audio.src = rendered[lane.id];
      lane.status.textContent = "";
    });
    ready.then(function () {
      if (at !== null) lane.audio.currentTime = at;
      return lane.audio.play();
    }).catch(function (e) {
      lane.status.textContent = "Audio damaged: " + e.message + ". The other lanes play.";
      lane.status.classList.add("bad");
    });
  }

  function frame() {
    if (view && view.lanes.some(function (l) { return l.audio && !l.audio.paused; })) X.timeline.playheads(view);
    requestAnimationFrame(frame);
  }

  X.handlers.panel = function () {
    intro();
    const got = readHash();
    controls();
    X.panelView.render(state);
    X.sweepView.render();  // data/sweep.js ran before data/panel.js, when the run has a sweep
    document.body.setAttribute("data-state", "ready");
    requestAnimationFrame(frame);
    if (got.talk !== undefined && got.condition !== undefined) X.open(got.talk, got.condition);
    else writeHash();
  };
  window.addEventListener("resize", function () {
    if (view) redraw();
    if (X.data.sweep) X.sweepView.render();
  });
})();
