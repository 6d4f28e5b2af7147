"""Join codes, secret keys and display names for a live class.

- A join code is 6 characters from an alphabet without look-alikes (no 0, O, 1, I or L):
  31**6 is about 890 million codes, ~30 bits. Length does not stop guessing; the store's
  limit on failed look-ups does. It is shown as `ABC-DEF` and accepted in any case, with or
  without the dash and spaces.
- Teacher and member keys are `secrets.token_urlsafe(16)`: 128 random bits.
- A display name is plain text: control and invisible formatting characters removed, runs of
  whitespace made one space, at most `MAX_NAME_CHARS` characters. It is never HTML: the pages
  show it with Streamlit's plain-text elements, so `<b>` stays the three characters `<b>`.
"""

from __future__ import annotations

import secrets
import unicodedata

CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_LENGTH = 6
MAX_NAME_CHARS = 40
MAX_NAME_INPUT = 1_000  # longer input is refused before any cleaning work
_MAX_CODE_INPUT = 40  # "abc - def" with generous spacing; longer input is not a code


def new_code() -> str:
    """A fresh join code, 6 characters, stored without the dash."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def new_key() -> str:
    """A secret key (teacher link, member): 128 random bits, URL-safe."""
    return secrets.token_urlsafe(16)


def format_code(code: str) -> str:
    """`ABCDEF` -> `ABC-DEF`, the way a code is shown on the projector."""
    half = CODE_LENGTH // 2
    return f"{code[:half]}-{code[half:]}"


def normalise_code(text: object) -> str | None:
    """What a student typed -> the stored code (`abc-def`, ` ABC DEF ` -> `ABCDEF`), or None
    when it cannot be a code at all (wrong length, a character not in the alphabet)."""
    if not isinstance(text, str) or len(text) > _MAX_CODE_INPUT:
        return None
    code = "".join(ch for ch in text.upper() if ch not in " -\t")
    if len(code) != CODE_LENGTH or any(ch not in CODE_ALPHABET for ch in code):
        return None
    return code


def clean_name(raw: object) -> str:
    """A display name as plain text: NFC, control/format/private characters removed, any run
    of whitespace (line breaks included) made one space, trimmed, at most 40 characters.
    Raises ValueError with a plain message for something that is not a name at all."""
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise ValueError("A name must be text.")
    if len(raw) > MAX_NAME_INPUT:
        raise ValueError(f"That name is too long: please use at most {MAX_NAME_CHARS} characters.")
    text = unicodedata.normalize("NFC", raw)
    kept = []
    for ch in text:
        kind = unicodedata.category(ch)
        if ch.isspace() or kind in ("Zl", "Zp"):
            kept.append(" ")
        elif not kind.startswith("C"):  # Cc control, Cf format, Cs, Co private, Cn unassigned
            kept.append(ch)
    return " ".join("".join(kept).split())[:MAX_NAME_CHARS].rstrip()
