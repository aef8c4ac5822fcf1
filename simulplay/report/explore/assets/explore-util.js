/* simulplay explorer: the data registry, script loading and DOM helpers.
 *
 * Data files are scripts calling simulplayExplorer.receive(kind, id, data): a page opened
 * from disk may not fetch() its own files, but it may load scripts beside it. Text from
 * data is only ever set as text (textContent, attribute values), never parsed as markup.
 */
"use strict";
(function () {
  const X = (window.simulplayExplorer = window.simulplayExplorer || {});
  const SVG_NS = "http://www.w3.org/2000/svg";
  X.data = { panel: null, sweep: null, talk: {}, audio: {} };
  X.handlers = {};
  X.receive = function (kind, id, data) {
    if (kind === "panel" || kind === "sweep") X.data[kind] = data;
    else if (kind === "talk" || kind === "audio") X.data[kind][id] = data;
    const handler = X.handlers[kind];
    if (handler) handler(id, data);
  };

  const loading = {};
  /* Load a script beside the page once; resolves when it has run. */
  X.loadScript = function (src) {
    if (!loading[src]) {
      loading[src] = new Promise(function (resolve, reject) {
        const s = document.createElement("script");
        s.src = src;
        s.onload = function () { resolve(); };
        s.onerror = function () { delete loading[src]; reject(new Error("cannot load " + src)); };
        document.body.appendChild(s);
      });
    }
    return loading[src];
  };

  /* An element with attributes and children (strings become text nodes). */
  X.el = function (tag, attrs) {
    const node = document.createElement(tag);
    setAll(node, attrs);
    for (let i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  };
  X.svg = function (tag, attrs) {
    const node = document.createElementNS(SVG_NS, tag);
    setAll(node, attrs);
    for (let i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  };
  function setAll(node, attrs) {
    if (!attrs) return;
    for (const k of Object.keys(attrs)) {
      const v = attrs[k];
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") node.textContent = String(v);
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
  }
  function append(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { append(node, c); }); return; }
    node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
  X.clear = function (node) { while (node.firstChild) node.removeChild(node.firstChild); return node; };
  /* Append children (arrays flattened, strings as text) to `node`. */
  X.fill = function (node) {
    for (let i = 1; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  };

  /* Seconds with `digits` decimals; missing values as an en dash. */
  X.fmt = function (x, digits) {
    if (x === null || x === undefined || !isFinite(x)) return "–";
    return Number(x).toFixed(digits === undefined ? 3 : digits);
  };
  /* Whole nanoseconds as seconds: the float the parts table holds (ns / 10⁹). */
  X.sec = function (ns) { return ns === null || ns === undefined ? null : ns / 1e9; };
  X.signatures = function (lines, label) {
    return lines.map(function (s) {
      return X.el("p", { class: "sig" }, (label || "Signature") + ": ", X.el("code", { text: s }));
    });
  };
  X.notes = function (notes) {
    return notes.map(function (n) { return X.el("p", { class: "note" }, X.el("strong", { text: "Note: " }), n); });
  };
  X.panelName = function (p) {
    const parts = [];
    if (p.backend !== undefined) parts.push(p.backend);
    if (p.realization !== undefined) parts.push("realization " + p.realization);
    return parts.join(" · ") || "all outputs";
  };
})();
