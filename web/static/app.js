// shardlab's page script: the form plans as the user types (debounced; the
// server renders the page, whose results and field errors replace these),
// the address holds the form's state, the spec box shows with "pasted
// spec", sortable tables, and hover values. The page works without it:
// the form then plans on "Plan".
(function () {
  "use strict";
  var form = document.getElementById("job");
  if (form) {
    live(form);
  }
  bind(document);

  // live makes the form plan as it changes.
  function live(form) {
    var model = form.elements["model"], spec = document.getElementById("field-model_spec");
    var busy = document.getElementById("busy");
    var sync = function () {
      if (!model || !spec) { return; } // a form without a pasted spec
      var on = model.value === "spec";
      spec.hidden = !on;
      form.elements["model_spec"].disabled = !on; // a catalog model keeps the spec out of the URL
    };
    model.addEventListener("change", sync);
    sync();

    // lengths: a length mix other than fixed gives the requests' lengths
    // (the serving form), so the prompt and output lengths are disabled
    // and left out of the query, which refuses them beside a mix.
    var mix = form.elements["length_mix"];
    var lengths = function () {
      if (!mix) { return; }
      ["prompt_len", "output_len"].forEach(function (n) {
        if (form.elements[n]) { form.elements[n].disabled = mix.value !== "fixed"; }
      });
    };
    if (mix) {
      mix.addEventListener("input", lengths);
      mix.addEventListener("change", lengths);
    }
    lengths();

    // query is the form's state: every field that differs from its
    // default, and the model and TPU always, so that the address asks a
    // question.
    var query = function () {
      var q = new URLSearchParams();
      Array.prototype.forEach.call(form.elements, function (el) {
        if (!el.name || el.disabled) { return; }
        var d = el.dataset.default;
        if (el.name === "model" || el.name === "tpu" || d === undefined || el.value !== d) {
          q.append(el.name, el.value);
        }
      });
      return q.toString();
    };

    var path = form.getAttribute("action") || "/"; // the page the form asks: /, /serving or /budget
    var timer = null, seq = 0, ctrl = null, last = location.search.replace(/^\?/, "");
    var update = function (force) {
      var q = query();
      if (q === last && !force) { return; }
      last = q;
      history.replaceState(null, "", path + "?" + q);
      var mine = ++seq;
      if (ctrl) { ctrl.abort(); }
      ctrl = new AbortController();
      busy.textContent = path === "/budget" ? "sweeping…" : "searching…";
      form.setAttribute("aria-busy", "true");
      fetch(path + "?" + q, { signal: ctrl.signal, headers: { "Accept": "text/html", "X-Shardlab-Scaling": "later" } }).then(function (r) {
        return r.text();
      }).then(function (html) {
        if (mine !== seq) { return; }
        apply(new DOMParser().parseFromString(html, "text/html"));
        scaling(mine);
        form.removeAttribute("aria-busy");
        var bad = document.querySelectorAll(".field.bad").length + (document.getElementById("error") ? 1 : 0);
        busy.textContent = bad ? "see the errors" : (path === "/budget" ? "budget updated" : "plan updated");
        form.dispatchEvent(new CustomEvent("planned", { bubbles: true }));
      }).catch(function (e) {
        if (e.name === "AbortError") { return; }
        form.removeAttribute("aria-busy");
        busy.textContent = "could not reach the server: " + e.message;
      });
    };

    // apply takes the field errors and the results of a page the server
    // rendered for the form's state, keeping the fields as the user types.
    var apply = function (doc) {
      form.querySelectorAll(".field").forEach(function (f) {
        var n = doc.getElementById(f.id);
        var input = f.querySelector("input, select, textarea");
        var old = f.querySelector("p.error");
        if (old) { old.remove(); }
        var e = n && n.querySelector("p.error");
        f.classList.toggle("bad", !!e);
        if (e) {
          f.appendChild(document.importNode(e, true));
          input.setAttribute("aria-invalid", "true");
          input.setAttribute("aria-errormessage", e.id);
        } else {
          input.removeAttribute("aria-invalid");
          input.removeAttribute("aria-errormessage");
        }
      });
      var fresh = document.importNode(doc.getElementById("results"), true);
      document.getElementById("results").replaceWith(fresh);
      document.title = doc.title;
      bind(fresh);
    };

    // scaling fetches the scaling charts the page left for later, unless
    // the form changed since.
    var scaling = function (mine) {
      var slot = document.getElementById("scaling");
      if (!slot || !slot.dataset.src) { return; }
      fetch(slot.dataset.src, { signal: ctrl.signal }).then(function (r) {
        return r.ok ? r.text() : Promise.reject(new Error(r.statusText));
      }).then(function (html) {
        if (mine !== seq) { return; }
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = document.importNode(doc.getElementById("scaling"), true);
        document.getElementById("scaling").replaceWith(fresh);
        bind(fresh);
      }).catch(function (e) {
        if (e.name !== "AbortError" && mine === seq) { slot.textContent = "Scaling charts: " + e.message; }
      });
    };

    // pins: "Pin this plan" adds the form's query (without the pins) to
    // the pinned plans, at most four; "unpin" removes one. The pins are
    // hidden fields of the form, so the address carries them.
    var pins = function () { return Array.prototype.slice.call(form.querySelectorAll('input[name="pin"]')); };
    document.addEventListener("click", function (e) {
      var t = e.target;
      if (t.id === "pin") {
        var q = new URLSearchParams(query());
        q.delete("pin");
        var have = pins();
        if (have.length >= 4) { busy.textContent = "at most 4 plans pinned: unpin one first"; return; }
        if (have.some(function (p) { return p.value === q.toString(); })) { busy.textContent = "this plan is pinned already"; return; }
        var input = document.createElement("input");
        input.type = "hidden";
        input.name = "pin";
        input.value = q.toString();
        form.appendChild(input);
        update(true);
      } else if (t.classList && t.classList.contains("unpin")) {
        var p = pins()[parseInt(t.dataset.index, 10) - 1];
        if (p) { p.remove(); }
        update(true);
      }
    });

    var later = function () {
      clearTimeout(timer);
      timer = setTimeout(update, parseInt(form.dataset.debounce || "150", 10)); // a slow sweep waits for the typing to stop
    };
    form.addEventListener("input", later);
    form.addEventListener("change", later);
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      clearTimeout(timer);
      update(true);
    });
    if (!location.search) { update(true); } // a first visit plans the defaults
  }

  // copy: a "Copy" button copies the text of the element its data-copy
  // names (the vllm serve line) and says so.
  document.addEventListener("click", function (e) {
    var t = e.target;
    if (!t.classList || !t.classList.contains("copy")) { return; }
    var src = document.getElementById(t.dataset.copy);
    if (!src || !navigator.clipboard) { t.textContent = "select and copy"; return; }
    navigator.clipboard.writeText(src.textContent).then(function () { t.textContent = "Copied"; }, function () { t.textContent = "select and copy"; });
  });

  // bind makes root's tables sortable and its rows and charts show values
  // on hover.
  function bind(root) {
    root.querySelectorAll("table.sortable").forEach(sortable);
    var tip = document.getElementById("tip");
    var show = function (e, text) {
      if (!text) { tip.hidden = true; return; }
      tip.textContent = text;
      tip.style.left = (e.clientX + 12) + "px";
      tip.style.top = (e.clientY + 12) + "px";
      tip.hidden = false;
    };
    root.querySelectorAll("table.sortable tbody tr").forEach(function (tr) {
      var text = tr.getAttribute("title");
      if (!text) { return; }
      tr.removeAttribute("title");
      tr.addEventListener("mousemove", function (e) { show(e, text); });
      tr.addEventListener("mouseleave", function () { tip.hidden = true; });
    });
    root.querySelectorAll("figure.chart svg").forEach(function (svg) {
      svg.addEventListener("mousemove", function (e) {
        var t = e.target;
        if (t && t.dataset && t.dataset.tip) { show(e, t.dataset.tip); return; } // the page's own bars
        show(e, t && t.tagName === "path" && t.style.fill && t.style.fill !== "rgb(255, 255, 255)" ? chartValue(svg, t) : "");
      });
      svg.addEventListener("mouseleave", function () { tip.hidden = true; });
    });
  }

  // sortable: a click on a header, or Enter or Space on it, sorts by its
  // column; again reverses.
  function sortable(table) {
    table.querySelectorAll("th").forEach(function (th, col) {
      th.tabIndex = 0;
      var sort = function () {
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
          if (num && (isNaN(x) || isNaN(y))) { return isNaN(x) - isNaN(y); } // n/a (a layout that does not fit) last either way
          var d = num ? x - y : (x < y ? -1 : x > y ? 1 : 0);
          return asc ? d : -d;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      };
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); }
      });
    });
  }

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
