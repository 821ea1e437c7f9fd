// duckprof html: sorting tables, and the GPU timeline (drawn from the bucket
// data in #timeline-data; every name is set with textContent, never as HTML).
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";

  function el(tag, attrs, parent) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  // -- tables: click a heading to sort by its exact values (data-v) ----------------
  function sortBy(th) {
    var table = th.closest("table"), body = table.tBodies[0];
    var i = Array.prototype.indexOf.call(th.parentNode.children, th);
    var rows = Array.prototype.slice.call(body.rows);
    var dir = th.getAttribute("data-dir") === "desc" ? "asc" : "desc";
    table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("data-dir"); });
    th.setAttribute("data-dir", dir);
    var numeric = rows.every(function (r) {
      var v = r.cells[i].getAttribute("data-v");
      return v === "" || !isNaN(Number(v));
    });
    rows.sort(function (a, b) {
      var x = a.cells[i].getAttribute("data-v"), y = b.cells[i].getAttribute("data-v");
      if (x === y) return 0;
      if (x === "") return 1;
      if (y === "") return -1;
      var c = numeric ? Number(x) - Number(y) : x.localeCompare(y);
      return dir === "asc" ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  document.querySelectorAll("table.sortable th").forEach(function (th) {
    th.addEventListener("click", function () { sortBy(th); });
  });

  // -- the timeline ---------------------------------------------------------------
  var root = document.getElementById("timeline-chart"), src = document.getElementById("timeline-data");
  if (!root || !src) return;
  var data = JSON.parse(src.textContent);
  var A = data.alphabet, STATES = data.states, COLOURS = data.colours;
  var W = 1100, L = 170, R = 12, BAND = 18, DEV_H = 30, STREAM_H = 16, GAP = 3, AXIS = 34;

  function ticks(lo, hi) {
    var span = hi - lo;
    if (!(span > 0)) return [lo];
    var raw = span / 8, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = [1, 2, 2.5, 5, 10].map(function (m) { return m * mag; }).find(function (s) { return s >= raw; });
    var out = [];
    for (var t = Math.ceil(lo / step) * step; t <= hi + 1e-9; t += step) out.push(t);
    return out;
  }
  function fmt(v) {
    var a = Math.abs(v);
    return a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : a >= 1 ? v.toFixed(2) : v.toPrecision(2);
  }
  function shares(code, k) {
    var out = [];
    for (var s = 0; s < 4; s++) out.push(A.indexOf(code.charAt(4 * k + s)) / 63);
    return out;
  }

  function Trace(t) {
    var box = document.createElement("div");
    box.className = "tl-trace";
    box.setAttribute("data-trace", String(t.trace_id));
    var head = document.createElement("div");
    head.className = "tl-head";
    var h = document.createElement("h3");
    h.textContent = t.label;
    head.appendChild(h);
    var select = null;
    if (t.steps.length) {
      var lab = document.createElement("label");
      lab.textContent = "Zoom to ";
      select = document.createElement("select");
      select.className = "tl-step";
      var o = document.createElement("option");
      o.value = "";
      o.textContent = "the whole trace";
      select.appendChild(o);
      t.steps.forEach(function (s, i) {
        var o = document.createElement("option");
        o.value = String(i);
        var busy = Object.keys(s.busy_pct).map(function (g) { return g + " " + fmt(s.busy_pct[g]) + "% busy"; });
        o.textContent = "ProfilerStep#" + s.step + " (" + fmt(s.t1 - s.t0) + " ms" + (busy.length ? ", " + busy.join(", ") : "") + ")";
        select.appendChild(o);
      });
      select.addEventListener("change", function () { draw(select.value === "" ? null : Number(select.value)); });
      lab.appendChild(select);
      head.appendChild(lab);
    }
    box.appendChild(head);
    var rowsH = t.series.reduce(function (a, s) { return a + (s.scope === "device" ? DEV_H : STREAM_H) + GAP; }, 0);
    var top = t.steps.length ? BAND + 4 : 0, H = top + rowsH + AXIS;
    var svg = el("svg", {viewBox: "0 0 " + W + " " + H, class: "tl-svg", role: "img"});
    svg.setAttribute("aria-label", "GPU timeline of " + t.label);
    box.appendChild(svg);
    var tip = document.createElement("div");
    tip.className = "tl-tip";
    box.appendChild(tip);
    root.appendChild(box);
    // the grid drawn: n buckets from t0 to t1 (the trace), or the finer m (a step)
    var view = {lo: t.t0, hi: t.t1, fine: false};

    function x(ms) { return L + (W - L - R) * (ms - view.lo) / ((view.hi - view.lo) || 1); }
    function grid(i) { return view.fine ? t.series[i].f : t.series[i].b; }
    function count() { return view.fine ? t.m : t.n; }
    function bucketTime(k) { return t.t0 + (t.t1 - t.t0) * k / count(); }

    function draw(stepIndex) {
      while (svg.firstChild) svg.removeChild(svg.firstChild);
      var step = stepIndex === null ? null : t.steps[stepIndex];
      view.lo = step ? step.t0 : t.t0;
      view.hi = step ? step.t1 : t.t1;
      view.fine = !!(step && t.m);
      svg.setAttribute("data-view", step ? "step " + step.step : "trace");
      var n = count(), k0 = 0, k1 = n;
      if (step) {  // the buckets that meet the step
        k0 = Math.max(0, Math.floor((view.lo - t.t0) / (t.t1 - t.t0) * n));
        k1 = Math.min(n, Math.ceil((view.hi - t.t0) / (t.t1 - t.t0) * n));
      }
      // steps: a band to click, and their boundaries across the rows
      if (t.steps.length) {
        var band = el("g", {class: "tl-band"}, svg);
        t.steps.forEach(function (s, i) {
          if (s.t1 < view.lo || s.t0 > view.hi) return;
          var x0 = Math.max(x(s.t0), L), x1 = Math.min(x(s.t1), W - R);
          var r = el("rect", {x: x0, y: 0, width: Math.max(x1 - x0, 0.5), height: BAND,
                              class: "tl-stepmark" + (i % 2 ? " odd" : ""), "data-step": s.step}, band);
          var title = el("title", {}, r);
          title.textContent = "ProfilerStep#" + s.step + ": " + fmt(s.t1 - s.t0) + " ms (click to zoom)";
          r.addEventListener("click", function () { if (select) select.value = String(i); draw(i); });
          if (x1 - x0 > 34) {
            var tx = el("text", {x: (x0 + x1) / 2, y: BAND - 5, class: "tl-steplabel", "text-anchor": "middle"}, band);
            tx.textContent = "#" + s.step;
          }
          if (!step) el("line", {x1: x0, x2: x0, y1: 0, y2: top + rowsH, class: "tl-boundary"}, svg);
        });
      }
      var y = top;
      t.series.forEach(function (s, i) {
        var hgt = s.scope === "device" ? DEV_H : STREAM_H;
        var g = el("g", {class: "tl-row " + s.scope, "data-label": s.label, "data-device": String(s.device),
                         "data-stream": s.stream === null ? "" : String(s.stream)}, svg);
        var label = el("text", {x: L - 6, y: y + hgt / 2 + 4, "text-anchor": "end", class: "tl-label " + s.scope}, g);
        label.textContent = s.label + (s.busy_pct !== null ? "  " + fmt(s.busy_pct) + "%" : "");
        el("rect", {x: L, y: y, width: W - L - R, height: hgt, class: "tl-bg"}, g);
        var code = grid(i) || "";
        g.setAttribute("data-buckets", String(k1 - k0));
        for (var k = k0; k < k1 && 4 * k < code.length; k++) {
          var bx0 = Math.max(x(bucketTime(k)), L), bx1 = Math.min(x(bucketTime(k + 1)), W - R);
          var sh = shares(code, k), acc = 0;
          for (var st = 0; st < 4; st++) {
            if (sh[st] <= 0) continue;
            var hh = sh[st] * hgt;
            el("rect", {x: bx0, y: y + hgt - acc - hh, width: Math.max(bx1 - bx0, 0) + 0.15, height: hh,
                        fill: COLOURS[st], class: "tl-b " + STATES[st]}, g);
            acc += hh;
          }
        }
        y += hgt + GAP;
      });
      var ax = el("g", {class: "tl-axis"}, svg);
      el("line", {x1: L, x2: W - R, y1: y, y2: y, class: "axis-line"}, ax);
      ticks(view.lo, view.hi).forEach(function (v) {
        el("line", {x1: x(v), x2: x(v), y1: y, y2: y + 4, class: "axis-line"}, ax);
        var tx = el("text", {x: x(v), y: y + 15, "text-anchor": "middle", class: "axis"}, ax);
        tx.textContent = fmt(v);
      });
      var cap = el("text", {x: (L + W - R) / 2, y: y + 30, "text-anchor": "middle", class: "axis-label"}, ax);
      cap.textContent = "time since the trace's first event (ms)" + (step ? ", ProfilerStep#" + step.step : "");
    }

    svg.addEventListener("mousemove", function (ev) {
      var pt = svg.createSVGPoint();
      pt.x = ev.clientX; pt.y = ev.clientY;
      var p = pt.matrixTransform(svg.getScreenCTM().inverse());
      var y = top, row = -1;
      for (var i = 0; i < t.series.length; i++) {
        var hgt = t.series[i].scope === "device" ? DEV_H : STREAM_H;
        if (p.y >= y && p.y < y + hgt) { row = i; break; }
        y += hgt + GAP;
      }
      var code = row >= 0 ? grid(row) || "" : "", n = count();
      if (row < 0 || p.x < L || p.x > W - R || !code) { tip.style.display = "none"; return; }
      var ms = view.lo + (view.hi - view.lo) * (p.x - L) / (W - L - R);
      var k = Math.max(0, Math.min(n - 1, Math.floor((ms - t.t0) / (t.t1 - t.t0) * n)));
      var sh = shares(code, k), t0 = bucketTime(k), t1 = bucketTime(k + 1);
      tip.textContent = t.series[row].label + ", " + fmt(t0) + "–" + fmt(t1) + " ms: " +
        STATES.map(function (s, j) { return s.replace("_", " ") + " ≈" + Math.round(100 * sh[j]) + "%"; }).join(", ");
      tip.style.display = "block";
      tip.style.left = (ev.offsetX + 12) + "px";
      tip.style.top = (ev.offsetY + 12) + "px";
    });
    svg.addEventListener("mouseleave", function () { tip.style.display = "none"; });
    draw(null);
  }

  data.traces.forEach(Trace);
})();
