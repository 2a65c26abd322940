// Parked actions count down to their expiry: from the seconds the server said were left when it drew the card,
// on this page's monotonic clock (performance.now), never on the phone's wall clock. At zero the buttons stop.
(function () {
  "use strict";
  function shown(seconds) {
    var minutes = Math.floor(seconds / 60), rest = seconds % 60;
    return minutes ? minutes + " min " + (rest < 10 ? "0" : "") + rest + " s" : rest + " s";
  }
  function tick() {
    var now = performance.now();
    document.querySelectorAll(".countdown[data-seconds-left]").forEach(function (clock) {
      if (!clock.dataset.drawnAt) { clock.dataset.drawnAt = String(now); }
      var gone = (now - Number(clock.dataset.drawnAt)) / 1000;
      var left = Math.max(0, Math.ceil(Number(clock.dataset.secondsLeft) - gone));
      if (clock.dataset.left !== String(left)) {
        clock.dataset.left = String(left);
        clock.textContent = left > 0 ? shown(left) : "expired";
      }
      var card = clock.closest(".parked");
      if (left === 0 && card && !card.classList.contains("expired")) {
        card.classList.add("expired");
        card.querySelectorAll(".decide button").forEach(function (button) { button.disabled = true; });
      }
    });
  }
  tick();
  window.setInterval(tick, 250);
})();
