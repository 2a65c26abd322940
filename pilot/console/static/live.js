// The Live page: new journal entries arrive as server-sent events (already rendered and escaped by the server).
(function () {
  "use strict";
  var list = document.getElementById("entries");
  var badge = document.getElementById("live-state");
  if (!list || !list.dataset.events) { return; }
  var url = list.dataset.events + (list.dataset.events.indexOf("?") < 0 ? "?" : "&") + "after=" + list.dataset.top;
  var source = new EventSource(url);
  source.onopen = function () { badge.textContent = "live"; badge.dataset.connected = "yes"; };
  source.onerror = function () { badge.textContent = "reconnecting…"; badge.dataset.connected = "no"; };
  source.addEventListener("entry", function (event) {
    var holder = document.createElement("template");
    holder.innerHTML = event.data.trim();
    var row = holder.content.firstElementChild;
    if (!row || document.getElementById(row.id)) { return; }
    // a row that only restates an event already listed (a parking is written three times) is not listed again
    if (row.dataset.event && list.querySelector('[data-event="' + row.dataset.event + '"]')) { return; }
    list.insertBefore(row, list.firstElementChild);
    if (window.htmx) { window.htmx.process(row); }
    var empty = document.querySelector(".empty");
    if (empty) { empty.remove(); }
  });
})();
