// Fetch dashboard: the only script (the CSP allows no inline one). Two jobs:
// ask before a form that forgets or cancels something, and keep the pairing QR fresh.
"use strict";
document.addEventListener("submit", (event) => {
  const form = event.target;
  const question = form instanceof HTMLFormElement ? form.dataset.confirm : undefined;
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});
document.addEventListener("DOMContentLoaded", () => {
  const qr = document.getElementById("pairing-qr");
  if (!(qr instanceof HTMLImageElement)) {
    return;
  }
  const seconds = Math.max(2, Number(qr.dataset.refresh) || 5);
  const base = qr.src.split("?")[0];
  window.setInterval(() => {
    fetch(base, { credentials: "same-origin", cache: "no-store" }).then((answer) => {
      if (answer.ok) {
        qr.src = base + "?t=" + Date.now();
      } else {
        window.location.reload(); // paired (or the code expired): the page says which
      }
    }).catch(() => undefined);
  }, seconds * 1000);
});
