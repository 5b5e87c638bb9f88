"""The ``/chat`` page, rendered on the server: it works without script (a form, the
history as it stands), and ``chat.js`` adds the live stream on top. Every piece of text
is escaped here; the script only ever sets ``textContent``."""

from __future__ import annotations

import html
from dataclasses import dataclass

from channels.web.files import LINK
from channels.web.outbox import Event
from core.text import FENCE

# Only Fetch's own files; no inline script or style, no other origin, no framing.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)


@dataclass(slots=True)
class _Card:
    message_id: str
    who: str  # "fetch" | "owner"
    text: str
    nonce: str | None


def _cards(events: list[Event]) -> list[_Card]:
    """The conversation as the owner sees it: edits replace their message's text. A
    nonce on a reply makes it a diff; on the owner's own line, it is a diff's answer."""
    cards: dict[str, _Card] = {}
    for event in events:
        if event.kind == "edit" and event.message_id in cards:
            cards[event.message_id].text = event.text
            continue
        who = "owner" if event.kind == "owner" else "fetch"
        nonce = event.nonce if who == "fetch" else None
        cards[event.message_id] = _Card(event.message_id, who, event.text, nonce)
    return list(cards.values())


def _answers(events: list[Event]) -> dict[str, str]:
    """nonce -> what the owner answered (yes/no) to that diff, from this page."""
    return {e.nonce: e.text for e in events if e.kind == "owner" and e.nonce}


def render_text(text: str) -> str:
    """Prose in paragraphs, fenced blocks in ``<pre>``; all of it escaped."""
    out: list[str] = []
    prose: list[str] = []
    code: list[str] | None = None
    for line in text.split("\n"):
        if line.strip().startswith(FENCE):
            if code is None:
                if prose:
                    out.append(f'<p class="prose">{html.escape(chr(10).join(prose))}</p>')
                    prose = []
                code = []
            else:
                out.append(f'<pre class="code">{html.escape(chr(10).join(code))}</pre>')
                code = None
        elif code is not None:
            code.append(line)
        elif (link := LINK.match(line.strip())) is not None:  # a file Fetch sent (/send)
            if prose:
                out.append(f'<p class="prose">{html.escape(chr(10).join(prose))}</p>')
                prose = []
            out.append(_file_link(line.strip(), link.group(2)))
        else:
            prose.append(line)
    if code is not None:  # an unclosed fence still shows its code
        out.append(f'<pre class="code">{html.escape(chr(10).join(code))}</pre>')
    if prose:
        out.append(f'<p class="prose">{html.escape(chr(10).join(prose))}</p>')
    return "".join(out)


def _file_link(href: str, name: str) -> str:
    """A sent file: a download link, and the picture itself when it is one."""
    safe = html.escape(href)
    shown = ""
    if name.lower().endswith((".png", ".jpg", ".jpeg", ".webp", ".gif")):
        shown = f'<img src="{safe}" alt="{html.escape(name)}">'
    return f'<p class="file"><a href="{safe}" download>{html.escape(name)}</a>{shown}</p>'


def _answer_form(card: _Card, csrf: str, answer: str, label: str, stale: bool) -> str:
    disabled = " disabled" if stale else ""
    return (
        '<form class="answer" method="post" action="/chat/send">'
        f'<input type="hidden" name="csrf" value="{html.escape(csrf)}">'
        f'<input type="hidden" name="text" value="{answer}">'
        f'<input type="hidden" name="nonce" value="{html.escape(card.nonce or "")}">'
        f'<input type="hidden" name="reply_to" value="{html.escape(card.message_id)}">'
        f'<button type="submit" class="{answer}"{disabled}>{label}</button></form>'
    )


def render_card(
    card: _Card, csrf: str, newest_diff: str | None, answers: dict[str, str] | None = None
) -> str:
    answered = (answers or {}).get(card.nonce or "")
    classes = f"msg {card.who}" + (" diff" if card.nonce else "")
    classes += " answered" if answered is not None else ""
    buttons = ""
    if card.nonce:
        stale = card.message_id != newest_diff or answered is not None
        said = (
            f'<span class="said">answered: {html.escape(answered)}</span>'
            if answered is not None
            else ""
        )
        buttons = (
            f'<div class="buttons" data-nonce="{html.escape(card.nonce)}">'
            + _answer_form(card, csrf, "yes", "Approve", stale)
            + _answer_form(card, csrf, "no", "Reject", stale)
            + said
            + "</div>"
        )
    return (
        f'<article class="{classes}" data-message-id="{html.escape(card.message_id)}">'
        f'<div class="text">{render_text(card.text)}</div>{buttons}</article>'
    )


def render_page(events: list[Event], csrf: str, gap: bool) -> str:
    cards = _cards(events)
    diffs = [c.message_id for c in cards if c.nonce]
    newest = diffs[-1] if diffs else None
    last_id = events[-1].id if events else 0
    older = '<p class="note">Older messages are not shown.</p>' if gap else ""
    answers = _answers(events)
    log = "".join(render_card(card, csrf, newest, answers) for card in cards)
    token = html.escape(csrf)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="csrf-token" content="{token}">'
        "<title>Fetch · chat</title>"
        '<link rel="stylesheet" href="/chat/static/chat.css">'
        '<script src="/chat/static/chat.js" defer></script></head><body>'
        '<header><a href="/" class="home">Dashboard</a><h1>Chat with Fetch</h1>'
        '<span id="status" class="status">offline</span>'
        f'<form method="post" action="/logout" class="logout"><input type="hidden" name="csrf"'
        f' value="{token}"><button type="submit" id="logout">Log out</button></form>'
        "</header>"
        f'<main id="log" data-last-id="{last_id}" aria-live="polite">{older}{log}</main>'
        '<form id="send" method="post" action="/chat/send">'
        f'<input type="hidden" name="csrf" value="{token}">'
        '<textarea name="text" id="text" rows="2" required '
        'placeholder="Ask Fetch… (Enter sends, Shift+Enter: new line)"></textarea>'
        '<label class="attach" title="Send a file: an audio note, a screenshot, a log">📎'
        '<input type="file" id="file" hidden '
        'accept="image/*,audio/*,.txt,.log,.patch,.diff,.md,.json,.yaml,.csv,.pdf"></label>'
        '<button type="submit" id="send-button">Send</button></form>'
        "</body></html>"
    )
