// Live updates for the Rota dashboard. Every page whose <main id="content"> carries
// data-poll fetches its own URL every data-poll milliseconds with the header
// X-Rota-Partial: 1; the server answers with just the inside of #content. Each
// [data-live] region of the page is replaced by the region of the same name in the
// answer (everything else, such as the flash message and filter forms, stays). A swap
// is skipped while the user is typing in a form or selecting text, while the tab is
// hidden, and when the answer is an error. A redirect (an expired session sends to the
// login page) is followed with a full navigation.
(function () {
  "use strict";

  var main = document.getElementById("content");
  if (!main || !main.dataset.poll) {
    return;
  }
  var interval = Math.max(250, parseInt(main.dataset.poll, 10) || 1000);
  var timer = null;
  var inFlight = false;

  function busy() {
    var active = document.activeElement;
    if (active && active !== document.body && active.closest && active.closest("form") &&
        active.matches("input, select, textarea")) {
      return true;
    }
    var sel = window.getSelection ? window.getSelection() : null;
    return !!(sel && !sel.isCollapsed && main.contains(sel.anchorNode));
  }

  function swap(html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    var fresh = doc.querySelectorAll("[data-live]");
    var current = main.querySelectorAll("[data-live]");
    if (current.length === 0) {
      return;
    }
    var byName = {};
    fresh.forEach(function (el) { byName[el.getAttribute("data-live")] = el; });
    current.forEach(function (el) {
      var next = byName[el.getAttribute("data-live")];
      if (next && next.innerHTML !== el.innerHTML) {
        el.replaceWith(document.importNode(next, true));
      }
    });
  }

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(tick, interval);
  }

  function tick() {
    if (document.hidden || inFlight || busy()) {
      schedule();
      return;
    }
    inFlight = true;
    fetch(window.location.href, {
      headers: { "X-Rota-Partial": "1" },
      credentials: "same-origin",
      cache: "no-store",
      redirect: "follow"
    }).then(function (res) {
      if (res.redirected) {
        window.location.assign(res.url);
        return null;
      }
      return res.ok ? res.text() : null;
    }).then(function (html) {
      if (html !== null && !busy()) {
        swap(html);
      }
    }).catch(function () {
      // The server is restarting or the network is down: try again next time.
    }).finally(function () {
      inFlight = false;
      schedule();
    });
  }

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) {
      tick();
    }
  });
  schedule();
})();
