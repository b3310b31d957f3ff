"""Mask secrets before anything is stored: the one masking pass every way text enters goes through.

A memory store is the wrong place for credentials: they would be copied into the stream file,
the FTS index, every backup and every session's context. What is found is replaced by
`[REDACTED:<kind>]`; everything else stays byte-exact, and `mask` says which kinds it masked
(the digest turns them into warnings). Where a name says what the value is (`DB_PASS=...`,
`https://user:...@host`), only the value goes.

Every detector is linear in its input: a digest can be 100,000 characters and masking runs
inside the write transaction. A regex here never backtracks over an unbounded run: each run is
possessive (`++`, `{n,}+`), starts only where a run of its characters starts (a look-behind
on the same class), or is bounded; the scanners (URLs, private-key blocks, PuTTY keys,
NAME=value) move forward only, and the markup, command-line and cookie scanners read a
bounded stretch after the literal they start from. `tests/reliability/test_masking.py` bounds
the time per KB on adversarial input.

Deliberately left alone (they would mask code and data more often than secrets): values that
name a secret instead of holding it (`api_key=settings.openai_api_key`, `os.environ['TOKEN']`,
`getpass()`, `${SECRET}`, `<your key>`), 40-hex git SHAs, UUIDs, hashes, base64 data, `pk_`
publishable keys, and quoted values with spaces in them (descriptions, more often than
passphrases). The README has the table.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import re
from typing import Any, Callable, Iterator

Span = tuple[int, int, str]          # start, end, kind

_T = r"A-Za-z0-9_\-"                 # the characters of a token
_AN = "A-Za-z0-9"


def _lead(lead: str, boundary: str = _T) -> str:
    """A token's fixed-width opening, tried only where a token starts (the character before it
    is not one of `boundary`). The literal comes first so `re` finds candidates with its fast
    literal search (20x faster than a leading look-behind); the look-behind after it re-reads
    the character before the opening."""
    return f"{lead}(?<![{boundary}]{lead})"


def _looks_random(s: str) -> bool:
    """Generated, not a word or an identifier: digits among the letters, or case that flips too
    often for CamelCase (AutoModelForSequenceClassification has 18% capitals)."""
    letters = [c for c in s if c.isalpha()]
    if not letters:
        return False
    if any(c.isdigit() for c in s):
        return True
    upper = sum(c.isupper() for c in letters) / len(letters)
    return 0.3 <= upper <= 0.7


def _opaque_token(s: str) -> bool:
    """An opaque credential after 'Bearer': long, with digits or mixed case (not a long word)."""
    body = s.rstrip("=")
    return len(body) >= 20 and (any(c.isdigit() for c in body)
                                or (any(c.islower() for c in body) and any(c.isupper() for c in body)))


def _basic_credentials(s: str) -> bool:
    """'Basic' followed by base64 of printable 'user:password' (the word 'basic' in prose is not)."""
    try:
        raw = base64.b64decode(s + "=" * (-len(s) % 4), validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return ":" in decoded and decoded.isprintable()


def _credential_like(value: str) -> bool:
    """After 'password:' prose often follows ("Password: required"); a credential has digits or
    symbols, or mixed case at length."""
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(not c.isalnum() for c in value)
    mixed = any(c.islower() for c in value) and any(c.isupper() for c in value) and len(value) >= 12
    return len(value) >= 6 and (has_digit or has_symbol or mixed)


_VOWELS = set("aeiouyAEIOUY")


def _made_of_words(s: str, separators: str) -> bool:
    """A name people write: two or more parts between separators, each of words (3-15 letters
    with a vowel, or an acronym of up to 5 capitals), numbers, and a letter or two before a
    number (v3, Q3). `2024-quarterly-planning-final-v3` and `Data/Reports2024/QuarterlySales
    SummaryQ3` are; a generated key almost never is (1 in 400,000 random 40-character AWS-style
    strings; AWS's own example `wJalrXUtnFEMI/K7MDENG/…` fails at its first `w`)."""
    parts = re.split(f"[{re.escape(separators)}]", s)
    if len(parts) < 2:
        return False
    for part in parts:
        pieces = _SEGMENT.findall(part)
        if not part or "".join(pieces) != part:
            return False
        for i, piece in enumerate(pieces):
            if piece.isdigit():
                continue
            if len(piece) <= 2:
                if not (i + 1 < len(pieces) and pieces[i + 1].isdigit()):
                    return False
            elif len(piece) > 15 or not (_VOWELS & set(piece) or (piece.isupper() and len(piece) <= 5)):
                return False
    return True


def _openai_body(body: str) -> bool:
    """An OpenAI key's body is generated (48 characters with no dash, or a project key's long
    random parts); `sk-2024-quarterly-planning-final-v3.pdf` is a file name: words, years and
    version numbers joined by dashes."""
    return _looks_random(body) and not _made_of_words(body, "_-")


def _discord_user_id(part: str) -> bool:
    """A Discord bot token's first part is the bot's user id (a snowflake, 17-20 digits) in
    base64 (23-27 characters, starting M, N or O as every digit does)."""
    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        return False
    return 15 <= len(raw) <= 21 and raw.isdigit()


_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _bitcoin_wif(s: str) -> bool:
    """Base58Check with version 0x80 and a 32-byte key (+0x01 when compressed): a random base58
    string of that length passes the 4-byte checksum once in four billion."""
    n = 0
    for c in s:
        n = n * 58 + _B58.index(c)
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    if len(raw) not in (37, 38) or raw[0] != 0x80 or (len(raw) == 38 and raw[33] != 1):
        return False
    return hashlib.sha256(hashlib.sha256(raw[:-4]).digest()).digest()[:4] == raw[-4:]


# -- formats with a recognisable shape: (kind, pattern, check) -----------------------------------
# A group `secret` is what is masked (the rest stays: `Bearer `, a webhook's host); without one
# the whole match is, and `check` reads the group `body` if there is one. Order is priority:
# where spans overlap, the earlier kind names the merged span.
_SHAPES: list[tuple[str, str, Callable[[str], bool] | None]] = [
    ("anthropic_key", _lead("sk-ant-") + f"[{_T}]{{20,}}+", None),
    ("tidemind_token", _lead("tidemind_") + f"[{_T}]{{40,}}+", None),     # `tidemind tokens add` (tokens.py)
    ("openai_key", _lead("sk-") + f"(?:proj-|svcacct-|admin-)?(?P<body>[{_T}]{{20,}}+)", _openai_body),
    ("github_token", _lead("gh[pousr]_") + "[A-Za-z0-9]{30,}+", None),
    ("github_token", _lead("github_pat_") + "[A-Za-z0-9_]{30,}+", None),
    ("gitlab_token", _lead("gl") + f"(?:pat|dt|rt|ptt|ft|cbt|oas|soat|imt|agent)-[{_T}]{{20,}}+", None),
    ("huggingface_token", _lead("hf_") + "(?P<body>[A-Za-z0-9]{30,}+)", _looks_random),
    ("npm_token", _lead("npm_") + "(?P<body>[A-Za-z0-9]{36})(?![A-Za-z0-9])", _looks_random),
    ("pypi_token", _lead("pypi-AgE") + f"[{_T}]{{50,}}+", None),
    ("aws_access_key", _lead("A(?:KIA|SIA|BIA|CCA)", _AN) + "[0-9A-Z]{16}(?![A-Za-z0-9])", None),
    ("slack_token", _lead("xox[abposrec]-") + r"[A-Za-z0-9\-]{10,}+", None),
    ("slack_token", _lead("xoxd-") + r"[A-Za-z0-9%_+/=\-]{20,}+", None),          # a browser session's cookie
    ("slack_token", _lead("xapp-") + r"\d-[A-Za-z0-9\-]{10,}+", None),
    ("slack_webhook", r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9/_\-]{8,}+)", None),
    ("discord_webhook", r"discord(?:app)?\.com/api/webhooks/(?P<secret>\d{5,25}+/[A-Za-z0-9_\-]{20,}+)", None),
    ("stripe_key", _lead("[sr]k_") + "(?:live|test)_[A-Za-z0-9]{16,}+", None),
    ("stripe_key", _lead("whsec_") + "[A-Za-z0-9+/=]{20,}+", None),
    ("google_api_key", _lead("AIza") + f"[{_T}]{{35}}(?![{_T}])", None),
    ("google_oauth_token", _lead(r"ya29\.") + f"[{_T}]{{20,}}+", None),
    ("google_oauth_token", _lead("1//0") + f"[{_T}]{{30,}}+", None),
    ("google_client_secret", _lead("GOCSPX-") + f"[{_T}]{{20,}}+", None),
    ("sendgrid_key", _lead(r"SG\.") + rf"[{_T}]{{22}}\.[{_T}]{{43}}(?![{_T}])", None),
    ("twilio_key", _lead("SK", _AN) + "[0-9a-fA-F]{32}(?![A-Za-z0-9])", None),
    ("telegram_bot_token", rf"(?<![A-Za-z0-9_:])\d{{8,10}}+:AA[{_T}]{{30,40}}+(?![{_T}])", None),
    ("databricks_token", _lead("dapi", _AN) + r"[0-9a-f]{32}(?:-\d)?(?![A-Za-z0-9])", None),
    ("digitalocean_token", _lead("do[por]_v1_", _AN) + "[a-f0-9]{64}(?![A-Za-z0-9])", None),
    ("shopify_token", _lead("shp", _AN) + "(?:at|ca|pa|ss)_[a-fA-F0-9]{32}(?![A-Za-z0-9])", None),
    ("age_secret_key", r"AGE-SECRET-KEY-1[0-9A-Z]{58}", None),
    # issue 29 item 8: the formats the second review found unmasked
    ("vault_token", _lead(r"hv[sbr]\.") + f"(?P<body>[{_T}]{{24,}}+)", _looks_random),
    ("doppler_token", _lead(r"dp\.") + r"(?:st|pt|ct|sa|scim|audit)\.(?:[a-z0-9_\-]{1,35}+\.)?"
                      r"(?P<body>[A-Za-z0-9]{40,}+)", _looks_random),
    ("linear_key", _lead("lin_") + "(?:api|oauth)_(?P<body>[A-Za-z0-9]{32,}+)", _looks_random),
    ("notion_token", _lead("secret_") + "(?P<body>[A-Za-z0-9]{43})(?![A-Za-z0-9_])", _looks_random),
    ("notion_token", _lead("ntn_") + "(?P<body>[A-Za-z0-9]{40,}+)", _looks_random),
    ("atlassian_token", _lead("ATATT") + r"[A-Za-z0-9_=\-]{50,}+", None),
    ("mailgun_key", _lead("key-", _AN) + "[0-9a-f]{32}(?![A-Za-z0-9])", None),
    # 32 hex and a data centre: the literal is read first, the hex before it by a look-behind
    ("mailchimp_key", r"-us(?<=(?<![A-Za-z0-9_\-])(?P<pre>[0-9a-f]{32})-us)\d{1,2}(?![A-Za-z0-9])", None),
    ("discord_bot_token", rf"(?<![{_T}.])(?P<body>[MNO][{_T}]{{22,26}}+)\.[{_T}]{{6}}\.[{_T}]{{27,40}}+(?![{_T}])",
     _discord_user_id),
    ("groq_key", _lead("gsk_") + "(?P<body>[A-Za-z0-9]{40,}+)", _looks_random),
    ("replicate_token", _lead("r8_") + "(?P<body>[A-Za-z0-9]{30,}+)", _looks_random),
    ("perplexity_key", _lead("pplx-") + "(?P<body>[A-Za-z0-9]{40,}+)", _looks_random),
    ("square_token", _lead("sq0(?:atp|csp)-") + f"[{_T}]{{22,}}+", None),
    ("terraform_token", rf"\.atlasv1\.(?<=(?<![{_T}.])(?P<pre>[A-Za-z0-9]{{14}})\.atlasv1\.)"
                        r"[A-Za-z0-9_=\-]{60,}+", None),
    ("pulumi_token", _lead("pul-", _AN) + "[0-9a-f]{40}(?![A-Za-z0-9])", None),
    ("dropbox_token", _lead(r"sl\.") + r"(?:u\.)?(?P<body>[A-Za-z0-9_=\-]{100,}+)", _looks_random),
    ("newrelic_key", _lead("NRAK-", _AN) + "[A-Z0-9]{27}(?![A-Za-z0-9])", None),
    ("newrelic_key", _lead("NRII-", _AN) + f"[{_T}]{{32}}(?![{_T}])", None),
    ("grafana_token", _lead("glsa_") + "[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}(?![A-Za-z0-9])", None),
    ("grafana_token", _lead("glc_") + "(?P<body>[A-Za-z0-9+/]{32,}+={0,2}+)", _looks_random),
    # Fly.io macaroons: `FlyV1 fm2_…,fm2_…` (the scheme word stays), and the older `fo1_`
    ("fly_token", _lead("fm[12]") + r"[ar]?_[A-Za-z0-9+/=_\-]{40,}+(?:,fm[12][ar]?_[A-Za-z0-9+/=_\-]{20,}+)*+", None),
    ("fly_token", _lead("fo1_") + f"(?P<body>[{_T}]{{43}})(?![{_T}])", _looks_random),
    ("bitcoin_private_key", "(?<![A-Za-z0-9+/])(?:5[HJK][1-9A-HJ-NP-Za-km-z]{49}|[KL][1-9A-HJ-NP-Za-km-z]{51})"
                            "(?![A-Za-z0-9+/])", _bitcoin_wif),
    ("firebase_server_key", _lead("AAAA") + rf"[{_T}]{{7}}:APA91b[{_T}]{{100,}}+", None),
    # ~/.docker/config.json keeps base64 of user:password under "auth"
    ("docker_auth", r'"auth"[ \t]*+:[ \t]*+"(?P<secret>[A-Za-z0-9+/]{8,}+={0,2}+)"', _basic_credentials),
    # a kubeconfig's client key is a PEM private key in base64
    ("private_key", "client-key-data(?![A-Za-z0-9_-])[\"']?[ \t]*+:[ \t]*+[\"']?(?P<secret>[A-Za-z0-9+/]{16,}+={0,2}+)",
     None),
    ("jwt", _lead("eyJ") + rf"[{_T}]{{8,}}+\.eyJ[{_T}]{{8,}}+\.[{_T}]{{8,}}+", None),
    ("bearer_token", "(?i)" + _lead("bearer") + r"[ \t]++(?P<secret>[A-Za-z0-9_\-.~+/]{16,}+=*+)", _opaque_token),
    ("basic_auth", "(?i)" + _lead("basic") + r"[ \t]++(?P<secret>[A-Za-z0-9+/]{6,}+={0,2}+)", _basic_credentials),
    ("authorization_header", "(?i)" + _lead("authorization", "A-Za-z0-9_") + r"[\"']?[ \t]*+[:=][ \t]*+[\"']?"
                             r"(?:(?:token|bot|apikey|key|sso-key|ssws)[ \t]++)?(?P<secret>[^\s\"'`,;]{6,}+)",
                             _credential_like),
    # curl -u / --user user:password (wget, httpie and others read the same): uid:gid is not one
    ("password_option", r"-(?<![^\s\"'=]-)(?:u|-user|-proxy-user)(?:[ \t]++|=)?[\"']?(?P<user>[^\s:\"'$]{1,128}+)"
                        r":(?P<secret>[^\s\"'`]{1,512}+)", None),
    ("password_option", "(?i)(?:" + _lead("mysql") + "(?:dump|admin)?|" + _lead("mariadb") + r")(?![A-Za-z0-9_\-])"
                        r"[^\n]{0,300}?(?<=\s)(?-i:-p)(?P<secret>[^\s\"'\-][^\s\"']{0,255}+)", None),
]
_COMPILED = [(kind, re.compile(pattern), check) for kind, pattern, check in _SHAPES]


def _shapes(text: str) -> Iterator[tuple[Span, int]]:
    for priority, (kind, pattern, check) in enumerate(_COMPILED):
        group = "secret" if "secret" in pattern.groupindex else 0
        checked = "body" if "body" in pattern.groupindex else group
        # a group `pre` is a look-behind's part of the secret (the hex of `<hex>-us6`)
        before = "pre" if "pre" in pattern.groupindex else None
        for m in pattern.finditer(text):
            value = m.group(group)
            # a match that takes in a marker would mask the marker's own words ("-u [REDACTED:x]"
            # read as user "[REDACTED" and password "x]")
            if "[REDACTED:" in m.group(0) or (check is not None and not check(m.group(checked))):
                continue
            if kind == "password_option" and "user" in pattern.groupindex and \
                    m.group("user").isdigit() and value.isdigit():
                continue                                   # docker -u 1000:1000 is a uid and gid
            yield (m.start(before or group), m.end(group), kind), priority


# -- private key blocks (PEM, OpenSSH, PGP) --------------------------------------------------------
_KEY_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]{1,20}+ ){0,4}PRIVATE KEY(?: BLOCK)?-----")
_KEY_END = re.compile(r"-----END (?:[A-Z0-9]{1,20}+ ){0,4}PRIVATE KEY(?: BLOCK)?-----")
# what follows a header: base64 chunks and header lines (Proc-Type, DEK-Info, Version), separated
# by whitespace or by the escaped newlines of a key pasted from JSON
_KEY_CHUNK = re.compile(r"(?:[ \t\r\n]|\\[nr])*+(?:(?P<header>[A-Za-z][A-Za-z-]{0,30}+: [^\n\\]{0,200}+)"
                        r"|(?P<b64>[A-Za-z0-9+/=]++))")


def _key_material(text: str, pos: int, headers: bool = True) -> int:
    """Where the key material after a header ends when no END line came (a cut paste): chunks
    are taken while they look generated; a word of prose ("Thanks") ends it, and so does a
    `Name: value` line where no PEM header can be (`headers=False`)."""
    end = pos
    while (chunk := _KEY_CHUNK.match(text, end)) is not None:
        body = chunk.group("b64")
        if body is None and not headers:
            break
        if body is not None and not (len(body) >= 16 or _looks_random(body) or any(c in "+/=" for c in body)):
            break
        end = chunk.end()
    return end


def _private_keys(text: str) -> Iterator[Span]:
    """The whole block; with no END line, the header and the key material after it. A header with
    nothing after it (code that looks for one) is no secret."""
    pos = 0
    end: re.Match | None = None
    no_end_after = len(text) + 1           # searching again after a miss would make this quadratic
    while (begin := _KEY_BEGIN.search(text, pos)) is not None:
        if end is None or end.start() < begin.end():
            end = None if begin.end() >= no_end_after else _KEY_END.search(text, begin.end())
            if end is None:
                no_end_after = begin.end()
        if end is not None:
            stop = end.end()
        else:
            stop = _key_material(text, begin.end())
            if stop == begin.end():
                pos = stop
                continue
        yield begin.start(), stop, "private_key"
        pos = stop


# PuTTY's .ppk: `PuTTY-User-Key-File-2/3:` headers, the public lines, then `Private-Lines: N`,
# N lines of base64 and `Private-MAC:`. The whole file goes, as a PEM block does.
_PUTTY_BEGIN = re.compile(r"PuTTY-User-Key-File-\d: ")
_PUTTY_PRIVATE = "Private-Lines:"
_PUTTY_LINES = re.compile(r"Private-Lines:[ \t]*+(?P<n>\d{1,4}+)[ \t]*+\r?\n")
_PUTTY_LINE = re.compile(r"[ \t]*+[A-Za-z0-9+/=]++[ \t]*+(?:\r?\n|$)")
_PUTTY_MAC = re.compile(r"Private-(?:MAC|Hash):[ \t]*+[0-9a-fA-F]++")
_PUTTY_SPAN = 20_000                 # header to Private-Lines: an RSA-16384 public part is ~3 KB


def _putty_keys(text: str) -> Iterator[Span]:
    pos, private = 0, -1
    while (begin := _PUTTY_BEGIN.search(text, pos)) is not None:
        pos = begin.end()
        if private < begin.end():                   # each 'Private-Lines:' is looked for once
            private = text.find(_PUTTY_PRIVATE, begin.end())
            if private < 0:
                return
        if private - begin.end() > _PUTTY_SPAN:
            continue
        lines = _PUTTY_LINES.match(text, private)
        if lines is None:
            continue
        end = lines.end()
        for _ in range(int(lines.group("n"))):
            line = _PUTTY_LINE.match(text, end)
            if line is None:
                break
            end = line.end()
        if (mac := _PUTTY_MAC.match(text, end)) is not None:
            end = mac.end()
        yield begin.start(), end, "private_key"
        pos = end


# `private key: MIIEvQIBADANBgkqhkiG9w0BAQEFAASC…`: key material with no PEM lines around it, on
# the same line or the lines after (`PRIVATE_KEY=…`, an identifier, is a NAME=value)
_KEY_LABEL = re.compile(r"(?i)key(?<![A-Za-z0-9_]private[ \t\-]key)(?<=private[ \t\-]key)[ \t]*+[:=]")


def _labelled_keys(text: str) -> Iterator[Span]:
    for m in _KEY_LABEL.finditer(text):
        first = _KEY_CHUNK.match(text, m.end())
        body = first.group("b64") if first is not None else None
        if body is None or len(body.rstrip("=")) < 32 or not any(c.isdigit() or c in "+/" for c in body):
            continue                                   # "private key: in the vault", a short word
        yield first.start("b64"), _key_material(text, m.end(), headers=False), "private_key"


# -- passwords in URLs: scheme://user:password@host, the password may hold '@', '/', ':' ---------
_URL_USER = re.compile(r"[^\s:/?#@\"'<>`\[\]]{0,256}+:")
_URL_REST = re.compile(r"[^\s\"'<>`]*+")
_PORT = re.compile(r"\d{1,5}(?=[/?#]|$)")
_URL_PLACEHOLDERS = {"pass", "password", "passwd", "pwd", "pw", "secret"}   # https://user:pass@host in docs


def _url_passwords(text: str) -> Iterator[Span]:
    pos = 0
    while (i := text.find("://", pos)) >= 0:
        pos = i + 3
        nxt = text.find("://", pos)
        limit = len(text) if nxt < 0 else nxt       # each stretch of text is read for one URL only
        user = _URL_USER.match(text, pos, limit)
        if not user:
            continue
        start = user.end()
        end = _URL_REST.match(text, start, limit).end()
        if _PORT.match(text, start, end):           # host:8080/path, not user:password
            continue
        first_at = text.find("@", start, end)
        if first_at < 0:
            continue
        # the password runs to the last '@' before the query: "p@ss/w0rd@host/db" is one password,
        # "pw@host/x?mail=a@b" is "pw"
        query = min((q for q in (text.find("?", first_at, end), text.find("#", first_at, end)) if q >= 0),
                    default=end)
        last_at = text.rfind("@", start, query)
        secret = text[start:last_at]
        if secret and not secret.startswith("[REDACTED:") and not _placeholder(secret) \
                and secret.lower() not in _URL_PLACEHOLDERS:
            yield start, last_at, "password_in_url"


# -- a bare AWS secret access key: 40 base64 characters, near a sign that AWS is meant ----------
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_CONTEXT = re.compile(r"(?i)aws|amazon|secret[ _-]?access|(?:AKIA|ASIA)[0-9A-Z]{16}")


def _aws_secrets(text: str) -> Iterator[Span]:
    for m in _AWS_SECRET.finditer(text):
        value = m.group()
        if not (any(c.isupper() for c in value) and any(c.islower() for c in value)
                and any(c.isdigit() or c in "/+" for c in value)):
            continue                                   # a git SHA (hex), a word run
        if _made_of_words(value, "/"):
            continue                                   # a path: Data/Reports2024/QuarterlySalesSummaryQ3
        # the value itself is not its own context (a random key may spell 'aws')
        if _AWS_CONTEXT.search(text, max(0, m.start() - 160), m.start()) or \
                _AWS_CONTEXT.search(text, m.end(), min(len(text), m.end() + 80)):
            yield m.start(), m.end(), "aws_secret_key"


# -- NAME=value, NAME: value, "NAME": "value", --flag value, "the password is ..." -------------
# A name is tried where an identifier starts and only if it contains a credential-ish word (a
# bounded look-ahead, so prose costs no Python per word); `_credential_name` then decides.
_NAME = re.compile(
    r"(?<![\w.\-])(?<!\[REDACTED:)"
    r"(?=[\w.\-]{0,127}?(?i:pass|pwd|pw|secret|token|key|auth|cred|sig))"
    r"(?P<name>-{0,2}[A-Za-z_][\w.\-]{0,127}+)(?P<close>[\"']?\]?)"
    r"(?P<sep>[ \t]{0,3}+(?::=|=>|[:=])[ \t]{0,3}+|[ \t]++is[ \t]++|[ \t]++)")
# '&' ends a value only after '=' (a query string's next pair); "password: Tr0ub4dor&3" is one value
_BARE_VALUE = re.compile(r"[^\s\"'`,;()\[\]{}<>]++")
_QUERY_VALUE = re.compile(r"[^\s\"'`,;&()\[\]{}<>]++")
_SEGMENT = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
# a name whose last part is one of these holds a credential...
_LAST_WORDS = {"password", "passwd", "passphrase", "passcode", "pwd", "pass", "pw", "secret", "secrets", "token",
               "apikey", "credential", "credentials", "creds", "auth", "sig", "privkey"}
# ...or ends like one of these when its parts are run together (PGPASSWORD, APIKEY, SECRETKEY)
_JOINED_ENDINGS = ("password", "passwd", "passphrase", "secret", "token", "apikey", "accesskey", "secretkey",
                   "privatekey", "accountkey", "signingkey", "secretkeybase")
# ...or is 'key' after one of these (ACCOUNT_KEY, signingKey), not PRIMARY_KEY or sort_key
_KEY_QUALIFIERS = {"api", "access", "secret", "private", "signing", "sign", "encryption", "encrypt", "master",
                   "account", "auth", "client", "app", "license", "deploy", "ssh", "service", "webhook", "jwt",
                   "hmac", "session", "shared", "subscription", "consumer", "storage", "admin", "sas",
                   "cookie", "crypto", "wallet", "x"}
_SPOKEN = {"password", "passwd", "passphrase", "passcode", "pwd"}     # "the password is ...", "--password x"
# short names that mean other things in code (sig: 'Signature', auth: bool): only NAME=value, and
# a value of some length (an Azure SAS `sig=` is ~44 characters)
_WEAK = {"sig", "auth", "pw"}
_NOT_SECRET = ("publickeytoken",)                  # a .NET assembly's public identity
# values that name a secret instead of holding one
_PLACEHOLDERS = {"none", "null", "nil", "true", "false", "undefined", "required", "optional", "string", "redacted",
                 "hidden", "empty", "changeme", "example", "test", "testing", "dummy", "fake", "foo", "bar", "sample",
                 "placeholder", "xxx"}
_CODE_OBJECTS = {"settings", "config", "conf", "cfg", "os", "env", "environ", "process", "self", "this", "secrets",
                 "vault", "ctx", "context", "request", "req", "args", "opts", "options", "params", "app", "credentials",
                 "creds", "st", "flask", "django", "getpass", "keyring", "props", "values"}
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_]*")
_SNAKE = re.compile(r"[a-z]+(?:_[a-z]+)+")
_CAMEL = re.compile(r"[a-z]+(?:[A-Z][a-z]*)+")
_CONSTANT = re.compile(r"[A-Z]+(?:_[A-Z]+)+")
_CREDENTIAL_WORD = re.compile(r"(?i)pass|pwd|secret|token|key|auth|cred")


def _credential_name(name: str) -> bool:
    parts = [p.lower() for p in _SEGMENT.findall(name)]
    if not parts or "".join(parts).endswith(_NOT_SECRET):
        return False
    if parts[-1] in _LAST_WORDS or "".join(parts).endswith(_JOINED_ENDINGS):
        return True
    return parts[-1] in ("key", "keys") and len(parts) > 1 and parts[-2] in _KEY_QUALIFIERS


def _names_a_secret(value: str, followed_by: str, spaced: bool) -> bool:
    """Code or a template that refers to a secret kept elsewhere (unquoted values only)."""
    if followed_by in ("(", "["):
        return True                                    # getpass(), os.environ['X'], config["token"]
    if _DOTTED.fullmatch(value):
        parts = value.split(".")
        return parts[0].lower() in _CODE_OBJECTS or bool(_CREDENTIAL_WORD.search(parts[-1])) \
            or all(p.replace("_", "").isalpha() for p in parts)
    if _IDENTIFIER.fullmatch(value):                   # password=db_password, secret=SECRET_KEY, token=userToken
        # and `token = Punctuation`: a bare word after a spaced '=' is a reference in code (an env
        # file or a shell writes NAME=value, without spaces)
        return spaced or bool(_CREDENTIAL_WORD.search(value)) or bool(
            _SNAKE.fullmatch(value) or _CAMEL.fullmatch(value) or _CONSTANT.fullmatch(value))
    return False


_COLOUR = re.compile(r"#[0-9a-fA-F]{3,8}")


def _placeholder(value: str) -> bool:
    low = value.lower()
    return (value[0] in "$%{<*[" or low in _PLACEHOLDERS or len(set(value)) == 1
            or low.startswith(("your", "example", "http://", "https://")) or value.startswith(("/", "~", "./", "../"))
            or _COLOUR.fullmatch(value) is not None)


def _assignments(text: str) -> Iterator[Span]:
    pos = 0
    while (m := _NAME.search(text, pos)) is not None:
        pos = m.end()
        name, sep = m.group("name"), m.group("sep")
        if not _credential_name(name.lstrip("-")):
            continue
        last = _SEGMENT.findall(name)[-1].lower()
        spoken = not any(c in sep for c in ":=>")     # "password is x", "--password x": stricter
        if spoken and not (name.startswith("--") or last in _SPOKEN):
            continue
        if spoken and m.group("close") and sep.strip() != "is":
            continue        # a quoted name then a space is markup: <input name="pwd" value="…">
        if last in _WEAK and sep.strip() != "=":
            continue        # before reading the value: `auth: password=Hunter2xx9` is read from `password`
        start = m.end()
        if start < len(text) and text[start] in "\"'":
            quote = text[start]
            end = text.find(quote, start + 1, min(len(text), start + 1025))
            if end < 0 or "\n" in text[start + 1:end]:
                continue
            value, value_start, quoted = text[start + 1:end], start + 1, True
            pos = end + 1
        else:
            v = (_QUERY_VALUE if "=" in sep else _BARE_VALUE).match(text, start)
            if not v:
                continue
            value, value_start, end, quoted = v.group(), start, v.end(), False
            pos = end
        if not value or value.startswith("[REDACTED:") or any(c.isspace() for c in value) or _placeholder(value):
            continue
        if last in _WEAK and (sep.strip() != "=" or len(value) < 8):
            continue
        if quoted:
            if _CONSTANT.fullmatch(value) or (_IDENTIFIER.fullmatch(value) and _CREDENTIAL_WORD.search(value)):
                continue                               # api_key = "OPENAI_API_KEY": the variable's name
            if len(value) < 4:
                continue
        else:
            if _names_a_secret(value, text[end:end + 1], spaced=sep != sep.strip() and "=" in sep):
                continue
            if spoken or ":" in sep:
                # in prose a value ends before the sentence's punctuation ("the password policy: ...")
                value = value.rstrip(".,:;!?")
                if not value or not _credential_like(value):   # "Password: required", "the password is long"
                    continue
            elif len(value) < 6 and (len(value) < 4 or value.isalpha()):
                continue
        yield value_start, value_start + len(value), "assigned_secret"


# -- .pgpass: hostname:port:database:username:password, as a line or a word of its own -----------
_PGPASS = re.compile(r"(?<![^\s\"'`])(?P<host>[^\s:\"'`]{1,253}+):(?:\d{1,5}+|\*):[^\s:\"'`]{1,128}+:"
                     r"[^\s:\"'`]{1,128}+:(?P<secret>[^\s\"'`]{1,512}+)")
_HEX_GROUP = re.compile(r"[0-9a-fA-F]{1,4}")
# file:line:… (a log's or a compiler's location) is no host
_SOURCE_EXTENSIONS = {"py", "pyx", "js", "jsx", "ts", "tsx", "mjs", "go", "rb", "java", "kt", "scala", "c", "h", "cc",
                      "cpp", "hpp", "cs", "rs", "php", "swift", "sh", "pl", "lua", "ex", "exs", "erl", "hs", "vue",
                      "sql", "yml", "yaml", "json", "toml", "ini", "cfg", "txt", "log", "md"}


def _pgpass_lines(text: str) -> Iterator[Span]:
    for m in _PGPASS.finditer(text):
        fields = m.group().rstrip(".,;!?)").split(":")          # as prose ends it: "at 12:30:45:00:99, ..."
        host = m.group("host")
        extension = host.rpartition(".")[2].lower() if "." in host else ""
        if m.group("secret") == "*" or "[REDACTED:" in m.group() or all(f.isdigit() for f in fields) \
                or all(_HEX_GROUP.fullmatch(f) for f in fields) or extension in _SOURCE_EXTENSIONS:
            continue                                   # a time, an IPv6 address, server.py:42:handler:INFO:ready
        yield m.start("secret"), m.end("secret"), "pgpass_password"


# -- markup: <password>…</password>, <input name="pwd" value="…">, <add key="DbPassword" value="…"/>
_TAG = re.compile(r"<(?P<tag>[A-Za-z_][\w.:\-]{0,63}+)(?P<attrs>[ \t\r\n][^<>]{0,2048}+)?>")
_ATTR = re.compile(r"(?P<name>[\w.:\-]{1,64}+)[ \t\r\n]*+=[ \t\r\n]*+"
                   r"(?:\"(?P<dq>[^\"]*+)\"|'(?P<sq>[^']*+)'|(?P<bare>[^\s\"'=<>`]++))")
_ELEMENT_TEXT = re.compile(r"[ \t\r\n]*+(?P<value>[^<>\s]{1,1024}+)[ \t\r\n]*+</")
_IDENTITY_ATTRS = {"name", "id", "key", "property"}


def _markup_value(value: str) -> bool:
    return len(value) >= 4 and not any(c.isspace() for c in value) and not value.startswith("[REDACTED:") \
        and not _placeholder(value)


def _markup(text: str) -> Iterator[Span]:
    for m in _TAG.finditer(text):
        tag = m.group("tag")
        if m.group("attrs"):
            attrs: dict[str, tuple[str, int]] = {}
            for a in _ATTR.finditer(m.group("attrs")):
                which = "dq" if a.group("dq") is not None else "sq" if a.group("sq") is not None else "bare"
                attrs.setdefault(a.group("name").lower(), (a.group(which), m.start("attrs") + a.start(which)))
            value = attrs.get("value")
            if value is not None and _markup_value(value[0]) and (
                    attrs.get("type", ("",))[0].lower() == "password"
                    or any(_credential_name(attrs[k][0]) for k in _IDENTITY_ATTRS if k in attrs)):
                yield value[1], value[1] + len(value[0]), "assigned_secret"
        local = tag.rpartition(":")[2]
        if _credential_name(local) and _SEGMENT.findall(local)[-1].lower() not in _WEAK:
            inner = _ELEMENT_TEXT.match(text, m.end())
            if inner is not None and _markup_value(inner.group("value")) \
                    and text.startswith(tag + ">", inner.end()):
                yield inner.start("value"), inner.end("value"), "assigned_secret"


# -- passwords on command lines: sshpass -p, docker login -p, redis-cli -a, net use ---------------
_SHELL_ARG = re.compile(r"\"(?P<dq>[^\"\n]{1,512}+)\"|'(?P<sq>[^'\n]{1,512}+)'|(?P<bare>[^\s\"'`;|&]{1,512}+)")
_COMMAND_FLAGS = [
    # sshpass's own options come before the command it runs (whose -p is a port)
    re.compile(r"sshpass(?<![\w\-]sshpass)(?:[ \t]++-(?:[fdP][ \t]*+[^\s]++|[ve][^\s]*+))*+[ \t]++-p[ \t]*+"),
    re.compile(r"redis-cli(?<![\w\-]redis-cli)(?![\w\-])[^\n|;&]{0,300}?(?<=\s)(?:-a|--pass)(?:[ \t]++|=)"),
]
# `docker login`, `podman login`, `helm registry login`…: found by `login`, the command checked after
_LOGIN = re.compile(r"login(?<=[ \t]login)(?![\w\-])")
_LOGIN_COMMAND = re.compile(r"(?<![\w\-])(?:docker|podman|buildah|nerdctl|oc|helm[ \t]++registry)[ \t]++login\Z")
_LOGIN_PASSWORD = re.compile(r"[^\n|;&]{0,300}?(?<=\s)(?:-p|--password)(?:[ \t]++|=)")
_NET_USE = re.compile(r"(?i)net(?<![\w\-]net)[ \t]++use(?![\w\-])(?P<args>[^\n|&]{0,512}+)")
_NET_DEVICE = re.compile(r"(?i)[A-Z]:|\*|LPT\d:|COM\d:")


def _argument(text: str, pos: int, end: int | None = None) -> tuple[int, int] | None:
    """The word at pos (inside its quotes, if quoted), unless it is another option or names a
    secret kept elsewhere ($PASSWORD, %PASS%, <password>)."""
    a = _SHELL_ARG.match(text, pos, len(text) if end is None else end)
    if a is None:
        return None
    which = "dq" if a.group("dq") is not None else "sq" if a.group("sq") is not None else "bare"
    value = a.group(which)
    if value.startswith(("-", "[REDACTED:")) or _placeholder(value):
        return None
    return a.start(which), a.end(which)


def _command_lines(text: str) -> Iterator[Span]:
    for pattern in _COMMAND_FLAGS:
        for m in pattern.finditer(text):
            if (arg := _argument(text, m.end())) is not None:
                yield arg[0], arg[1], "password_option"
    for m in _LOGIN.finditer(text):
        if _LOGIN_COMMAND.search(text, max(0, m.start() - 40), m.end()) is None:
            continue
        if (flag := _LOGIN_PASSWORD.match(text, m.end())) is not None \
                and (arg := _argument(text, flag.end())) is not None:
            yield arg[0], arg[1], "password_option"
    # net use [device] \\server\share [password | *] [/user:[domain\]name] [password]: a word
    # that is none of the others, after the share or the user, is the password
    for m in _NET_USE.finditer(text):
        pos, end = m.start("args"), m.end("args")
        after_share = False
        while pos < end:
            while pos < end and text[pos] in " \t":
                pos += 1
            a = _SHELL_ARG.match(text, pos, end)
            if a is None:
                break
            word = a.group()
            if word.startswith("\\\\") or word.lower().startswith(("/u:", "/user:")):
                after_share = True
            elif after_share and not (word.startswith("/") or _NET_DEVICE.fullmatch(word)):
                if (arg := _argument(text, pos, end)) is not None:
                    yield arg[0], arg[1], "password_option"
                break                                  # one password to a command
            pos = a.end()


# -- cookies: Cookie: / Set-Cookie: headers ----------------------------------------------------------
_COOKIE = re.compile(r"(?i)cookie(?<![\w]cookie)[\"']?[ \t]*+:[ \t]*+[\"']?")
_COOKIE_PAIR = re.compile(r"[ \t]*+(?P<name>[^=;,\s\"']{1,128}+)=(?P<value>[^;,\s\"']{1,4096}+)[ \t]*+(?P<more>;?)")
_SESSION_COOKIE = re.compile(r"(?i)sess|sid|auth|token|jwt|login|remember|csrf|xsrf|secret|pass|key|cred")


def _cookies(text: str) -> Iterator[Span]:
    for m in _COOKIE.finditer(text):
        set_cookie = text[max(0, m.start() - 4):m.start()].lower() == "set-"
        pos = m.end()
        while (pair := _COOKIE_PAIR.match(text, pos)) is not None:
            name, value = pair.group("name"), pair.group("value")
            if not value.startswith("[REDACTED:") and not _placeholder(value) and (
                    (_SESSION_COOKIE.search(name) and len(value) >= 8)
                    or (len(value) >= 20 and _looks_random(value))):
                yield pair.start("value"), pair.end("value"), "session_cookie"
            if set_cookie or not pair.group("more"):
                break                                  # Set-Cookie's other pairs are its attributes
            pos = pair.end()


_DETECTORS: list[Callable[[str], Iterator[Span]]] = [_private_keys, _putty_keys, _labelled_keys, _url_passwords,
                                                      _aws_secrets, _pgpass_lines, _markup, _command_lines,
                                                      _cookies, _assignments]


def _spans(text: str) -> list[Span]:
    """What one round masks: (start, end, kind), in order, never overlapping."""
    found: list[tuple[int, int, int, str]] = []
    for (start, end, kind), priority in _shapes(text):
        found.append((start, -end, priority, kind))
    # the scanners come after the shapes: a token in a URL or an assignment is named by its shape
    base = len(_COMPILED)
    for offset, detector in enumerate(_DETECTORS):
        # a private key block outranks everything inside it
        priority = -1 if detector in (_private_keys, _putty_keys) else base + offset
        found.extend((start, -end, priority, kind) for start, end, kind in detector(text))
    found.sort(key=lambda s: (s[0], s[2], s[1]))
    merged: list[Span] = []
    for start, neg_end, _, kind in found:
        end = -neg_end
        if merged and start < merged[-1][1]:           # overlapping: one mask over both
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end, merged[-1][2])
            continue
        merged.append((start, end, kind))
    return merged


MAX_ROUNDS = 4


def mask(text: str) -> tuple[str, list[str]]:
    """Return the text with secrets masked and the kinds that were masked (in order of first
    appearance, unique). Masking masked text changes nothing: a secret glued to another one
    ('Basic <base64>' then a key) is read as one run the first time and only shows its edge
    once its neighbour is a marker, so rounds repeat until nothing more is found (each round is
    linear; in practice the second finds nothing)."""
    kinds: list[str] = []
    for _ in range(MAX_ROUNDS):
        found = _spans(text)
        if not found:
            break
        out, pos = [], 0
        for start, end, kind in found:
            out += [text[pos:start], f"[REDACTED:{kind}]"]
            pos = end
            if kind not in kinds:
                kinds.append(kind)
        out.append(text[pos:])
        text = "".join(out)
    return text, kinds


def require_masked(text: str, where: str) -> str:
    """For the tables whose callers compute hashes and spans over the text they hand in (captures,
    nodes): the store cannot mask for them, so it refuses what a caller forgot to mask."""
    found = _spans(text)
    if found:
        kinds = ", ".join(dict.fromkeys(kind for _, _, kind in found))
        raise ValueError(f"unmasked text ({kinds}) reached {where}: pass it through secrets.mask first")
    return text


def mask_optional(text: str | None) -> str | None:
    """`mask` for a field that may be absent (a session id, a note, a reason)."""
    return None if text is None else mask(text)[0]


def mask_tree(value: Any) -> tuple[Any, list[str]]:
    """Mask every string inside a JSON-like value (dict values, list items, nested); keys and
    non-strings are kept. For stores that keep structured text (review payloads, audit details)."""
    found: list[str] = []

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            masked, kinds = mask(v)
            found.extend(k for k in kinds if k not in found)
            return masked
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [walk(x) for x in v]
        return v

    return walk(value), found
