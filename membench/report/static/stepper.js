/* membench report page 04: step through the embedded cases without a kernel.
   Each [data-membench-stepper] block holds one div.mb-step-kind per kind of case
   (data-title, data-total: every case of that kind in the run), each holding its embedded
   div.mb-case elements (data-query-id). Without this script the block reads as a list; with
   it, one case shows at a time, with the kind, Prev / Next (and the arrow keys) and "i / n".
   Plain DOM calls only: no eval, no network, no inline handlers (the page's policy allows
   this script by its sha256 and nothing else). */
(function () {
  "use strict";
  function button(text) {
    var b = document.createElement("button");
    b.type = "button";
    b.className = "mb-step-button";
    b.textContent = text;
    return b;
  }
  function children(el, cls) {
    return Array.prototype.filter.call(el.children, function (c) {
      return c.classList.contains(cls);
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll("[data-membench-stepper]"),
    function (root) {
      var kinds = children(root, "mb-step-kind");
      if (!kinds.length) { return; }
      var state = { kind: 0, pos: 0 };
      var bar = document.createElement("div");
      bar.className = "mb-step-bar";
      var kindButtons = kinds.map(function (k, i) {
        var b = button(k.getAttribute("data-title") + " (" + children(k, "mb-case").length + ")");
        b.addEventListener("click", function () { state.kind = i; state.pos = 0; show(); });
        bar.appendChild(b);
        return b;
      });
      var prev = button("\u25c0 Prev");
      var next = button("Next \u25b6");
      var label = document.createElement("span");
      label.className = "mb-step-label";
      bar.appendChild(prev);
      bar.appendChild(next);
      bar.appendChild(label);
      root.insertBefore(bar, root.firstChild);
      prev.addEventListener("click", function () { if (state.pos > 0) { state.pos--; show(); } });
      next.addEventListener("click", function () { state.pos++; show(); });
      root.tabIndex = 0;
      root.addEventListener("keydown", function (ev) {
        if (ev.key === "ArrowLeft") { prev.click(); }
        if (ev.key === "ArrowRight") { next.click(); }
      });
      function show() {
        var kind = kinds[state.kind];
        var cases = children(kind, "mb-case");
        state.pos = Math.max(0, Math.min(state.pos, cases.length - 1));
        kinds.forEach(function (k, i) {
          k.hidden = i !== state.kind;
          kindButtons[i].classList.toggle("mb-on", i === state.kind);
        });
        cases.forEach(function (c, j) { c.hidden = j !== state.pos; });
        var total = parseInt(kind.getAttribute("data-total"), 10) || 0;
        var title = kind.getAttribute("data-title");
        if (!cases.length) {
          label.textContent = "0 / 0 " + title;
        } else {
          label.textContent = (state.pos + 1) + " / " + cases.length + " " + title +
            (total > cases.length ? " (the first " + cases.length + " of " + total +
              "; every one in JupyterLab, below)" : "") +
            " \u00b7 " + cases[state.pos].getAttribute("data-query-id");
        }
        prev.disabled = state.pos <= 0;
        next.disabled = state.pos >= cases.length - 1;
      }
      show();
    });
})();
