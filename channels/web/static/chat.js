// Fetch web chat: the live half of /chat. The page works without this file (a plain
// form); with it, replies stream in over Server-Sent Events and messages are sent
// without a reload. Text is only ever set with textContent: nothing is parsed as HTML.
"use strict";

(function () {
  const log = document.getElementById("log");
  const form = document.getElementById("send");
  const input = document.getElementById("text");
  const status = document.getElementById("status");
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const FENCE = "```";
  // A file Fetch sent (/send): served by the chat itself under an unguessable token.
  const FILE_LINK = /^\/chat\/files\/[0-9a-f]{32}\/([A-Za-z0-9._-]{1,120})$/;
  const PICTURE = /\.(png|jpe?g|webp|gif)$/i;
  const picker = document.getElementById("file");

  function newId() {
    const bytes = new Uint8Array(12);
    crypto.getRandomValues(bytes);
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  function renderText(target, text) {
    target.replaceChildren();
    let prose = [];
    let code = null;
    const flushProse = () => {
      if (prose.length) {
        const p = document.createElement("p");
        p.className = "prose";
        p.textContent = prose.join("\n");
        target.appendChild(p);
        prose = [];
      }
    };
    const flushCode = () => {
      const pre = document.createElement("pre");
      pre.className = "code";
      pre.textContent = code.join("\n");
      target.appendChild(pre);
    };
    for (const line of text.split("\n")) {
      if (line.trim().startsWith(FENCE)) {
        if (code === null) {
          flushProse();
          code = [];
        } else {
          flushCode();
          code = null;
        }
      } else if (code !== null) {
        code.push(line);
      } else if (FILE_LINK.test(line.trim())) {
        flushProse();
        const href = line.trim();
        const name = FILE_LINK.exec(href)[1];
        const p = document.createElement("p");
        p.className = "file";
        const a = document.createElement("a");
        a.href = href;
        a.download = name;
        a.textContent = name;
        p.appendChild(a);
        if (PICTURE.test(name)) {
          const img = document.createElement("img");
          img.src = href;
          img.alt = name;
          p.appendChild(img);
        }
        target.appendChild(p);
      } else {
        prose.push(line);
      }
    }
    if (code !== null) flushCode();
    flushProse();
  }

  function note(text, kind) {
    const p = document.createElement("p");
    p.className = "note " + (kind || "");
    p.textContent = text;
    log.appendChild(p);
    p.scrollIntoView({ block: "end" });
  }

  function answerForm(messageId, nonce, answer, label) {
    const f = document.createElement("form");
    f.className = "answer";
    f.method = "post";
    f.action = "/chat/send";
    for (const [name, value] of [
      ["csrf", csrf], ["text", answer], ["nonce", nonce], ["reply_to", messageId],
    ]) {
      const i = document.createElement("input");
      i.type = "hidden";
      i.name = name;
      i.value = value;
      f.appendChild(i);
    }
    const b = document.createElement("button");
    b.type = "submit";
    b.className = answer;
    b.textContent = label;
    f.appendChild(b);
    return f;
  }

  function addCard(ev) {
    const card = document.createElement("article");
    card.className = "msg " + (ev.kind === "owner" ? "owner" : "fetch");
    card.dataset.messageId = ev.message_id;
    const body = document.createElement("div");
    body.className = "text";
    renderText(body, ev.text);
    card.appendChild(body);
    if (ev.nonce && ev.kind !== "owner") {
      // A newer diff makes every older one's buttons stale (the server refuses them too).
      for (const old of log.querySelectorAll(".buttons button")) old.disabled = true;
      card.classList.add("diff");
      const buttons = document.createElement("div");
      buttons.className = "buttons";
      buttons.dataset.nonce = ev.nonce;
      buttons.appendChild(answerForm(ev.message_id, ev.nonce, "yes", "Approve"));
      buttons.appendChild(answerForm(ev.message_id, ev.nonce, "no", "Reject"));
      card.appendChild(buttons);
    }
    log.appendChild(card);
    card.scrollIntoView({ block: "end" });
  }

  function markAnswered(nonce, answer) {
    // The owner's answer to a diff (from this page or another): its buttons are done.
    for (const box of log.querySelectorAll(".buttons")) {
      if (box.dataset.nonce !== nonce) continue;
      for (const b of box.querySelectorAll("button")) b.disabled = true;
      box.closest(".msg").classList.add("answered");
      if (!box.querySelector(".said")) {
        const said = document.createElement("span");
        said.className = "said";
        said.textContent = "answered: " + answer;
        box.appendChild(said);
      }
    }
  }

  function onEvent(raw) {
    const ev = JSON.parse(raw.data);
    log.dataset.lastId = String(ev.id);
    if (ev.kind === "owner" && ev.nonce) markAnswered(ev.nonce, ev.text);
    if (ev.kind === "edit") {
      const card = log.querySelector(`[data-message-id="${CSS.escape(ev.message_id)}"] .text`);
      if (card) {
        renderText(card, ev.text);
        return;
      }
    }
    addCard(ev);
  }

  async function post(payload) {
    const response = await fetch("/chat/send", {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify({ id: newId(), ...payload }),
      credentials: "same-origin",
    });
    if (!response.ok) {
      let error = `HTTP ${response.status}`;
      try {
        error = (await response.json()).error || error;
      } catch (_) { /* not JSON: keep the status */ }
      note("⚠️ " + error, "error");
      return false;
    }
    return true;
  }

  async function upload(file) {
    // An audio file is heard as a voice note; an image or a log goes with the words.
    const body = new FormData();
    body.append("id", newId());
    body.append("text", input.value);
    body.append("file", file, file.name);
    const response = await fetch("/chat/upload", {
      method: "POST",
      headers: { "X-CSRF-Token": csrf },
      body,
      credentials: "same-origin",
    });
    if (!response.ok) {
      let error = `HTTP ${response.status}`;
      try {
        error = (await response.json()).error || error;
      } catch (_) { /* not JSON: keep the status */ }
      note("⚠️ " + error, "error");
      return;
    }
    input.value = "";
  }

  if (picker) {
    picker.addEventListener("change", async () => {
      const file = picker.files && picker.files[0];
      picker.value = "";
      if (file) await upload(file);
    });
  }

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = input.value;
    if (!text.trim()) return;
    input.value = "";
    if (!(await post({ text }))) input.value = text;
    input.focus();
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  log.addEventListener("submit", async (e) => {
    const f = e.target.closest("form.answer");
    if (!f) return;
    e.preventDefault();
    const buttons = f.parentElement.querySelectorAll("button");
    for (const b of buttons) b.disabled = true;
    const ok = await post({
      text: f.elements.text.value,
      nonce: f.elements.nonce.value,
      reply_to: f.elements.reply_to.value,
    });
    if (ok) f.closest(".msg").classList.add("answered");
    else for (const b of buttons) b.disabled = false;
  });

  const source = new EventSource("/chat/events?after=" + encodeURIComponent(log.dataset.lastId));
  for (const kind of ["message", "edit", "owner"]) source.addEventListener(kind, onEvent);
  source.addEventListener("gap", () => note("Some older replies are no longer kept.", "gap"));
  source.onopen = () => {
    status.textContent = "live";
    status.className = "status live";
  };
  source.onerror = () => {
    // EventSource reconnects by itself and sends Last-Event-ID: nothing is lost.
    status.textContent = "reconnecting…";
    status.className = "status down";
  };
  log.lastElementChild?.scrollIntoView({ block: "end" });
})();
