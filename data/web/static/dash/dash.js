// Fetch dashboard: the only script (the CSP allows no inline one). Its jobs: ask before
// a form that forgets, cancels, stops or rejects something; keep the pairing QR fresh;
// and keep a live page (a task, a chat) current. A live page names its event stream in
// <body data-live>; on each "change" event the page is fetched again and its #live part
// swapped in: the markup is the server's own (escaped by its templates), parsed inert.
"use strict";
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement)) {
    return;
  }
  const question = form.dataset.confirm;
  if (question && !window.confirm(question)) {
    event.preventDefault();
    return;
  }
  document.dispatchEvent(new Event("fetch:leaving")); // a live page stops following
  const button = event.submitter;
  if (button instanceof HTMLButtonElement) {
    window.setTimeout(() => { button.disabled = true; }, 0); // one press, one action
  }
});

function followQr() {
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
}

function keepFolds(from, to) {
  // A file the owner folded or unfolded stays so when the page is refreshed.
  const open = new Map();
  for (const d of from.querySelectorAll("details[data-fold]")) {
    open.set(d.dataset.fold, d.open);
  }
  for (const d of to.querySelectorAll("details[data-fold]")) {
    if (open.has(d.dataset.fold)) {
      d.open = open.get(d.dataset.fold);
    }
  }
}

function followPage() {
  const stream = document.body.dataset.live;
  const state = document.getElementById("live-state");
  if (!stream || !window.EventSource || !state) {
    return;
  }
  let busy = false;
  let again = false;
  let leaving = false; // a form was sent: the page is going away
  const refresh = async () => {
    if (leaving) {
      return;
    }
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      const answer = await fetch(window.location.href, {
        credentials: "same-origin",
        cache: "no-store",
      });
      if (answer.status === 401) {
        window.location.reload(); // logged out elsewhere: show the login page
        return;
      }
      if (!answer.ok) {
        return;
      }
      const doc = new DOMParser().parseFromString(await answer.text(), "text/html");
      const fresh = doc.getElementById("live");
      const here = document.getElementById("live");
      if (fresh && here) {
        const bottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
        keepFolds(here, fresh);
        here.replaceWith(document.adoptNode(fresh));
        if (bottom) {
          window.scrollTo(0, document.body.scrollHeight); // a chat being followed
        }
        document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
      }
    } catch (_) {
      // the server is restarting: the stream reconnects and says when to try again
    } finally {
      busy = false;
      if (again) {
        again = false;
        refresh();
      }
    }
  };
  const source = new EventSource(stream);
  source.addEventListener("change", refresh);
  source.onopen = () => {
    state.hidden = false;
    state.textContent = "live";
    state.className = "live-state on";
    refresh(); // what changed before the stream (re)started is not lost
  };
  source.onerror = () => {
    state.hidden = false;
    state.textContent = "reconnecting…";
    state.className = "live-state down";
  };
  const stop = () => {
    leaving = true;
    source.close();
  };
  window.addEventListener("pagehide", stop);
  document.addEventListener("fetch:leaving", stop);
}

document.addEventListener("DOMContentLoaded", () => {
  followQr();
  followPage();
});
