"""The exact values a ledger keeps from prose (issue 21): ids, dates, versions, hashes, money,
environment variables, hosts, emails, and numbers after a word of any script."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abridged.adapters.simulation.facts import extract_facts
from abridged.domain.ledger import extract
from abridged.domain.ledger_values import _FIRST, _LATIN, GLUED_CHARS, VALUE, script_numbers
from abridged.domain.messages import Message, Role, TextBlock, ToolUseBlock


def said(text: str) -> list[tuple[str, str]]:
    """The (kind, text) entries of one assistant message saying `text`."""
    message = Message(Role.ASSISTANT, (TextBlock(text),))
    return [(e.kind, e.text) for e in extract([(0, message)])]


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("Номер заявки: INC-108602. Ответ придёт завтра.", ["INC-108602"]),
        ("注文ORD-12345を2024-05-21 10:30に発送しました。", ["ORD-12345", "2024-05-21 10:30"]),
        ("رقم الحجز JG7FMM بتاريخ 2024-05-21، المبلغ 120 USD", ["JG7FMM", "2024-05-21", "120 USD"]),
        ("ऑर्डर ORD-998877 का भुगतान ₹4,500 हुआ", ["ORD-998877", "₹4,500"]),
        ("예약번호 KX4P2Q, 합계 ₩45,000", ["KX4P2Q", "₩45,000"]),
        (
            # A local part of Latin letters beyond ASCII is the address's, not cut after them.
            "Escribe a raúl.garcía@ferrovia.it o müller@firma.de; メールはuser@example.comです",
            ["raúl.garcía@ferrovia.it", "müller@firma.de", "user@example.com"],
        ),
        (
            "Set FOO_BAR=1 and $HOME, ${API_KEY}; mail a.b+c@example.co.uk.",
            ["FOO_BAR=1", "$HOME", "${API_KEY}", "a.b+c@example.co.uk"],
        ),
        # An amount keeps its magnitude: `€412` would say a thousand times less.
        (
            "Lost €412k of MRR; budget $1.2M, £5m grant; worth 2.5M EUR.",
            ["€412k", "$1.2M", "£5m", "2.5M EUR"],
        ),
        (
            "Commit a1b2c3d is on v1.2.3, built with 3.11.4-rc1.",
            ["a1b2c3d", "v1.2.3", "3.11.4-rc1"],
        ),
        (
            "The db is at 10.0.0.5:5432, the app on localhost:8080; $1,299.00 or €45 (#1234).",
            ["10.0.0.5:5432", "localhost:8080", "$1,299.00", "€45", "#1234"],
        ),
        (
            "See JIRA-123 and the meeting at 09:15 on 21/05/2024.",
            ["JIRA-123", "09:15", "21/05/2024"],
        ),
        (
            # A package's pin and a wheel's version, joined to the name by a hyphen.
            "pip installed tqdm-4.65.0 and gevent-1.0.1-py2.7 on 3.11.4.",
            ["4.65.0", "1.0.1-py2.7", "3.11.4"],
        ),
        (
            # Amounts written the French, German or Swiss way, the sign or code either side,
            # and ids of several parts.
            "Facture INV-2026-0042 : total 21 907,44 €, dont 3 118,00 € (réf. URS-2026-0115).",
            ["INV-2026-0042", "21 907,44 €", "3 118,00 €", "URS-2026-0115"],
        ),
        (
            "Der Betrag von 1.299,00 EUR, CHF 1'250.00 oder 12,50 € ist am 15.01.26 fällig.",
            ["1.299,00 EUR", "CHF 1'250.00", "12,50 €", "15.01.26"],
        ),
        (
            # A request's or a resource's id, whatever the case of its hex digits.
            "Trace 3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b failed; "
            "retry 9F2B8C1E-0000-4E2B-8F1A-AAAA00000001.",
            ["3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b", "9F2B8C1E-0000-4E2B-8F1A-AAAA00000001"],
        ),
        (
            # A host's port (a file's line is read the same way, but is a name: below).
            "The check is in library.py:58-59; the server stays on localhost:8080.",
            ["library.py:58", "localhost:8080"],
        ),
    ],
)
def test_values_are_found_whatever_the_script_around_them(text: str, values: list[str]) -> None:
    assert VALUE.findall(text) == values
    assert [t for k, t in said(text) if k in ("value", "identifier")] == values


@pytest.mark.parametrize(
    "text",
    [
        "I changed 2 files and 3 tests in 2024.",  # prose numbers, a year
        "The file is 330KB; it reads 3.14 and e.g. 12.5%.",  # a size, decimals
        "See https://github.com/o/r/commit/abc1234def for it.",  # in a link, kept as a link
        "Paths alone are not values: src/app/v2/main.py, a/b=c and x:y.",
        "The word deadbeef has no digit; x2ab1c3d4 is glued to a letter.",
        "Values glued to Latin letters: fooORD-12345 and abcv1.2.3.",
        "The F-16 and the A-10 flew over 1 234 567 people in 2024.",  # names, a count
    ],
)
def test_prose_numbers_and_parts_of_longer_words_are_not_values(text: str) -> None:
    assert [t for k, t in said(text) if k == "value"] == []


@pytest.mark.parametrize(
    ("text", "values"),
    [
        (
            "Pinned lodash@4.17.21 and hashicorp/aws@5.71.0.",
            ["lodash@4.17.21", "hashicorp/aws@5.71.0"],
        ),
        (
            "Opened tickets/INC-4412, reverted commit/da35c92cb9; refs/tags/v3.1.2 stays.",
            ["tickets/INC-4412", "commit/da35c92cb9", "refs/tags/v3.1.2"],
        ),
        (
            "The DB stays at db.dev.internal:5432/app; lag on kafka-2.internal:9092/payments.",
            ["db.dev.internal:5432/app", "kafka-2.internal:9092/payments"],
        ),
        (
            "Tested on Node 20.17.0/20.18.0 with settings.MAX_UPLOAD_MB=25 (see src/a.py:214).",
            ["20.17.0/20.18.0", "settings.MAX_UPLOAD_MB=25"],
        ),
        (
            "Failover: postgres://svc@pg-replica-2.prod.internal:6432/orders, due 14.03.25.",
            # Longer than `GLUED_CHARS`: its values alone, the user at the host too (and
            # the date with the word before it, a number's entry of three parts).
            ["due 14.03.25", "svc@pg-replica-2.prod.internal", "pg-replica-2.prod.internal:6432"],
        ),
    ],
)
def test_a_value_glued_to_what_names_it_is_kept_with_it(text: str, values: list[str]) -> None:
    """A value after `@`, `/`, `.` or `:` is part of a longer word that says what it is the
    value of (a package, a ticket queue, a database): the word is the entry, and the value
    is in it."""
    assert [t for k, t in said(text) if k == "value"] == values


def test_a_glued_word_whose_value_was_redacted_is_the_name_without_its_equals_sign() -> None:
    # Redaction leaves `[redacted password]`, and a bracket ends a word.
    text = "Set cfg.DB_PASSWORD=[redacted password] and retry."
    assert [t for k, t in said(text) if k == "value"] == ["cfg.DB_PASSWORD"]


def test_a_long_glued_word_gives_its_values_alone() -> None:
    word = "build/" + "x" * (GLUED_CHARS - 20) + "/v1.2.3/INC-4412"
    assert len(word) > GLUED_CHARS
    assert [t for k, t in said(f"Artifacts in {word} now.") if k == "value"] == [
        "v1.2.3",
        "INC-4412",
    ]


def test_a_pasted_logs_glued_timestamps_are_not_values() -> None:
    log = "\n".join(f"2026-11-27T10:{k:02d}:00.123Z/worker-{k} ready" for k in range(30))
    prompt = Message(Role.USER, (TextBlock(log + "\n" + "x " * 1_000 + "\nPinned a@1.2.3."),))
    assert [e.text for e in extract([(0, prompt)]) if e.kind == "value"] == ["a@1.2.3"]


def test_a_value_in_backticks_is_listed_once_as_a_name() -> None:
    entries = said("The order `ORD-12345` shipped; ORD-12345 is paid.")
    assert [e for e in entries if e[1] == "ORD-12345"] == [("identifier", "ORD-12345")]


def test_a_pasted_logs_line_timestamps_are_not_values_but_a_stated_time_is() -> None:
    log = "\n".join(f"2026-11-27 10:{k:02d}:00 INFO worker {k}" for k in range(30))
    prompt = Message(Role.USER, (TextBlock(log + "\n" + "x " * 1_000 + "\nRetry at 11:45."),))
    values = [e.text for e in extract([(0, prompt)]) if e.kind == "value"]
    assert values == ["11:45"]


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("Скорость упала, должно быть 100, списали 2469 рублей", ["быть 100", "списали 2469"]),
        ("金額3480円、合計: 12800", ["金額3480", "合計: 12800"]),
        ("राशि 4500 रुपये, कीमत: 99%", ["राशि 4500", "कीमत: 99%"]),  # vowel signs are marks
        ("المبلغ 120 ريال", ["المبلغ 120"]),
        ("в 2024 году, 5 дней, 2024-05-21", []),  # a one-letter word, one digit, a date
    ],
)
def test_numbers_after_a_word_of_any_script(text: str, numbers: list[str]) -> None:
    assert script_numbers(text) == numbers
    assert [t for k, t in said(text) if k == "number"] == numbers


def test_a_latin_number_is_still_taken_with_its_word() -> None:
    assert ("number", "port 8080") in said("It listens on port 8080.")


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("p99 was 245 ms, then 87 ms.", ["was 245 ms", "then 87 ms"]),
        ("The box runs 3.5 GHz with pool 512 MB and timeout 30s.", [
            "runs 3.5 GHz", "pool 512 MB", "timeout 30s",
        ]),
        ("It ran 40 tokens/s, drew 1920 px, and build 2.0 shipped.", [
            "ran 40", "drew 1920 px", "build 2.0 shipped",
        ]),
        ("A number with a unit alone is not one: raise it to 512 MB.", []),
    ],
)  # fmt: skip
def test_a_number_with_its_unit_is_taken_with_it(text: str, numbers: list[str]) -> None:
    assert [t for k, t in said(text) if k == "number"] == numbers


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("The job deleted 7455 rows from the table.", ["deleted 7455 rows"]),
        ("After the retries the import took 1,250 records.", ["took 1,250 records"]),
        ("The suite has 412 tests and 18 fixtures.", ["has 412 tests", "and 18 fixtures"]),
        # What follows is not what the number counts: a word of the sentence, a rate.
        ("I tried 12 times, 20 of them at 40 tokens/s.", ["tried 12"]),
        # A number with no word before it is not one (`12 tests failed`), as before.
        ("12 tests failed.", []),
    ],
)  # fmt: skip
def test_a_number_is_taken_with_what_it_counts(text: str, numbers: list[str]) -> None:
    # An outside measure of numbers followed by what they count (`7455 rows`) found abridged
    # below the reference on 15 of 48 sessions: the ledger kept the word before alone.
    assert [t for k, t in said(text) if k == "number"] == numbers


# `VALUE` before its first character was looked at first, and before an email could start
# only where a run of its local part's characters starts (reading a run of `+` or `%` in n²
# steps): the reference it must match exactly.
_INNER = VALUE.pattern.removeprefix(_FIRST + "(?:").removesuffix(")")
_REFERENCE = re.compile(
    _INNER.replace(
        f"(?:(?<![%+{_LATIN}])[A-Za-z0-9._%+{_LATIN}-]+@", f"(?:[A-Za-z0-9._%+{_LATIN}-]+@", 1
    )
)


@settings(max_examples=500)
@given(st.text(alphabet="aZv1.%+-@_ x.co:/#$€,T9fUSDíü×\n", max_size=48))
def test_values_are_those_of_the_reference_expression(text: str) -> None:
    assert _INNER not in (VALUE.pattern, _REFERENCE.pattern)
    assert [m.group(0) for m in VALUE.finditer(text)] == [
        m.group(0) for m in _REFERENCE.finditer(text)
    ]


def test_a_long_link_is_kept_whole() -> None:
    # A booking search's link runs to several hundred characters; cut, it leads elsewhere.
    query = "&".join(f"param{k}=value{k}" for k in range(40))
    link = f"https://www.booking.example/searchresults.en-gb.html?{query}"
    assert 600 < len(link) < 2_048
    call = ToolUseBlock(id="toolu_1", name="browser_navigate", input={"url": link})
    messages = [
        Message.user("Find a hotel in Faro."),
        Message(Role.ASSISTANT, (TextBlock(f"Opening {link} now."), call)),
    ]

    urls = [e.text for e in extract(list(enumerate(messages))) if e.kind == "url"]

    assert urls == [link]


@pytest.mark.parametrize(
    ("text", "date"),
    [
        ("Your refund arrives by April 19, 2026.", "April 19, 2026"),
        ("Ship it before Dec. 5, 2025 please", "Dec. 5, 2025"),
        ("The audit is due March 2026.", "March 2026"),
        ("We met on 19 April 2026 at noon.", "19 April 2026"),
        ("Die Lieferung kommt am 3. März 2026.", "3. März 2026"),
        ("Le colis arrive le 19 avril 2026.", "19 avril 2026"),
        ("La cita es el 19 de abril de 2026.", "19 de abril de 2026"),
        ("Consegna il 2 giugno 2026.", "2 giugno 2026"),
    ],
)
def test_a_date_written_with_its_months_name_is_a_value_with_its_year(text: str, date: str) -> None:
    # Kept whole: a value, or a number when that is what it reads as (`March 2026`).
    assert date in [entry for kind, entry in said(text) if kind in {"value", "number"}]
    facts = extract_facts([Message(Role.ASSISTANT, (TextBlock(text),))])
    assert date in [f.text for f in facts if f.kind == "values"]


def test_a_syslog_lines_date_is_not_a_value() -> None:
    log = "Apr 19 10:22:01 web-1 sshd[812]: Accepted key\nApr 19 10:22:02 web-1 cron[9]: run"
    assert not [text for kind, text in said(log) if kind == "value" and "Apr" in text]
    facts = extract_facts([Message(Role.ASSISTANT, (TextBlock(log),))])
    assert not [f for f in facts if f.kind == "values" and "Apr" in f.text]


@pytest.mark.parametrize(
    ("text", "worded"),
    [
        ("Per clause 19.2.3 the notice is 30 days.", ["clause 19.2.3"]),
        ("Pinned Python 3.11.4 and the host 10.0.0.12.", ["Python 3.11.4", "host 10.0.0.12"]),
        ("Release version 2.0.1 shipped.", ["version 2.0.1 shipped"]),
    ],
)
def test_a_value_of_three_parts_after_a_word_is_kept_with_it(text: str, worded: list[str]) -> None:
    """A section, a version or an address is a `value` with the word before it (the bare
    one no longer listed): alone it says less, and a `number` is dropped first."""
    entries = said(text)
    assert [t for k, t in entries if k == "value"] == worded
    assert not [t for k, t in entries if k == "number" and any(t in w for w in worded)]


def test_a_number_whose_digits_run_into_a_longer_value_stays_a_number() -> None:
    entries = said("It was built with 3.11.4-rc1 and timeout 30.")
    assert ("value", "3.11.4-rc1") in entries
    assert ("number", "with 3.11.4") in entries
    assert ("number", "timeout 30") in entries


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        (
            "Findings: web/storefront/views/order_2.py:632 and invoice_21.py:869.",
            ["web/storefront/views/order_2.py:632", "invoice_21.py:869"],
        ),
        ("See test_api.py:7, app_main.py:12:5 and src/app.py:214.", [
            "test_api.py:7", "app_main.py:12", "src/app.py:214",
        ]),
        ("The range is in my_lib.py:58-59.", ["my_lib.py:58"]),
    ],
)  # fmt: skip
def test_a_files_line_the_agent_names_is_kept_as_a_name(text: str, lines: list[str]) -> None:
    """`file:line`, a folder before it or not, its name holding underscores and its line
    any number of digits: where the agent looked, kept as a name (priority 1), not a
    value; a host's port stays a value."""
    entries = said(text + " The database is db.internal:5432, the cache kafka-2.internal:9092.")
    assert sorted(t for k, t in entries if k == "identifier") == sorted(lines)
    assert [t for k, t in entries if k == "value"] == ["db.internal:5432", "kafka-2.internal:9092"]


@pytest.mark.parametrize(
    "text",
    ["See Ch.Sect:4 and St.John:3 on p.ix:2.", "It runs at www.example.com:8080 now."],
)
def test_prose_and_hosts_are_not_files_lines(text: str) -> None:
    assert not [t for k, t in said(text) if k == "identifier"]


def test_a_value_past_a_numbers_cap_is_still_listed() -> None:
    entries = said("counts " + "1," * 70 + "1.2.3 total")
    assert ("value", "1.2.3") in entries


@pytest.mark.parametrize(
    "text", ["The renewal is due April 19, 2026.", "Released on 19 March 2025, then patched."]
)
def test_a_dates_value_is_not_repeated_by_a_number(text: str) -> None:
    """`April 19` of `April 19, 2026` would take a line of its own for nothing: the date's
    value, kept longer, holds it."""
    entries = said(text)
    dates = [t for k, t in entries if k == "value"]
    assert len(dates) == 1
    assert not [t for k, t in entries if k == "number" and t in dates[0]]


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("Line 163 still raises it.", "Line 163"),
        ("Patch line 25 instead of the import.", "line 25"),
        ("Coverage went from 95 already.", "from 95"),
        ("It deleted 7455 rows overnight.", "deleted 7455 rows"),
    ],
)
def test_a_number_takes_what_it_counts_not_the_word_that_goes_on(text: str, number: str) -> None:
    assert [t for k, t in said(text) if k == "number"] == [number]


def test_values_an_agent_writes_in_prose_without_backticks_are_kept() -> None:
    # An endpoint, a phone, a key combination, a version constraint, a dotted key and a pull
    # request, written as people write them: a later turn cannot look them up elsewhere.
    text = (
        "Ines Moreau (+33 6 12 34 56 78, or (555) 123-4567) owns it. The probe hits "
        "GET /healthz/limiter and POST /webhooks/stripe. Set limiter.lock_wait_ms and "
        "indices.recovery.max_bytes_per_sec, pin elasticsearch-py>=8.12,<9, press Ctrl+Alt+T, "
        "and see PR 4821 and MR !377."
    )
    found = [t for k, t in said(text) if k == "value"]
    for value in [
        "+33 6 12 34 56 78",
        "(555) 123-4567",
        "GET /healthz/limiter",
        "POST /webhooks/stripe",
        "indices.recovery.max_bytes_per_sec",
        "elasticsearch-py>=8.12,<9",
        "Ctrl+Alt+T",
        "PR 4821",
        "MR !377",
    ]:
        assert value in found


@pytest.mark.parametrize(
    "text",
    [
        "Open app.config.js and api.example.com, then call os.path.join(a, b).",
        "The check x == 5 holds; +12 34 is a score; Alt alone does nothing.",
        "Read /srv/a.b.c/x and db.dev.internal:5432/app.",
    ],
)
def test_file_names_hosts_calls_and_comparisons_are_not_such_values(text: str) -> None:
    found = [t for k, t in said(text) if k == "value"]
    shaped_like = [v for v in found if re.search(r"[+(]|==|\.[a-z]+\.[a-z]", v)]
    assert shaped_like in ([], ["db.dev.internal:5432/app"])
