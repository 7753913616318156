// shardlab's page script: the form (the spec box shows with "pasted spec",
// a notice while searching), sortable tables, and hover values. The page
// works without it.
(function () {
  "use strict";
  var form = document.getElementById("job");
  if (form) {
    var model = form.elements["model"], spec = document.getElementById("field-model_spec");
    var sync = function () {
      var on = model.value === "spec";
      spec.hidden = !on;
      form.elements["model_spec"].disabled = !on; // a catalog model keeps the spec out of the URL
    };
    model.addEventListener("change", sync);
    sync();
    form.addEventListener("submit", function () {
      document.getElementById("busy").hidden = false;
    });
  }

  // sortable tables: a click on a header sorts by its column, again reverses
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("th").forEach(function (th, col) {
      th.addEventListener("click", function () {
        var asc = th.getAttribute("aria-sort") !== "ascending";
        table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var num = th.dataset.type === "num";
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var key = function (r) {
          var c = r.cells[col];
          return num ? parseFloat(c.dataset.v !== undefined ? c.dataset.v : c.textContent) : c.textContent;
        };
        rows.sort(function (a, b) {
          var x = key(a), y = key(b);
          var d = num ? x - y : (x < y ? -1 : x > y ? 1 : 0);
          return asc ? d : -d;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });

  // hover: a row's title, and a chart's text under the pointer, in a tip
  var tip = document.getElementById("tip");
  var show = function (e, text) {
    if (!text) { tip.hidden = true; return; }
    tip.textContent = text;
    tip.style.left = (e.clientX + 12) + "px";
    tip.style.top = (e.clientY + 12) + "px";
    tip.hidden = false;
  };
  document.querySelectorAll("table.sortable tbody tr").forEach(function (tr) {
    var text = tr.getAttribute("title");
    if (!text) { return; }
    tr.removeAttribute("title");
    tr.addEventListener("mousemove", function (e) { show(e, text); });
    tr.addEventListener("mouseleave", function () { tip.hidden = true; });
  });
  document.querySelectorAll("figure.chart svg").forEach(function (svg) {
    svg.addEventListener("mousemove", function (e) {
      var t = e.target;
      show(e, t && t.tagName === "path" && t.style.fill && t.style.fill !== "rgb(255, 255, 255)" ? chartValue(svg, t) : "");
    });
    svg.addEventListener("mouseleave", function () { tip.hidden = true; });
  });

  // chartValue reads a bar segment's size, or a mark's value, off the
  // nearest y axis to its left: two of that axis's tick labels give the
  // scale.
  function chartValue(svg, path) {
    var box = path.getBoundingClientRect();
    var ticks = [];
    svg.querySelectorAll("text").forEach(function (t) {
      var v = parseFloat(t.textContent);
      var b = t.getBoundingClientRect();
      if (!isNaN(v) && String(v) === t.textContent.trim() && b.right <= box.left + 1) {
        ticks.push({ v: v, x: Math.round(b.right), y: b.top + b.height / 2 });
      }
    });
    var right = Math.max.apply(null, ticks.map(function (t) { return t.x; }));
    var ys = ticks.filter(function (t) { return Math.abs(t.x - right) < 3; });
    if (ys.length < 2 || ys[0].y === ys[ys.length - 1].y) { return ""; }
    var a = ys[0], b = ys[ys.length - 1];
    var at = function (y) { return a.v + (y - a.y) * (b.v - a.v) / (b.y - a.y); };
    var lo = at(box.bottom), hi = at(box.top);
    var fmt = function (v) { return Math.abs(v) >= 100 ? v.toFixed(0) : v.toPrecision(3); };
    return box.height > 2 ? fmt(hi - lo) : fmt(hi); // a bar segment's size, or a point's value
  }
}());
