"""The secret detector (memplug.base.redaction): the labelled corpus both ways, each family of
rules, and its bounds. Each exit that text leaves memplug by: test_secret_exits.py."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.secrets import Labelled, caught, load_corpus, score
from memplug.base.redaction import (
    _CODE_HINTS,
    _CODE_KEYWORD,
    _HINTS,
    _KEYWORD,
    _KEYWORD_FORMS,
    _keyword,
    _present,
    _scan,
    clear_cut,
    find_secrets,
    redact_secrets,
    secret_lines,
    withhold,
)

CORPUS = load_corpus()

# The four statements of issue 29, and what each leaves of its sentence.
PROBES = [
    (
        "the staging db password is hunter2, use it for the migration",
        "the staging db password is [redacted:password], use it for the migration",
    ),
    ("the password is hunter2", "the password is [redacted:password]"),
    ("password: hunter3", "password: [redacted:password]"),
    (
        "PGPASSWORD=hunter2 psql -h db.internal -U admin app",
        "PGPASSWORD=[redacted:password] psql -h db.internal -U admin app",
    ),
]


# -- the labelled corpus -------------------------------------------------------------


def test_the_corpus_is_large_labelled_both_ways_and_its_labels_are_in_their_text() -> None:
    secrets = [row for row in CORPUS if row.secrets]
    lookalikes = [row for row in CORPUS if not row.secrets]
    assert len(CORPUS) >= 300 and len(secrets) >= 150 and len(lookalikes) >= 150
    assert all(all(s in row.text for s in row.secrets) for row in secrets)
    assert len({row.text for row in CORPUS}) == len(CORPUS)


def test_recall_on_the_corpus_is_at_least_95_percent() -> None:
    result = score(CORPUS)
    assert result.recall >= 0.95, [row.text for row in result.missed]


def test_false_redactions_on_the_corpus_are_at_most_1_percent() -> None:
    result = score(CORPUS)
    assert result.false_rate <= 0.01, [row.text for row in result.redacted]


def test_a_row_counts_as_caught_only_when_every_labelled_value_is_gone() -> None:
    row = next(r for r in CORPUS if len(r.secrets) == 2)
    assert caught(row)
    assert not caught(type(row)(row.text + " and hunter2", [*row.secrets, "hunter2"], "x"))


# -- named in words, assignments, flags ----------------------------------------------


@pytest.mark.parametrize(("text", "expected"), PROBES)
def test_the_four_probes_keep_their_sentence_without_the_value(text: str, expected: str) -> None:
    assert redact_secrets(text, named=True) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("the pw for the router is swordfish.", "the pw for the router is [redacted:password]."),
        ("my pin is 4711", "my pin is [redacted:pin]"),
        ("passcode 4711", "passcode [redacted:password]"),
        ("the passphrase is 'a b c d'", "the passphrase is '[redacted:password]'"),
        ("hunter2 is the password", "[redacted:password] is the password"),
        ("密码是 abc123，别外传", "密码是 [redacted:password]，别外传"),
        ("数据库的密码为：Qw3rty!", "数据库的密码为：[redacted:password]"),
        ("请把密码改成 NewPass1。", "请把密码改成 [redacted:password]。"),
        ("パスワードは himitsu123 です", "パスワードは [redacted:password] です"),
        ('{"password": "Adm1nPw"}', '{"password": "[redacted:password]"}'),
        ("mysql -u root -pS3cret app", "mysql -u root -p[redacted:password] app"),
        ("curl -u admin:hunter2 https://x", "curl -u admin:[redacted:basic_auth] https://x"),
        (
            'curl -H "Authorization: Bearer abc123xyz" https://x',
            'curl -H "Authorization: Bearer [redacted:authorization_header]" https://x',
        ),
        ("sshpass -p 'pw 1' ssh h", "sshpass -p '[redacted:password]' ssh h"),
        (
            "docker login -u bob -p dockerpw1 r.io",
            "docker login -u bob -p [redacted:password] r.io",
        ),
        (
            "aws configure set aws_secret_access_key abcdEFGH1234",
            "aws configure set aws_secret_access_key [redacted:secret]",
        ),
        (
            "git clone https://bob:ghpass99@github.com/a/b.git",
            "git clone https://bob:[redacted:url_credentials]@github.com/a/b.git",
        ),
        ("echo hunter2 | sudo -S true", "echo [redacted:password] | sudo -S true"),
    ],
)
def test_the_value_is_withheld_and_the_rest_kept(text: str, expected: str) -> None:
    assert redact_secrets(text, named=True) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("export DB_PASSWORD=Winter2024!", "export DB_PASSWORD=[redacted]"),
        ("mysql --password=Secr3t! -u root", "mysql --password=[redacted] -u root"),
        ("PGPASSWORD=Pg9pw? psql app", "PGPASSWORD=[redacted] psql app"),
        ("REDIS_PASSWORD=R3dis*#$%& redis-server", "REDIS_PASSWORD=[redacted] redis-server"),
        ("db_password: Qu4rtz!", "db_password: [redacted]"),
        ("set PASSWORD=Windows1!.", "set PASSWORD=[redacted]."),
        ("the password is hunter2.", "the password is [redacted]."),
        ("the password is hunter2, then", "the password is [redacted], then"),
        ("is the password hunter2?", "is the password [redacted]?"),
        ("the new password is Winter2025!", "the new password is [redacted]"),
    ],
)
def test_the_last_character_of_a_value_is_its_own_a_sentence_stop_is_not(
    text: str, expected: str
) -> None:
    """A value's trailing punctuation is part of it in an assignment or a flag (and "!"
    in prose: withholding an exclamation costs nothing, leaving it out leaks a
    character); the period or comma that ends a sentence is not."""
    assert redact_secrets(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The root password? It's hunter2", "The root password? It's [redacted:password]"),
        ("the door code is 4711", "the door code is [redacted:pin]"),
        ("The alarm code: 0451.", "The alarm code: [redacted:pin]."),
        ("set the gate code to 2580", "set the gate code to [redacted:pin]"),
        ("4711 is the door code", "[redacted:pin] is the door code"),
        ("the access token is tok_9f8e7d6c5b4a", "the access token is [redacted:secret]"),
    ],
)
def test_a_question_answered_and_a_code_that_opens_something(text: str, expected: str) -> None:
    assert redact_secrets(text, named=True) == expected


@pytest.mark.parametrize(
    "text",
    ["the error code is 4711", "the zip code is 10001", "the door code is on the fridge",
     "the exit code was 137", "this thread-safe code is 1000 lines long",
     "Forgot your password? It's easy to reset.",
     "The password? It's the same as before.", "the password isn't set"],
)  # fmt: skip
def test_other_codes_and_questions_about_a_password_pass(text: str) -> None:
    assert find_secrets(text) == []


@pytest.mark.parametrize(
    "name",
    ["PGPASSWORD", "MYSQL_PWD", "DB_PASSWORD", "dbPassword", "x-api-key", "client_secret",
     "GITHUB_TOKEN", "LDAP_BIND_PASSWD", "SECRET_KEY", "PRIVATE_KEY", "DB_PASS"],
)  # fmt: skip
def test_a_credential_name_with_any_prefix_holds_its_value(name: str) -> None:
    assert [s.kind for s in find_secrets(f"{name}=Xy7!pw99 next")] != []
    assert "Xy7!pw99" not in redact_secrets(f"{name}=Xy7!pw99 next")


@pytest.mark.parametrize(
    "name",
    ["PASSWORD_MIN_LENGTH", "TOKEN_BUDGET", "PWD", "password_file", "get_password", "max_token",
     "next_token", "AUTH_TOKEN_TTL", "tokenizer", "bypass", "monkey"],
)  # fmt: skip
def test_a_name_about_a_credential_does_not_hold_one(name: str) -> None:
    assert find_secrets(f"{name}=Xy7!pw99") == []


@pytest.mark.parametrize(
    "text",
    ["psql -h db -p 5432 app", "docker run -p 8080:80 nginx", "ssh -p 2222 host",
     "mysql -u root -p", "docker run -u 1000:1000 app", "PGPASSWORD=$DB_PASSWORD psql",
     "password: ********", "password: {{ vault_pw }}", "the password is required",
     "password = os.environ['DB_PASSWORD']", "--- PASS: TestLogin (0.00s)",
     "client_secret: env.AUTH0_CLIENT_SECRET,", "2. **Check if tests pass first** now",
     "It could just pass `agent.Name()`.", "5.  **Calculate Token Usage**:",
     '"content":"  apiKey: config.oracle.apiKey,\\n  model: string;\\n}"',
     '"Authorization" => "Bearer #{token}",', "Authorization: `Bearer ${accessToken}`,"],
)  # fmt: skip
def test_flags_of_other_tools_and_pointers_at_a_secret_pass(text: str) -> None:
    """Also what real Claude Code sessions hold that an early version redacted."""
    assert find_secrets(text) == []


# -- known shapes ----------------------------------------------------------------------

POSITIVE = {
    "aws_access_key_id": "creds AKIAIOSFODNN7EXAMPLE in the file",
    "aws_secret_access_key": 'aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"',
    "github_token": "token ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
    "gitlab_token": "use glpat-AbCdEfGhIjKlMnOpQrSt12",
    "slack_token": "xoxb-1234567890-abcdefghijkl",
    "slack_webhook": "post to https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "stripe_key": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "anthropic_key": "ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345",
    "openai_key": "export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyzABCD1234",
    "google_api_key": "AIzaSyA-1234567890abcdefghijklmnopqrstu",
    "google_oauth_token": "ya29.a0AfH6SMBabcdefghijklmnopqrstuvwxyz",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlF",
    "huggingface_token": "hf_abcdefghijklmnopqrstuvwxyzABCDEF",
    "npm_token": "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789",
    "sendgrid_key": "SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
    "twilio_key": "SK0123456789abcdef0123456789abcdef",
    "shopify_token": "shpat_0123456789abcdef0123456789abcdef",
    "digitalocean_token": "dop_v1_" + "a" * 64,
    "telegram_bot_token": "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1",
    "azure_storage_key": "AccountKey=" + "Ab1+" * 22 + "==;EndpointSuffix=core",
    "private_key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA\n-----END OPENSSH"
    " PRIVATE KEY-----",
    "url_credentials": "DATABASE_URL=postgres://admin:s3cr3tP4ss@db.example.com/app",
    "authorization_header": "curl -H 'Authorization: Bearer abcdef0123456789abcdef'",
    "password": 'db_password = "hunter2hunter2"',
    "pin": "my pin is 4711",
    "secret": "the api key is a8f5f167f44f4964",
    "basic_auth": "curl -u admin:hunter2 https://x",
}

NEGATIVE = [
    "password = get_password()",
    "password: changeme_later",
    "the API port is 9090 and p95 < 200 ms at 1k rps",
    "ask about sk-learn and the task list",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it",
    "see src/cache/deploy.py and https://example.com/docs",
    "The key to success is a token budget of 3000",
    "secret = os.environ['SECRET']",
    "数据库迁移 值班室分机号 8088",
    "AKIAIOSFODNN7EXAMPLEX is too long to be a key id",
    "a trip to Asia in SKY blue",
]


@pytest.mark.parametrize("kind", sorted(POSITIVE))
def test_each_kind_is_found_and_named(kind: str) -> None:
    text = POSITIVE[kind]
    spans = find_secrets(text)
    assert [s.kind for s in spans] == [kind]
    assert redact_secrets(text).count("[redacted]") == 1
    assert redact_secrets(text, named=True).count(f"[redacted:{kind}]") == 1


@pytest.mark.parametrize("text", NEGATIVE)
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    assert find_secrets(text) == []


def test_a_private_key_pasted_without_its_end_line_is_withheld_to_the_last_base64_line() -> None:
    text = "here:\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nu\nwNSkAAAAAAAAAA==\nthanks"
    assert redact_secrets(text, named=True) == "here:\n[redacted:private_key]\nthanks"


def test_withhold_names_each_kind_once_and_leaves_clean_text_alone() -> None:
    text = "the password is hunter2 and the pin is 4711 and the pw is hunter3"
    assert withhold(text) == (
        "the password is [redacted:password] and the pin is [redacted:pin] "
        "and the pw is [redacted:password]",
        ("password", "pin"),
    )
    assert withhold("nothing here") == ("nothing here", ())


def test_secret_lines_names_every_line_a_secret_spans() -> None:
    lines = [
        "harmless",
        "token ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
        "-----BEGIN PRIVATE KEY-----",
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
        "-----END PRIVATE KEY-----",
        "the wifi password is coffeeshop2024",
        "also harmless",
    ]
    assert secret_lines(lines) == {1, 2, 3, 4, 5}
    assert secret_lines(["nothing", "here"]) == set()


@pytest.mark.parametrize("row", [r for r in CORPUS if r.secrets and caught(r)], ids=str)
def test_a_window_cut_anywhere_holds_a_secret_withheld_or_none_of_it(row: Labelled) -> None:
    """What cuts text for a model (search snippets, quotes, expand chunks) moves its
    edges with clear_cut: a cut between a name and its value, or inside the value, would
    leave a piece that no longer looks like a secret."""
    text = row.text
    places = [(text.index(s), text.index(s) + len(s.rstrip("!.?,;:"))) for s in row.secrets]
    for cut in range(len(text) + 1):
        for start, end in (clear_cut(text, cut, len(text)), clear_cut(text, 0, cut)):
            assert not any(a < edge < b for a, b in places for edge in (start, end)), cut
            window = redact_secrets(text[start:end], named=True)
            assert not any(secret in window for secret in row.secrets), (cut, window)


def test_clear_cut_moves_an_edge_out_of_a_statement_and_leaves_others() -> None:
    text = "we said the staging password is hunter2, use it for the migration today"
    value = text.index("hunter2")
    assert clear_cut(text, value, len(text)) == (value + len("hunter2"), len(text))
    assert clear_cut(text, 0, value + 3) == (0, text.index("password"))
    assert clear_cut(text, 3, 12) == (3, 12)
    assert clear_cut(text, 0, len(text)) == (0, len(text))


# -- bounds ----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "hostile",
    [
        "password=" * 50_000,
        "-----BEGIN PRIVATE KEY-----" + "A" * 400_000,
        "-----BEGIN PRIVATE KEY-----" + " AAAAAAAAAA" * 40_000,
        "a://b:" * 50_000,
        "eyJ" + "a" * 8 + "." * 100_000,
        "Authorization: Bearer " * 20_000,
        "sk-" * 100_000,
        "the password is " * 30_000,
        "x is the password " * 30_000,
        "password for a b c d " * 25_000,
        "key token secret pass pin " * 20_000,
        "a_" * 200_000 + "password",
        "mysql -p" * 60_000,
        "curl -u " * 60_000,
        "密码是" * 100_000,
    ],
)
def test_scanning_hostile_text_stays_linear(hostile: str) -> None:
    """Timed against text of the same length in the same run, so a loaded machine slows
    both: a backtracking pattern costs thousands of times more, not a few. The baseline
    names credentials throughout, so it pays the same per-name work as the hostile text."""

    def seconds(text: str) -> float:
        times = []
        for _ in range(3):
            started = time.perf_counter()
            find_secrets(text)
            times.append(time.perf_counter() - started)
        return min(times)

    dense = "the staging password is hunter2, use the key for the token and the pin "
    baseline = (dense * (len(hostile) // len(dense) + 1))[: len(hostile)]
    assert seconds(hostile) < 50 * seconds(baseline) + 0.05


@given(st.text(max_size=400))
@settings(max_examples=300, deadline=None)
def test_spans_are_in_bounds_sorted_and_disjoint(text: str) -> None:
    spans = find_secrets(text)
    previous_end = 0
    for span in spans:
        assert previous_end <= span.start < span.end <= len(text)
        previous_end = span.end
    assert len(redact_secrets(text)) <= len(text) + 10 * len(spans)


FRAGMENTS = [row.text for row in CORPUS] + ["\n", " ", ", ", "。", "and then"]


@given(st.lists(st.sampled_from(FRAGMENTS), max_size=6))
@settings(max_examples=200, deadline=None)
def test_redacted_text_holds_nothing_more_to_redact(parts: list[str]) -> None:
    once = redact_secrets(" ".join(parts), named=True)
    assert redact_secrets(once, named=True) == once


# -- the prefilters: what they pass over, the full scan finds nothing in ----------------

# Hints and keywords cut up and glued together, in other cases and scripts, with blanks
# that are no space: a hint inside a word, across two, or split by a blank.
HINT_PIECES = st.sampled_from(
        [*sorted(_HINTS), *(need for _, needs in _KEYWORD_FORMS for need in needs),
         "door code", "api", "access", "private", "pass", "word", "to", "ken", " ", "  ", "\n",
         "\u3000", "\x1c", "İ", "ſ", "K", "x", "=", ":", "_", "-", "Token", "PASS"]
)  # fmt: skip
HINT_SOUP = st.lists(HINT_PIECES, max_size=10)
# Texts with more new words than are learned at once: scanned whole.
LONG_HINT_SOUP = st.lists(HINT_PIECES, min_size=20, max_size=80)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.one_of(HINT_SOUP, LONG_HINT_SOUP), min_size=1, max_size=4))
def test_the_hints_found_word_by_word_are_every_hint_in_the_text(texts) -> None:
    # Several texts in a row: words remembered from one must not change the next's.
    for parts in texts:
        lowered = "".join(parts).lower()
        assert _present(lowered) == {hint for hint in _HINTS if hint in lowered}


@settings(max_examples=1000, deadline=None)
@given(HINT_SOUP)
def test_the_narrowed_keyword_finds_what_the_whole_one_finds(parts) -> None:
    text = "".join(parts)
    lowered = text.lower()
    present = _present(lowered)
    codes = " code" in lowered and any(hint in lowered for hint in _CODE_HINTS)
    narrowed = _keyword(text, lowered, present, codes)
    whole = _CODE_KEYWORD if codes else _KEYWORD
    assert [m.span() for m in _scan(narrowed, text, lowered)] == [
        m.span() for m in _scan(whole, text, lowered)
    ]
