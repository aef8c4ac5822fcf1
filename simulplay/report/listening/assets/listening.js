// The listening test's page (simulplay listening-test). Everything runs here, from file://:
// the audio is in data/test.js as data: URLs, the ratings stay in this page until the rater
// downloads them as CSV (a Blob and <a download>); nothing is fetched or sent.
(function () {
  "use strict";
  const data = window.simulplayListening;
  const $ = (id) => document.getElementById(id);
  const state = { rater: "", index: 0, ratings: [], plays: { a: 0, b: 0 }, shownAt: 0, key: null };
  const players = { a: new Audio(), b: new Audio() };

  function problem(text) {
    $("problem").textContent = text;
    $("problem").hidden = false;
  }

  function unblind() { // the conditions, readable only now (page.py: XOR with the pad)
    const bytes = Uint8Array.from(atob(data.key), (c) => c.charCodeAt(0));
    const pad = Uint8Array.from(atob(data.pad), (c) => c.charCodeAt(0));
    return JSON.parse(new TextDecoder().decode(bytes.map((b, i) => b ^ pad[i])));
  }

  function stop() {
    for (const side of ["a", "b"]) { players[side].pause(); }
  }

  function play(side) {
    stop();
    const audio = players[side];
    audio.currentTime = 0;
    audio.play().then(() => {
      state.plays[side] += 1;
      document.body.dataset["played" + side.toUpperCase()] = String(state.plays[side]);
      update();
    }, (err) => problem("This browser cannot play the audio: " + err.message));
  }

  function chosen() {
    const input = document.querySelector("input[name=rating]:checked");
    return input ? Number(input.value) : null;
  }

  function update() {
    $("next").disabled = !(state.plays.a > 0 && state.plays.b > 0 && chosen() !== null);
  }

  function show(i) {
    const t = data.trials[i];
    stop();
    players.a.src = data.audio[t.a];
    players.b.src = data.audio[t.b];
    state.plays = { a: 0, b: 0 };
    delete document.body.dataset.playedA;
    delete document.body.dataset.playedB;
    for (const input of document.querySelectorAll("input[name=rating]")) { input.checked = false; }
    $("progress").textContent = "Pair " + (i + 1) + " of " + data.trials.length;
    document.body.dataset.trial = String(i + 1);
    state.shownAt = performance.now();
    update();
  }

  function next() {
    const t = data.trials[state.index];
    state.ratings.push({ trial: t.trial, excerpt: t.excerpt, a: t.a, b: t.b, rating: chosen(),
      plays_a: state.plays.a, plays_b: state.plays.b,
      seconds: ((performance.now() - state.shownAt) / 1000).toFixed(1) });
    state.index += 1;
    if (state.index < data.trials.length) {
      show(state.index);
      return;
    }
    stop();
    $("trial").hidden = true;
    try {
      finish(unblind());
    } catch (err) {
      problem("The key could not be read: " + err.message);
    }
  }

  function finish(key) {
    state.key = key;
    const table = $("unblinded");
    const head = table.insertRow();
    for (const h of ["Pair", "A", "B", "Your rating"]) { head.insertCell().textContent = h; }
    const words = Object.fromEntries(data.scale);
    state.ratings.forEach((r, i) => {
      const row = table.insertRow();
      const [ca, cb] = key.trials[i];
      for (const v of [String(i + 1), ca, cb, words[r.rating]]) { row.insertCell().textContent = v; }
    });
    $("summary").textContent = "You rated " + state.ratings.length + " pairs. Download your ratings and " +
      "send the file on. The table shows what each pair compared.";
    $("done").hidden = false;
    document.body.dataset.state = "done";
  }

  function csvField(v) {
    const s = String(v);
    return /[",\n\r]/.test(s) ? "\"" + s.replace(/"/g, "\"\"") + "\"" : s;
  }

  function exportCsv() {
    const cols = ["test_id", "rater", "trial", "excerpt", "stimulus_a", "stimulus_b", "condition_a",
      "condition_b", "repeat", "rating", "plays_a", "plays_b", "seconds", "signature"];
    const lines = [cols.join(",")];
    state.ratings.forEach((r, i) => {
      const [ca, cb, rep] = state.key.trials[i];
      lines.push([data.test_id, state.rater, r.trial, r.excerpt, r.a, r.b, ca, cb, rep, r.rating,
        r.plays_a, r.plays_b, r.seconds, state.key.signature].map(csvField).join(","));
    });
    const blob = new Blob([lines.join("\n") + "\n"], { type: "text/csv" });
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = "ratings-" + data.test_id + "-" + state.rater.replace(/[^A-Za-z0-9_-]+/g, "_") + ".csv";
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 60000);
  }

  function start() {
    state.rater = $("rater").value.trim();
    $("start").hidden = true;
    $("trial").hidden = false;
    document.body.dataset.state = "rating";
    show(0);
  }

  if (!data) {
    problem("data/test.js is missing: open index.html in the folder simulplay wrote.");
    return;
  }
  $("rater").addEventListener("input", () => { $("begin").disabled = $("rater").value.trim() === ""; });
  $("begin").addEventListener("click", start);
  $("play-a").addEventListener("click", () => play("a"));
  $("play-b").addEventListener("click", () => play("b"));
  $("scale").addEventListener("change", update);
  $("next").addEventListener("click", next);
  $("export").addEventListener("click", exportCsv);
  document.body.dataset.state = "ready";
}());
