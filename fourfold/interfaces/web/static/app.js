// Improves the server-rendered search page: results while typing, and keys to move
// through them. Every page works without this file.
(function () {
  "use strict";
  var box = document.getElementById("q");
  var results = document.getElementById("results");
  if (!box || !results) return;
  var form = box.form, timer = null, retry = null, shown = null, selected = -1;

  function query() {
    var params = new URLSearchParams(new FormData(form));
    return params;
  }

  function refresh() {
    var params = query();
    if (!params.get("q").trim()) return;
    var key = params.toString();
    if (key === shown) return;
    shown = key;
    clearTimeout(retry);
    params.set("partial", "1");
    fetch("/?" + params.toString(), { headers: { "Accept": "text/html" } })
      .then(function (r) {
        if (r.status === 503) {  // the index cannot answer yet: say why, ask again later
          var wait = parseInt(r.headers.get("Retry-After"), 10) || 5;
          retry = setTimeout(function () {
            if (shown === key) { shown = null; refresh(); }
          }, wait * 1000);
        }
        return r.ok || r.status === 400 || r.status === 503 ? r.text() : null;
      })
      .then(function (html) {
        if (html === null || key !== shown) return;  // a newer query is on its way
        results.innerHTML = html;  // rendered and escaped by the server
        selected = -1;
        history.replaceState(null, "", "/?" + key);
      })
      .catch(function () { shown = null; });
  }

  box.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(refresh, 250);
  });
  form.addEventListener("change", refresh);

  function hits() { return results.querySelectorAll(".hit"); }

  function select(index) {
    var all = hits();
    if (!all.length) return;
    selected = Math.max(0, Math.min(all.length - 1, index));
    all.forEach(function (h, i) { h.classList.toggle("selected", i === selected); });
    all[selected].scrollIntoView({ block: "nearest" });
  }

  document.addEventListener("keydown", function (e) {
    var typing = e.target === box || /^(INPUT|SELECT|TEXTAREA)$/.test(e.target.tagName);
    if (e.key === "/" && !typing) { e.preventDefault(); box.focus(); box.select(); return; }
    if (e.key === "ArrowDown" || (e.key === "j" && !typing)) { e.preventDefault(); select(selected + 1); }
    else if (e.key === "ArrowUp" || (e.key === "k" && !typing)) { e.preventDefault(); select(selected - 1); }
    else if (e.key === "Enter" && selected >= 0 && (!typing || e.target === box)) {
      var link = hits()[selected].querySelector("a.path");
      if (link) { e.preventDefault(); window.location = link.href; }
    }
  });
})();
