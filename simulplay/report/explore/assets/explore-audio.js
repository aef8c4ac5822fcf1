/* simulplay explorer: each lane's listener audio, rendered in the page.
 *
 * The requests' stored FLAC files come base64-encoded in data/audio/<talk>.js. Each is
 * decoded at its own rate (no resampling), checked as the store checks it (the sample
 * count the manifest names; SHA-256 of "rate:" and the int16 samples equals its key,
 * where crypto.subtle exists), and the lane's parts are placed on the sample grid by
 * `simulplay render`'s rule (simulplay.sim.listener_audio): a part that starts exactly
 * when the previous one ends follows it sample for sample; any other starts at the
 * sample nearest its playback start, floor(p·sr/10⁹ + 1/2), never before the previous
 * part's end. The result plays from source start: audio time = source time.
 */
"use strict";
(function () {
  const X = window.simulplayExplorer;
  const A = (X.audio = {});
  const decoded = {};

  function bytes(b64) {
    const bin = atob(b64);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }

  function hex(buffer) {
    return Array.from(new Uint8Array(buffer), function (b) { return b.toString(16).padStart(2, "0"); }).join("");
  }

  /* int16 samples as little-endian bytes (the store's key hashes those). */
  function littleEndian(samples) {
    const view = new DataView(new ArrayBuffer(samples.length * 2));
    for (let i = 0; i < samples.length; i++) view.setInt16(2 * i, samples[i], true);
    return new Uint8Array(view.buffer);
  }

  /* A decoded float back to its int16: browsers scale by 1/32768, or (Chromium) positive
   * values by 1/32767; the one whose float is this value is the sample. */
  function toInt16(x) {
    const a = Math.round(x * 32768);
    const v = Math.fround(a / 32768) === x ? a : Math.round(x * 32767);
    return Math.max(-32768, Math.min(32767, v));
  }

  async function decode(key, b64, n, rate) {
    const ctx = new OfflineAudioContext(1, 1, rate);
    let buffer;
    try {
      buffer = await ctx.decodeAudioData(bytes(b64).buffer);
    } catch (e) {
      throw new Error("audio " + key + " does not decode as FLAC");
    }
    if (buffer.numberOfChannels !== 1) throw new Error("audio " + key + " has " + buffer.numberOfChannels + " channels");
    const f = buffer.getChannelData(0);
    if (f.length !== n) throw new Error("audio " + key + " decodes to " + f.length + " samples, the manifest names " + n);
    const out = new Int16Array(n);
    for (let i = 0; i < n; i++) out[i] = toInt16(f[i]);
    if (window.crypto && crypto.subtle) {
      const head = new TextEncoder().encode(rate + ":");
      const body = littleEndian(out);
      const all = new Uint8Array(head.length + body.length);
      all.set(head);
      all.set(body, head.length);
      if (hex(await crypto.subtle.digest("SHA-256", all)) !== key) {
        throw new Error("audio " + key + " decodes to samples that are not the ones its key names (truncated or altered)");
      }
    }
    return out;
  }

  /* The samples of one stored key (decoded once per page). */
  A.samples = function (key, files, problems, n, rate) {
    if (!decoded[key]) {
      if (problems[key]) decoded[key] = Promise.reject(new Error(problems[key]));
      else if (!files[key]) decoded[key] = Promise.reject(new Error("audio " + key + " is not in the explorer"));
      else decoded[key] = decode(key, files[key], n, rate);
    }
    return decoded[key];
  };

  /* The sample nearest t_ns nanoseconds at `rate` Hz, a tie going up (exact integers). */
  A.sampleIndex = function (tNs, rate) {
    const rest = tNs % 1e9;
    const whole = (tNs - rest) / 1e9;
    const num = 2 * rest * rate + 1e9;
    return whole * rate + (num - (num % 2e9)) / 2e9;
  };

  /* First sample of each played part: parts [{play, end, count}] in play order (ns). */
  A.partStarts = function (parts, rate) {
    const starts = [];
    let endSample = 0;
    let endTime = 0;
    for (const p of parts) {
      const start = p.play === endTime ? endSample : Math.max(A.sampleIndex(p.play, rate), endSample);
      starts.push(start);
      endSample = start + p.count;
      endTime = p.end;
    }
    return starts;
  };

  /* Listener audio of one lane: parts [{play, end, key, s0, s1, n}] (ns, samples). */
  A.render = async function (parts, rate, files, problems) {
    const played = parts.filter(function (p) { return p.play !== null && p.s1 > p.s0; });
    const whole = await Promise.all(played.map(function (p) { return A.samples(p.key, files, problems, p.n, rate); }));
    const starts = A.partStarts(played.map(function (p) { return { play: p.play, end: p.end, count: p.s1 - p.s0 }; }), rate);
    const length = played.length ? starts[starts.length - 1] + played[played.length - 1].s1 - played[played.length - 1].s0 : 0;
    const out = new Int16Array(length);
    played.forEach(function (p, j) { out.set(whole[j].subarray(p.s0, p.s1), starts[j]); });
    return out;
  };

  /* Mono int16 samples as a WAV file. */
  A.wav = function (samples, rate) {
    const view = new DataView(new ArrayBuffer(44 + samples.length * 2));
    const text = function (at, s) { for (let i = 0; i < s.length; i++) view.setUint8(at + i, s.charCodeAt(i)); };
    text(0, "RIFF"); view.setUint32(4, 36 + samples.length * 2, true); text(8, "WAVE");
    text(12, "fmt "); view.setUint32(16, 16, true); view.setUint16(20, 1, true); view.setUint16(22, 1, true);
    view.setUint32(24, rate, true); view.setUint32(28, rate * 2, true); view.setUint16(32, 2, true);
    view.setUint16(34, 16, true); text(36, "data"); view.setUint32(40, samples.length * 2, true);
    for (let i = 0; i < samples.length; i++) view.setInt16(44 + 2 * i, samples[i], true);
    return new Blob([view.buffer], { type: "audio/wav" });
  };

  /* The talk's stored audio (loads its data file once). */
  A.load = function (talk, file) {
    if (X.data.audio[talk]) return Promise.resolve(X.data.audio[talk]);
    return X.loadScript("data/audio/" + encodeURIComponent(file)).then(function () {
      if (!X.data.audio[talk]) throw new Error("the audio file of talk " + talk + " holds another talk");
      return X.data.audio[talk];
    });
  };
})();
