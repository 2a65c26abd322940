// The Charts page: Chart.js draws the figures the server computed from the journal (a JSON block, never code).
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("chart-data").textContent);
  var palette = ["#0b5cad", "#b42318", "#16794c", "#9a6700", "#6f42c1", "#d63384", "#0aa2c0", "#5b6470"];
  function time(value) { return new Date(value).toISOString().slice(5, 19).replace("T", " "); }
  function colored(sets) {
    return sets.map(function (set, i) {
      return Object.assign({ borderColor: palette[i % palette.length], backgroundColor: palette[i % palette.length], pointRadius: 2 }, set);
    });
  }
  var timeAxis = { type: "linear", ticks: { callback: time, maxTicksLimit: 6 } };
  var common = { responsive: true, maintainAspectRatio: false, animation: false };
  var drawn = [];
  // zero drawn darker: a long is above it, a short below
  var zeroLine = { color: function (context) { return context.tick && context.tick.value === 0 ? "#5b6470" : "#e5e7eb"; } };
  drawn.push(new Chart(document.getElementById("chart-positions"), {
    type: "line", data: { datasets: colored(data.positions) },
    options: Object.assign({ scales: { x: timeAxis, y: { beginAtZero: true, grid: zeroLine } } }, common)
  }));
  // the server's bounds: at least 1 % of the equity wide, so a few cents of fees stay a few cents
  var axis = data.equity_axis || {};
  var equityAxis = axis.min === undefined ? {} : { suggestedMin: axis.min, suggestedMax: axis.max };
  drawn.push(new Chart(document.getElementById("chart-equity"), {
    type: "line", data: { datasets: colored([{ label: "equity", data: data.equity }]) },
    options: Object.assign({ scales: { x: timeAxis, y: equityAxis } }, common)
  }));
  drawn.push(new Chart(document.getElementById("chart-days"), {
    type: "bar", data: { labels: data.days, datasets: colored(data.per_day) },
    options: Object.assign({ scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } } }, common)
  }));
  var state = document.getElementById("charts-state");
  state.dataset.drawn = "yes";
  state.dataset.charts = String(drawn.length);
})();
