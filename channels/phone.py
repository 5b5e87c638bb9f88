"""Phone numbers as the owner writes them -> the digits WhatsApp uses, via ``phonenumbers``.

``"+49 170 1234567"``, ``"0049 170 1234567"``, ``"49-170-1234567"`` and
``"+49 (0)170 1234567"`` are all ``"491701234567"``. The number must carry its country
code (there is no home region to guess from), and a typo must stop the start instead of
silently locking the owner out. So:

* written with ``+`` or ``00``, the country code is marked: any *possible* number is taken
  (a country code that exists, a length its country uses). "Possible", not "valid":
  WhatsApp numbers in new ranges and the fictional ranges tests use are in no table.
* bare digits are ambiguous: ``5551234567`` is a US number without its ``1`` as much as
  a Brazilian one (+55). They are taken only when, read with their leading digits as the
  country code, they are a *valid* number (a block assigned in that country);
  otherwise the owner is asked to write the ``+`` and the country code.
"""

from __future__ import annotations

import re

# phonenumbers is imported in normalise_number: reading the settings imports this module,
# and only a configured WhatsApp number needs its ~12 ms of tables.
_REASONS = {
    "INVALID_COUNTRY_CODE": "no country has that calling code",
    "TOO_SHORT": "too short for its country",
    "TOO_LONG": "too long for its country",
    "INVALID_LENGTH": "not a length its country uses",
    "IS_POSSIBLE_LOCAL_ONLY": "too short: only dialable within its area",
}


def normalise_number(text: str) -> str:
    """The number's digits with the country code (E.164 without ``+``), or ValueError."""
    import phonenumbers
    from phonenumbers import NumberParseException, ValidationResult

    raw = text.strip()
    if not re.fullmatch(r"[0-9+()\-./ ]+", raw) or not re.search(r"\d", raw):
        raise ValueError(
            f"{text!r} is not a phone number (digits with the country code, e.g. +49 170 1234567)"
        )
    compact = re.sub(r"[^\d+]", "", raw)
    marked = compact.startswith(("+", "00"))
    if compact.startswith("00"):
        compact = "+" + compact[2:]
    elif not marked:
        compact = "+" + compact  # written without + or 00: the digits start with the code
    try:
        number = phonenumbers.parse(compact, None)
    except NumberParseException:
        raise ValueError(
            f"{text!r} cannot be a real number (no country calling code "
            "recognised); write it with the country code, e.g. "
            "+49 170 1234567"
        ) from None
    reason = phonenumbers.is_possible_number_with_reason(number)
    if reason is not ValidationResult.IS_POSSIBLE:
        names = {getattr(ValidationResult, name): name for name in _REASONS}
        why = _REASONS.get(names.get(reason, ""), "not a possible number")
        raise ValueError(
            f"{text!r} cannot be a real number ({why}); write it with the "
            "country code, e.g. +49 170 1234567"
        )
    if not marked and not phonenumbers.is_valid_number(number):
        # 5551234567: as +55 no Brazilian number, so most likely a national number.
        raise ValueError(
            f"{text!r} has no country code that makes it a real number; write it with + "
            "and the country code, e.g. +1 555 123 4567 or +49 170 1234567"
        )
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)[1:]
