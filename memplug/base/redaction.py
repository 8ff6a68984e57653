"""Secrets in text that leaves memplug: key shapes, and credentials people name.

Defence in depth, not a guarantee. Whatever memplug hands to a model (the injected
message, work records, MCP results) or to another machine (sync) goes through
:func:`find_secrets`, and each span it finds is replaced by a marker naming its kind
(``[redacted:password]``) while the rest of the sentence stays. Three families:

* **shapes**: provider keys and tokens with a documented prefix (``ghp_``, ``AKIA``,
  ``sk-ant-`` …), JWTs, private-key blocks, ``user:pass@`` in URLs;
* **named values**: a value that a credential word or name points at — "the staging
  password is hunter2", "the pw for the router is …", "my pin is 4711", "密码是 …",
  ``PGPASSWORD=…``, ``db_password: "…"``, ``--password …``, ``Authorization: …``;
* **command flags** whose value is a credential only for one tool: ``mysql -pX``,
  ``sshpass -p X``, ``docker login -p X``, ``curl -u user:X``, ``aws configure set``.

Text cut to a length before it leaves (a search snippet, a quote, an expand chunk) is
cut where :func:`clear_cut` allows, never between a secret and its name. A password
nobody names ("use hunter2 tomorrow") has no mark to find; the guarantee that text never
reaches the log at all is ``<private>…</private>`` (docs/security.md).

Why a hand-written list rather than ``detect-secrets``: this runs on the pre-step path,
whose whole budget is 25 ms at p95. ``detect-secrets`` 1.5 takes 130–200 ms to import
and ~1.3 ms a line, and its entropy and keyword plugins flag ordinary prose. Every rule
here is gated by a substring test on the lowered text, and every pattern is compiled on
its first use: a 3,000-token message scans in under a millisecond unless it is full of
credentials (``python -m bench.secrets``).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from functools import cache, lru_cache
from typing import Any

from msgspec import Struct


class SecretSpan(Struct, frozen=True, order=True):
    """``text[start:end]`` looks like a secret of ``kind``."""

    start: int
    end: int
    kind: str


class _Rule(Struct, frozen=True):
    kind: str
    # Compiled on first use (:func:`_compiled`): most texts hold no rule's hint, and
    # compiling every rule at import cost each prompt hook process a few milliseconds.
    pattern: str
    # Lower-case substrings one of which must occur for the pattern to be tried at all.
    hints: tuple[str, ...]
    # The capture group that holds the secret (0: the whole match).
    group: int | str = 0
    # A pattern that must match earlier in the same command (the tool a flag belongs to).
    tool: str = ""
    # Matched on the lowered text: a lower-case pattern with a literal start is scanned
    # for far faster than the same pattern under (?i).
    anycase: bool = False


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _rule(
    kind: str,
    pattern: str,
    hints: tuple[str, ...],
    group: int | str = 0,
    tool: str = "",
    anycase: bool = False,
) -> _Rule:
    return _Rule(kind, pattern, hints, group, tool, anycase)


# Boundaries: a token must not be glued to more token characters on either side, or
# a hash or identifier that merely contains a prefix would match.
_B = r"(?<![A-Za-z0-9_\-])"
_E = r"(?![A-Za-z0-9_\-])"
# A command-line value: quoted (the quotes are not part of it), or one shell word.
_V = r"""(?P<v>'[^'\n]{1,200}'|"[^"\n]{1,200}"|[^\s'"|;&<>]{1,200})"""

RULES: tuple[_Rule, ...] = (
    _rule(
        "private_key",
        # With no END line (a key pasted in part): the base64 lines that follow.
        r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]{0,16384}?-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
        r"|(?:\s+[A-Za-z0-9+/=:,\-]{8,})*)",
        ("private key",),
    ),
    _rule(
        "aws_access_key_id",
        # The boundary after the literal: a pattern that starts with a literal is
        # scanned for in C, and "asia" and "sk" are common in prose.
        rf"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])(?<![A-Za-z0-9_\-].{{4}})[A-Z0-9]{{16}}{_E}",
        ("akia", "asia", "abia", "acca", "a3t"),
    ),
    _rule(
        "aws_secret_access_key",
        r"aws[\w\-.]{0,20}?secret[\w\-.]{0,20}?['\"]?\s*[:=]\s*['\"]?"
        r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        ("secret",),
        group=1,
        anycase=True,
    ),
    _rule(
        "github_token",
        rf"{_B}(?:gh[pousr]_[A-Za-z0-9]{{36,255}}|github_pat_\w{{22,255}}){_E}",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    _rule(
        "gitlab_token",
        rf"{_B}gl(?:pat|dt|ptt|rt)-[A-Za-z0-9_\-]{{20,}}{_E}",
        ("glpat-", "gldt-", "glptt-", "glrt-"),
    ),
    _rule("slack_token", rf"{_B}xox[abposre]-[A-Za-z0-9\-]{{10,}}{_E}", ("xox",)),
    _rule(
        "slack_webhook",
        r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/_\-]{20,}",
        ("hooks.slack.com",),
    ),
    _rule(
        "stripe_key",
        rf"{_B}(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{{16,}}{_E}",
        ("sk_live_", "sk_test_", "rk_live_", "rk_test_"),
    ),
    _rule("anthropic_key", rf"{_B}sk-ant-[A-Za-z0-9_\-]{{20,}}{_E}", ("sk-ant-",)),
    _rule("openai_key", rf"{_B}sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{{20,}}{_E}", ("sk-",)),
    _rule("google_api_key", rf"{_B}AIza[0-9A-Za-z_\-]{{35}}{_E}", ("aiza",)),
    _rule("google_oauth_token", rf"{_B}ya29\.[0-9A-Za-z_\-]{{20,}}", ("ya29.",)),
    _rule(
        "jwt",
        rf"{_B}eyJ[A-Za-z0-9_\-]{{8,}}\.eyJ[A-Za-z0-9_\-]{{8,}}\.[A-Za-z0-9_\-]{{8,}}",
        ("eyj",),
    ),
    _rule("huggingface_token", rf"{_B}hf_[A-Za-z0-9]{{30,}}{_E}", ("hf_",)),
    _rule("npm_token", rf"{_B}npm_[A-Za-z0-9]{{36}}{_E}", ("npm_",)),
    _rule("pypi_token", rf"{_B}pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{{50,}}", ("pypi-",)),
    _rule("sendgrid_key", rf"{_B}SG\.[A-Za-z0-9_\-]{{22}}\.[A-Za-z0-9_\-]{{43}}{_E}", ("sg.",)),
    _rule("twilio_key", rf"SK(?<![A-Za-z0-9_\-]..)[0-9a-f]{{32}}{_E}", ("sk",)),
    _rule("shopify_token", rf"{_B}shp(?:at|ca|pa|ss)_[a-fA-F0-9]{{32}}{_E}", ("shp",)),
    _rule("digitalocean_token", rf"{_B}do[oprt]_v1_[a-f0-9]{{64}}{_E}", ("_v1_",)),
    _rule("telegram_bot_token", rf"{_B}\d{{8,10}}:AA[A-Za-z0-9_\-]{{33}}{_E}", (":aa",)),
    _rule("azure_storage_key", r"AccountKey=([A-Za-z0-9+/]{60,}={0,2})", ("accountkey=",), group=1),
    _rule(
        "url_credentials",
        r"://[^\s:/@'\"\[\]]{0,64}:([^\s@/'\"\[\]]{3,128})@",
        ("://",),
        group=1,
    ),
    # A token as the whole user part (git clone https://<token>@github.com/…).
    _rule("url_credentials", r"://([A-Za-z0-9_\-]{20,128})@", ("://",), group=1),
    _rule(
        "authorization_header",
        r"(?:authorization\s*[:=]\s*['\"]?\s*(?:bearer|basic|token)|bearer)\s+"
        r"([A-Za-z0-9._~+/\-]{16,}=*)",
        ("bearer", "authorization"),
        group=1,
        anycase=True,
    ),
    # Flags that carry a password for one tool only (`-p` is a port to psql and docker
    # run): the flag is matched, then the tool looked for earlier in the same command.
    # Not openssl's -passin/-passout (its own rule below), which a command on the same
    # line after a withheld key block would otherwise hand to an earlier mysql.
    _rule(
        "password",
        r"\s-p(?=[^\s-])(?!ass(?:in|out)?\s)" + _V,
        ("mysql", "mariadb"),
        "v",
        r"(?i)\b(?:mysql|mariadb)",
    ),
    _rule("password", r"sshpass\s+-p\s*" + _V, ("sshpass",), group="v"),
    _rule(
        "password",
        r"\s-p\s+" + _V,
        ("login",),
        "v",
        r"(?i)\b(?:docker|podman|nerdctl|buildah|skopeo|oras|az|helm\s+registry)\s+login\b",
    ),
    _rule("password", r"\s-p\s+" + _V, ("mongo",), "v", r"(?i)\bmongo(?:sh|dump|restore)?\b"),
    _rule("password", r"\s-a\s+" + _V, ("redis-cli",), "v", r"(?i)\bredis-cli\b"),
    _rule("password", r"\s-w\s+" + _V, ("ldap",), "v", r"(?i)\bldap\w+"),
    _rule(
        "password",
        r"\s-P\s*" + _V,
        ("sqlcmd", "bcp", "osql", "isql", "zip"),
        "v",
        r"(?i)\b(?:sqlcmd|bcp|osql|isql|zip|unzip)\b",
    ),
    _rule("password", r"\s-[NP]\s+" + _V, ("ssh-keygen",), "v", r"(?i)\bssh-keygen\b"),
    _rule(
        "basic_auth",
        r"\s(?:-u|--user|-U|--proxy-user|-a|--auth)[\s=]+['\"]?[^\s:'\"\[\]]{1,64}:"
        r"(?P<v>[^\s'\"]{1,200})",
        ("curl", "wget", "http", "xh"),
        "v",
        r"(?i)\b(?:curl|wget|xh|httpie|https?(?=\s))\b",
    ),
    _rule("password", r"-pass(?:in|out)?\s+pass:(?P<v>[^\s'\"]{1,200})", ("pass:",), group="v"),
    _rule(
        "password",
        r"htpasswd\s+-\w*b\w*\s+\S+\s+\S+\s+" + _V,
        ("htpasswd",),
        group="v",
    ),
    _rule(
        "password",
        r"echo\s+(?:-n\s+)?" + _V + r"\s*\|\s*(?:sudo\s+-\w*S|[^\n|]{0,200}--password-stdin)",
        ("sudo", "password-stdin"),
        group="v",
    ),
    _rule(
        "secret",
        r"aws\s+configure\s+set\s+(?:[\w.\-]*\.)?"
        r"(?:aws_secret_access_key|aws_session_token)\s+" + _V,
        ("configure",),
        group="v",
    ),
    _rule("secret", r"gh\s+secret\s+set\s+\S+\s+(?:--body|-b)[\s=]+" + _V, ("secret",), "v"),
)


# -- named values: a credential word or name, and the value it points at -------------

# The patterns below are strings, compiled on first use by :func:`_compiled` like the
# rules': a prompt hook whose text names no credential never pays for them.

# Every keyword below contains one of these (lower case): the whole family is skipped
# when none occurs.
_NAME_HINTS = ("pass", "pw", "secret", "token", "key", "auth", "pin", "密码", "口令", "密钥",
               "秘钥", "令牌", "パスワード")  # fmt: skip
# The keyword's alternatives in order, each with the strings one of which it needs. A
# text holding none of a form's strings cannot match it, and the scan is made of the
# other forms alone (:func:`_keyword`): a lone literal ("token") is searched for in C,
# while the whole alternation is tried position by position.
_KEY_OWNERS = ("api", "access", "auth", "secret", "private")
_KEY_WORDS = ("pin码", "pass", "pwd", "pw", "secret", "token", "key", "auth", "pin", "密码",
              "口令", "密钥", "秘钥", "令牌", "パスワード")  # fmt: skip
_KEYWORD_FORMS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"pass[ ](?:phrase|code|word)", ("pass phrase", "pass code", "pass word")),
    (
        rf"(?:{'|'.join(_KEY_OWNERS)})[ ](?:key|token)",
        tuple(f"{owner} {name}" for owner in _KEY_OWNERS for name in ("key", "token")),
    ),
    (r"pin[ ](?:code|number)", ("pin code", "pin number")),
    *((word, (word,)) for word in _KEY_WORDS),
)
_KEYWORD = "|".join(form for form, _ in _KEYWORD_FORMS)
# What a code that opens something opens: "the door code is 4711" names a pin; "the
# error code", "the zip code" and "the area code" do not. Looked for only when one is
# named: in the keyword pattern, their first letters slow every scan by over a quarter.
_CODE_PLACES = ("door", "alarm", "safe", "gate", "garage", "keypad", "lock", "locker",
                "entry", "unlock", "phone", "access")  # fmt: skip
_CODE_HINTS = tuple(f"{place} code" for place in _CODE_PLACES)
_CODE_FORM = rf"(?:{'|'.join(_CODE_PLACES)})[ ]code"
_CODE_KEYWORD = f"{_CODE_FORM}|{_KEYWORD}"
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_PARTS = r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+"
_PASSWORD_PARTS = frozenset({"pwd", "pw", "pass", "pswd", "passphrase", "passcode"})
# Words that end in "pass" without naming one (storepass and keypass do).
_PASS_WORDS = frozenset("bypass compass encompass surpass overpass underpass trespass".split())
_CJK_KINDS = {"密码": "password", "pin码": "pin", "口令": "password", "パスワード": "password",
              "密钥": "secret", "秘钥": "secret", "令牌": "secret"}  # fmt: skip
# Name parts after the keyword that make the name describe the credential rather than
# hold it (PASSWORD_MIN_LENGTH, token_budget, --password-file, secret_name).
_ABOUT = frozenset(
    "min max length len count limit ttl timeout expiry expires expiration expire age "
    "lifetime size file path dir directory env var name names type field label input form "
    "prompt policy rule rules regex pattern hash hashed hasher hashers digest salt rounds "
    "algorithm algo url uri endpoint header id enabled required reset manager store helper "
    "provider command cmd stdin source location ref arn version strength hint placeholder "
    "changed updated created expired usage budget index kind format method mode prefix "
    "suffix cache scope scopes audience issuer leeway interval validator validators "
    "validation chars bytes bits encoding history complexity check verify backend class "
    "module plugin field fields error errors".split()
)
# Name parts before it that make the name an operation or a count (get_password,
# check_password, max_token, next_token: a paging cursor).
_NOT_HELD = frozenset(
    "get set check verify validate hash reset forgot forget change update is has show toggle "
    "generate read ask require requires encrypt decrypt encode decode compare match save "
    "load fetch retrieve rotate max min num total next page continuation cursor csrf xsrf "
    "input output prompt completion reasoning special bos eos pad unk sep cls mask start "
    "end stop count no without bypass".split()
)
# A value that is only a pointer at the secret, a placeholder, or the code that reads it.
_PLACEHOLDERS = frozenset(
    "password passwd pass pwd secret token changeme changeit redacted example placeholder "
    "dummy none null nil true false undefined empty required optional string str bytes int "
    "text sample hidden masked unset notset todo tbd value secretstr secretbytes any number "
    "boolean bool object dict list".split()
)
_PLACEHOLDER_PREFIXES = ("your", "changeme", "change_me", "change-me", "example", "dummy",
                         "placeholder", "redacted", "fake", "replace", "insert", "enter",
                         "todo", "xxx", "***")  # fmt: skip
_FILE_SUFFIXES = (".pem", ".key", ".json", ".txt", ".yaml", ".yml", ".p12", ".pfx",
                  ".crt", ".env", ".ini", ".cfg", ".conf", ".gpg", ".asc", ".ppk", ".pub",
                  ".toml")  # fmt: skip
# Words that follow "the password is" / "password:" in prose about passwords, not in a
# statement of one ("the password is required", "password: too short").
_PROSE_WORDS = frozenset(
    "not no the a an this that these those it its my your our their his her in on at to for "
    "of from with without by as also still now just only always never already required "
    "optional correct incorrect wrong right invalid valid empty blank missing set stored "
    "saved hashed encrypted salted masked hidden shown visible expired old new same "
    "different weak strong short long too very case sensitive mandatory needed necessary "
    "reset changed updated rotated revoked generated sent emailed printed logged leaked "
    "compromised exposed public private secret unknown known available unavailable there "
    "here what which where how why whatever something anything nothing everything fine ok "
    "okay good bad great ready done used being been be and or but then so should must will "
    "would can could may might please see check ask find get use enter type given provided "
    "handled managed kept located defined configured read written passed checked verified "
    "validated compared rejected accepted all both each every any some one two three four "
    "five six seven eight nine ten first last next unique random secure insecure plain "
    "plaintext cleartext default temporary hardcoded literally actually probably definitely "
    "exactly simply basically either neither none null nil true false yes "
    "whose whom who when while because since until unless if else otherwise via per "
    "into onto over under about above below between through during before after again "
    "back away out up down off more less most least much many few lot lots enough quite "
    "rather really fairly pretty kind sort part like unlike than such own other another "
    "somewhere nowhere anywhere everywhere stuff thing things ones field form box "
    "prompt dialog screen page link email file env vault manager keychain keyring "
    "database server account user admin login system app application cluster service "
    "similar identical easy hard simple complex obvious guessable length characters "
    "chars digits letters symbols".split()
)
_WORD_ENDINGS = ("ed", "ing", "ly", "tion", "sion", "ment", "ness", "able", "ible", "ful",
                 "less", "ous", "ive", "ity", "ize", "ise", "ance", "ence")  # fmt: skip

_ASSIGN = r"""['"]?[ \t]*(?P<sep>:=|=>|==?|:(?![:/\\])|：|->)[ \t]*"""
_PROSE = (
    # "for the staging box", but not across another credential's name.
    r"(?i)(?:[ \t]+(?:for|of|to|on|at|in)"
    r"(?:[ \t]+(?![^\s,;:!?=]*(?:pass|pw|pin|secret|token))[^\s,;:!?=]{0,39}"
    r"[^\s,;:!?=.]){1,4}?)?"
    r"(?:[ \t]*\([^()\n]{1,40}\))?"
    r"(?:[ \t]*[:：=]|[ \t]+(?:(?:is|was|are|will[ \t]+be|has[ \t]+been|became)"
    r"(?:[ \t]+(?:now|still|currently|just))?(?:[ \t]+(?:set|changed|reset|updated))?"
    r"(?:[ \t]+to)?|(?:set|changed|reset|updated)[ \t]+to)(?!\w)"
    # "The root password? It's hunter2": a question the next sentence answers.
    r"|[ \t]*\?[ \t]+(?:it[ \t]+(?:is|was)|it['’]?s)(?!\w))[ \t]*"
)
_CJK_SEP = r"[ \t]*(?:(?:是|为|為|は|：|:|=|改成|改为|设为|设置为|换成)[ \t]*){0,2}(?=[!-~])"
_FLAG_NAME = r"--?[a-z][a-z0-9]*(?:[-_.][a-z0-9]+)*"
_FLAG_SEP = r"[ \t]*=[ \t]*|[ \t]+"
_BARE = r"[ \t]+"
# "set the password to …": the value after "to" counts only when it looks like one.
_TO = r"(?i)[ \t]+to[ \t]+"
_PASS_IS = r"(?i)[ \t]+(?:is|was)[ \t]+"
_SCHEME = r"(?i)(?:bearer|basic|token|digest|bot|oauth|jwt|apikey|negotiate)[ \t]+"
_VALUE = (
    r"""(?P<v>"[^"\n]{1,200}"|'[^'\n]{1,200}'|`[^`\n]{1,200}`|“[^”\n]{1,200}”"""
    # Unquoted, a value stops at a backslash: text holding JSON-escaped code (\n).
    r"""|[^\s"'`“”\\]{1,200})"""
)
_ASCII_VALUE = r"(?P<v>[!-\[\]-~]{1,200})"
_CLAUSE_END = (
    r"[ \t]*(?:$|[\n,.;:!?)\]}\"'”，。；！？]|(?:and|but|so|then|or|please|thanks)\b|[-–—]\s)"
)
_DIGIT = r"\d"
_LETTER = r"[^\W\d_]"
_SYMBOL = r"[^\w.\-]"
_ENV_NAME = r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"
_DOTTED = r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+"
_IDENTIFIER = r"[A-Za-z_]+"
_HELD_WORDS = ("pass", "pwd", "secret", "token", "key")
# "hunter2 is the password", "use hunter2 as the pin": the words between a value that
# comes first and the name.
_BEFORE = (
    r"(?i)[ \t]+(?:(?:is|was)[ \t]+(?:the|my|our|your)|as(?:[ \t]+(?:the|my|our|your))?)"
    r"(?:[ \t]+[\w-]+){0,2}[ \t]+"
)
_WORD = r"[^\s\"']+"


# A pure function of one identifier, and the names a text uses recur (TOKEN, api_key).
@lru_cache(maxsize=4096)
def _name_kind(name: str) -> str | None:
    """The kind of credential an identifier, flag, header or word names, if it holds one:
    ``PGPASSWORD`` and ``dbPassword`` do, ``PASSWORD_MIN_LENGTH`` and ``get_password``
    do not."""
    if name in ("PWD", "OLDPWD"):  # the shell's working directory
        return None
    parts = [p.lower() for p in _compiled(_PARTS).findall(name)]
    for i, part in enumerate(parts):
        after = parts[i + 1] if i + 1 < len(parts) else ""
        if (
            "password" in part
            or "passwd" in part
            or part in _PASSWORD_PARTS
            or (part.endswith("pass") and part not in _PASS_WORDS)
        ):
            kind = "password"
        elif part in ("pin", "pincode") or (
            part == "code" and i > 0 and parts[i - 1] in _CODE_PLACES
        ):
            kind = "pin"
        elif part == "authorization":
            kind = "authorization_header"
        elif part.endswith(("secret", "token")) or part in ("apikey", "privatekey"):
            kind = "secret"
        elif part in ("api", "private", "access", "auth", "signing", "encryption", "master"):
            if after != "key":
                continue
            kind, i = "secret", i + 1
        else:
            continue
        if _ABOUT.intersection(parts[i + 1 :]) or _NOT_HELD.intersection(parts[:i]):
            return None
        return kind
    return None


def _keyword(text: str, lowered: str, present: set[str], codes: bool) -> str:
    """The keyword pattern less the forms ``lowered`` holds nothing of: it finds the
    same names in the same places. A string that is a hint is known present or not
    from ``present``; another is looked for only when every name hint in it is present.
    When lowering moved offsets the scan is of ``text`` under (?i), where other letters
    match too (``ſ`` matches ``s``): the whole pattern, then."""
    if len(lowered) != len(text):
        return _CODE_KEYWORD if codes else _KEYWORD
    held = present.intersection(_HINT_NEEDS)
    held.update(need for need, hints in _NEED_HINTS.items() if hints <= present and need in lowered)
    return _keyword_of(frozenset(held), codes)


@lru_cache(maxsize=256)
def _keyword_of(held: frozenset[str], codes: bool) -> str:
    forms = [_CODE_FORM] if codes else []
    forms.extend(form for form, needs in _KEYWORD_FORMS if not held.isdisjoint(needs))
    # Nothing left: a pattern that matches nowhere (an empty one would match everywhere).
    return "|".join(forms) or "(?!)"


def _named_values(text: str, lowered: str, present: set[str], codes: bool) -> Iterator[_Found]:
    done = 0
    for hit in _scan(_keyword(text, lowered, present, codes), text, lowered):
        if hit.start() < done:
            continue
        start, end = hit.start(), hit.end()
        if " " not in hit.group() and hit.group().isascii():
            while start > 0 and end - start < 64 and text[start - 1] in _NAME_CHARS:
                start -= 1
            while end < len(text) and end - start < 128 and text[end] in _NAME_CHARS:
                end += 1
            while end > start and text[end - 1] in ".-":
                end -= 1
            while start < end and text[start] == ".":
                start += 1
        done = max(end, hit.end())
        name = text[start:end]
        kind = _CJK_KINDS.get(name.lower()) or _name_kind(name)
        if kind is None:
            continue
        # Both sides: "hunter2 is the password, hunter3 the pin" names one of each.
        before = _value_before(text, start, name, kind)
        if before is not None:
            yield before, before.start, end
        after = _value_after(text, end, name, kind)
        if after is not None:
            done = max(done, after.end)
            # A quoted value is found only with its closing quote: that belongs to it.
            closing = after.end < len(text) and text[after.end] in "\"'`”"
            yield after, start, max(after.end + closing, _clause_ends(text, after, name) or 0)


def _value_after(text: str, at: int, name: str, kind: str) -> SecretSpan | None:
    """The value that follows a credential name, tried in the forms a name takes: a flag,
    an assignment, a sentence ("the pw for staging is …"), or the bare next word."""
    if name.lower() in _CJK_KINDS:
        forms = [(_CJK_SEP, "cjk")]
    elif name.startswith("-"):
        # A flag's name is lower case (-storepass, --db-password); -pS3cretPw is a
        # password glued to its flag, which the tool's own rule finds.
        if not _compiled(_FLAG_NAME).fullmatch(name):
            return None
        forms = [(_FLAG_SEP, "flag")]
    else:
        forms = [(_ASSIGN, "assign")]
        if name.lower() == "pass":
            # A verb and a test status (PASS: test_x) far more often than a name: only
            # "the db pass is pa55word", with a value shaped like one.
            forms.append((_PASS_IS, "bare"))
        elif name.isalpha() or " " in name:
            if kind in ("password", "pin"):
                forms.append((_TO, "bare"))
            forms.append((_PROSE, "prose"))
            if kind in ("password", "pin"):
                forms.append((_BARE, "bare"))
    for sep, form in forms:
        found = _compiled(sep).match(text, at)
        if found is None:
            continue
        policy = form
        if form == "assign":
            spaced = found.group() != found.group().strip()
            policy = {":": "colon", "：": "colon", "=": "code" if spaced else "env"}.get(
                found.group("sep"), "code"
            )
            if policy == "colon" and name.lower() == "pass":
                policy = "quoted"
        pos = found.end()
        if kind == "authorization_header" and (scheme := _compiled(_SCHEME).match(text, pos)):
            pos = scheme.end()
        value = _compiled(_ASCII_VALUE if form == "cjk" else _VALUE).match(text, pos)
        if value is None:
            continue
        span = _accepted(text, value.start("v"), value.end("v"), kind, policy)
        if span is not None and _clause_ends(text, span, name) is not None:
            return span
    return None


def _clause_ends(text: str, span: SecretSpan, name: str) -> int | None:
    """Where the context that makes ``span`` a secret ends: a code's number must end its
    clause ("this thread-safe code is 1000 lines" is no pin), up to the word that ends
    it ("please"), which a cut must not split off either. None: it is no secret."""
    if name.lower().partition(" ")[0] not in _CODE_PLACES:
        return span.end
    end = _compiled(_CLAUSE_END).match(text, span.end)
    return None if end is None else end.end()


def _value_before(text: str, at: int, name: str, kind: str) -> SecretSpan | None:
    # "4711 is the door code": of the names of two words, only a code's comes after.
    spoken = name.replace(" ", "") if kind == "pin" else name
    if kind not in ("password", "pin") or not spoken.isalpha() or name.lower() == "pass":
        return None
    head = text[max(0, at - 48) : at].lower()
    if " is " not in head and " was " not in head and " as " not in head:
        return None
    words = list(_compiled(_WORD).finditer(text, max(0, at - 120), at))
    for word in reversed(words[-5:-1]):
        if _compiled(_BEFORE).fullmatch(text, word.end(), at):
            return _accepted(text, word.start(), word.end(), kind, "bare")
    return None


def _accepted(text: str, start: int, end: int, kind: str, policy: str) -> SecretSpan | None:
    """The span of the credential in ``text[start:end]`` (quotes, a sentence's closing
    punctuation and an authorization scheme taken off), if it can be one under ``policy``."""
    # Backticks mark code, not a quoted value: the checks for code still apply.
    quoted = text[start] in "\"'“" and end - start >= 2
    if quoted or (text[start] == "`" and end - start >= 2):
        start, end = start + 1, end - 1
        kept = end
    else:
        # The value is judged without any punctuation after it ("is hunter2."), but
        # what may end it stays in the span: withholding a sentence's "!" costs
        # nothing, leaving a password's last character out leaks it ("Winter2024!").
        kept = end
        while kept > start and text[kept - 1] in _CLOSING.get(policy, _PROSE_CLOSING):
            kept -= 1
        end = kept
        while end > start and text[end - 1] in _CLOSING["cjk" if policy == "cjk" else ""]:
            end -= 1
    if kind == "authorization_header" and (scheme := _compiled(_SCHEME).match(text, start, end)):
        start = scheme.end()
    if _plausible(text[start:end], kind, policy, quoted, text[end : end + 12]):
        return SecretSpan(start, kept, kind)
    return None


# What can follow an unquoted value without being part of it. In an assignment or a
# flag the value is one shell word: only a closing bracket, a quote or a sentence's stop
# is not its own (PASSWORD=Winter2024!, --password=Secr3t?). In prose a "?" asks ("is
# it hunter2?") and "*" closes Markdown bold. After 密码是, an ASCII "!" is the
# password's; a sentence there ends in "！".
_STOPS = ".,;:)]}>'\"”，。；"
_PROSE_CLOSING = _STOPS + "?*！？"
_CLOSING = dict.fromkeys(("env", "flag", "code", "colon", "quoted"), _STOPS) | {
    "cjk": "，。；！？",
    "": _PROSE_CLOSING + "!",
}


def _plausible(value: str, kind: str, policy: str, quoted: bool, after: str) -> bool:
    if not 4 <= len(value) <= 200 or _pointer(value, quoted) or (policy == "quoted" and not quoted):
        return False
    if kind == "pin":
        return value.isascii() and value.isdigit() and len(value) <= 12
    has_digit = _compiled(_DIGIT).search(value) is not None
    has_alpha = _compiled(_LETTER).search(value) is not None
    strong = (has_digit and has_alpha) or _compiled(_SYMBOL).search(value) is not None
    if kind == "secret":
        # Keys and tokens are long and random: a count or a word after "token" is not one.
        return has_alpha and (strong or (len(value) >= 8 and (quoted or policy in _VALUE_SLOTS)))
    if strong or value.isdigit():
        return True
    if policy == "bare" or (policy == "code" and not quoted) or "_" in value:
        return False
    # One word: a password when the name's slot holds it, or the sentence ends on it.
    lowered = value.lower()
    if lowered in _PROSE_WORDS or lowered.endswith(_WORD_ENDINGS):
        return False
    return quoted or policy in _VALUE_SLOTS or bool(_compiled(_CLAUSE_END).match(after))


# Forms whose next word can only be the value: NAME=…, --flag …, 密码是 ….
_VALUE_SLOTS = frozenset({"env", "flag", "cjk"})


def _pointer(value: str, quoted: bool) -> bool:
    """``value`` names where the secret is, or stands in for one: a variable, a
    placeholder, a mask, a URL, a file, or the code that reads it."""
    lowered = value.lower()
    if value[0] in "$%<{[(*#&@!\\" or "://" in value or "{{" in value or "xxxx" in lowered:
        return True
    if lowered in _PLACEHOLDERS or lowered.startswith(_PLACEHOLDER_PREFIXES):
        return True
    if not set(lowered) - set("*x•●·._-#?"):
        return True
    if quoted:
        return False
    return bool(
        "(" in value
        or ")" in value
        or "[" in value
        or value.startswith(("/", "~/", "./", "../"))
        or lowered.endswith(_FILE_SUFFIXES)
        # settings.API_KEY, config.db.password; not hvs.CAESIJ9x8y7z6 (a Vault token).
        or (_compiled(_DOTTED).fullmatch(value) is not None and not _mixed_segment(value))
        # A variable named after what it holds (db_pass, dbPassword, github_token).
        or (
            _compiled(_IDENTIFIER).fullmatch(value) is not None
            and ("_" in value or not value[1:].islower())
            and any(h in lowered for h in _HELD_WORDS)
        )
    )


def _scan(pattern: str, text: str, lowered: str) -> Iterator[re.Match[str]]:
    """Matches of a lower-case ``pattern`` in ``text``, any case: found in ``lowered``
    when lowering kept every offset (it nearly always does), else under (?i)."""
    if len(lowered) == len(text):
        return _compiled(pattern).finditer(lowered)
    return _compiled("(?i)" + pattern).finditer(text)


def _tool_at(text: str, at: int, tool: str) -> int:
    """Where ``tool`` is named in the command that ``text[at]`` belongs to (the same line
    and pipeline stage, at most 300 characters back), or -1."""
    stage = max(text.rfind(c, max(0, at - 300), at) for c in "\n|;&") + 1
    # The flag patterns start at the blank before the flag: it ends the tool's name.
    named = _compiled(tool).search(text, max(stage, at - 300), at + 1)
    return -1 if named is None else named.start()


def _mixed_segment(value: str) -> bool:
    """A part of a dotted value looks generated (a Vault ``hvs.CAES…`` token), not like
    a name (``env.AUTH0_CLIENT_SECRET``)."""
    return any(
        _compiled(_DIGIT).search(part) is not None
        and _compiled(_LETTER).search(part) is not None
        and not _compiled(_ENV_NAME).fullmatch(part)
        for part in value.split(".")
    )


# Every hint, tested once per text.
_HINTS = frozenset(_NAME_HINTS).union(*(rule.hints for rule in RULES))
# The keyword strings that are hints, and per one that is not, the name hints it holds
# (all of which a text holding it holds too).
_HINT_NEEDS = frozenset(need for _, needs in _KEYWORD_FORMS for need in needs) & _HINTS
_NEED_HINTS = {
    need: frozenset(hint for hint in _NAME_HINTS if hint in need)
    for _, needs in _KEYWORD_FORMS
    for need in needs
    if need not in _HINTS
}
# The rules (by position, to keep their order) that each hint lets be tried.
_RULES_BY_HINT: dict[str, tuple[int, ...]] = {
    hint: tuple(i for i, rule in enumerate(RULES) if hint in rule.hints) for hint in _HINTS
}
# Hints that hold no blank space can only occur inside one of a text's blank-separated
# words: those are looked for in each distinct word once (:func:`_present`).
_INNER_HINTS = tuple(sorted(hint for hint in _HINTS if hint.split() == [hint]))
_SPANNING_HINTS = tuple(sorted(_HINTS.difference(_INNER_HINTS)))
# Words seen with no hint in them, and the hints of those seen with some: most words
# of commands and messages recur, and a word's hints are then one set operation away.
_HINTLESS: set[str] = set()
_WORD_HINTS: dict[str, frozenset[str]] = {}
# How many words each remembers: a bound on what a stream of random tokens can hold.
_WORDS_KEPT = 50_000
# New words learned per text: together they cost about one scan of a short command.
_LEARN = 16


def _present(lowered: str) -> set[str]:
    """The hints ``lowered`` holds: ``{h for h in _HINTS if h in lowered}``."""
    present = {hint for hint in _SPANNING_HINTS if hint in lowered}
    new = []
    for word in set(lowered.split()).difference(_HINTLESS):
        hints = _WORD_HINTS.get(word)
        if hints is None:
            new.append(word)
        else:
            present.update(hints)
    # Learning a word costs about what scanning 25 characters for every hint does: a
    # text with more new words than that (every text, in a fresh hook process) is
    # scanned whole, and only a few of its words are learned.
    for word in new[:_LEARN]:
        hints = frozenset(hint for hint in _INNER_HINTS if hint in word)
        if len(_HINTLESS) >= _WORDS_KEPT or len(_WORD_HINTS) >= _WORDS_KEPT:
            _HINTLESS.clear()
            _WORD_HINTS.clear()
        if hints:
            _WORD_HINTS[word] = hints
        else:
            _HINTLESS.add(word)
        present.update(hints)
    if len(new) > _LEARN:
        return {hint for hint in _HINTS if hint in lowered}
    return present


# -- the scan ---------------------------------------------------------------------------


def find_secrets(text: str) -> list[SecretSpan]:
    """Every span of ``text`` that looks like a credential, sorted, overlaps merged.

    Linear in ``len(text)`` for each rule whose hint occurs; nothing backtracks beyond
    a bounded quantifier."""
    return _merge([found[0] for found in _find(text)])


# A secret, and the stretch of text that makes it one: the value with its name, the
# words between them, or the tool its flag belongs to.
_Found = tuple[SecretSpan, int, int]


def _find(text: str) -> list[_Found]:
    if not text:
        return []
    lowered = text.lower()
    present = _present(lowered)
    # One test for the twelve code names in the texts that name none (nearly all).
    codes = " code" in lowered and any(hint in lowered for hint in _CODE_HINTS)
    if not present and not codes:
        return []
    found: list[_Found] = []
    for index in sorted({i for hint in present for i in _RULES_BY_HINT[hint]}):
        rule = RULES[index]
        if rule.anycase:
            matches = _scan(rule.pattern, text, lowered)
        else:
            matches = _compiled(rule.pattern).finditer(text)
        for match in matches:
            start, end = match.span(rule.group)
            reach = _tool_at(text, match.start(), rule.tool) if rule.tool else match.start()
            if reach < 0:
                continue
            if text[start] in "'\"" and end - start >= 2:
                start, end = start + 1, end - 1
            if rule.group and _pointer(text[start:end], quoted=False):
                continue
            found.append((SecretSpan(start, end, rule.kind), reach, match.end()))
    if codes or not present.isdisjoint(_NAME_HINTS):
        found.extend(_named_values(text, lowered, present, codes))
    return found


def secret_lines(lines: Sequence[str]) -> set[int]:
    """Indexes of the ``lines`` that hold a secret, from one scan of their joined text
    (a scan per line repeats the hint tests for each)."""
    found: set[int] = set()
    spans = find_secrets("\n".join(lines))
    if not spans:
        return found
    starts, offset = [], 0
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    for span in spans:
        first = bisect_right(starts, span.start) - 1
        last = bisect_right(starts, max(span.start, span.end - 1)) - 1
        found.update(range(first, last + 1))
    return found


def redact_secrets(text: str, marker: str = "[redacted]", *, named: bool = False) -> str:
    """``text`` with every secret span replaced by ``marker`` (for logs and messages);
    ``named`` makes each marker name the kind it withheld (``[redacted:password]``)."""
    return _settled(text, None if named else marker)[0]


# How far around a cut a secret that it splits can reach: a name and the words after it
# before the value, and the value itself.
_REACH_BEFORE = 400
_REACH_AFTER = 256


def clear_cut(text: str, start: int, end: int) -> tuple[int, int]:
    """``start`` and ``end`` moved so that ``text[start:end]`` cuts no secret, nor what
    makes it one, in two: an edge inside a secret or between it and its name ("the
    password is | hunter2") moves past both (a start to their end, an end to their
    start), so a window holds each secret whole and named — to be withheld — or not at
    all. Only the text near each edge is scanned; a secret longer than the reach (a
    private key block) can still be cut."""
    if 0 < start < len(text):
        start = _edge(text, start, to_end=True)
    if start < end < len(text):
        end = max(start, _edge(text, end, to_end=False))
    return start, end


def _edge(text: str, at: int, *, to_end: bool) -> int:
    low = max(0, at - _REACH_BEFORE)
    moved = at
    for span, reach_start, reach_end in _find(text[low : at + _REACH_AFTER]):
        first, last = min(span.start, reach_start) + low, max(span.end, reach_end) + low
        if first < at < last:
            moved = max(moved, last) if to_end else min(moved, first)
    return moved


def withhold(text: str) -> tuple[str, tuple[str, ...]]:
    """``text`` with each secret replaced by a marker naming its kind, and the kinds
    withheld (sorted, once each): what leaves memplug for a model."""
    text, kinds = _settled(text, None)
    return text, tuple(sorted(kinds))


# A value a wider candidate overlapped can be found only once that candidate is
# replaced ("passcode to unlock 口令是 X"): scanning again until nothing is found makes
# what leaves hold nothing a second scan would withhold. Real text settles in one pass.
_MAX_PASSES = 4


def _settled(text: str, marker: str | None) -> tuple[str, set[str]]:
    kinds: set[str] = set()
    for _ in range(_MAX_PASSES):
        spans = find_secrets(text)
        if not spans:
            break
        kinds.update(span.kind for span in spans)
        text = _replace(text, spans, marker)
    return text, kinds


def _replace(text: str, spans: list[SecretSpan], marker: str | None) -> str:
    out, last = [], 0
    for span in spans:
        out.append(text[last : span.start])
        out.append(f"[redacted:{span.kind}]" if marker is None else marker)
        last = span.end
    out.append(text[last:])
    return "".join(out)


# Shapes that a specific rule may also match: the specific kind names the span.
_GENERIC = frozenset(
    {"password", "pin", "secret", "basic_auth", "authorization_header", "url_credentials"}
)


def _merge(spans: list[SecretSpan]) -> list[SecretSpan]:
    spans.sort(key=lambda s: (s.start, s.kind in _GENERIC, -s.end))
    merged: list[SecretSpan] = []
    for span in spans:
        if merged and span.start < merged[-1].end:
            last = merged[-1]
            if span.end > last.end:
                merged[-1] = SecretSpan(last.start, span.end, last.kind)
            continue
        merged.append(span)
    return merged


# Keys whose values are call tokens: opaque, and mangling one would break paging.
CALL_TOKEN_KEYS: frozenset[str] = frozenset({"next", "follow"})


def redact_tree(
    value: Any, *, keep: frozenset[str] = CALL_TOKEN_KEYS, key: str | None = None
) -> Any:
    """``value`` (JSON-shaped) with every secret in its strings replaced by a marker
    naming its kind; the strings under ``keep`` keys (call tokens) pass unchanged."""
    if isinstance(value, str):
        return value if key in keep else redact_secrets(value, named=True)
    if isinstance(value, dict):
        return {k: redact_tree(v, keep=keep, key=k) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_tree(v, keep=keep, key=key) for v in value]
    return value
