"""Rules a user states in their own language: found by the ledger (`domain/rule_words.py`)
and by `simulate`'s measure, and kept when the prompt that stated them leaves the ledger."""

from __future__ import annotations

import pytest

from abridged.adapters.simulation.facts import extract_facts
from abridged.domain.ledger import RECENT_PER_KIND, LedgerEntry, consolidate, render_ledger
from abridged.domain.messages import Message
from abridged.domain.rule_words import sentences, stated_rules, states_rule
from tests.support.builders import words
from tests.support.fakes import FakeTokenCounter

RULES = {
    "en": "Never touch the migrations folder.",
    "de": "Ändere niemals die Dateien unter db/migrations.",
    "de-modal": "Wir dürfen keine Kundendaten löschen.",
    "fr": "N'utilise jamais de tabulations dans ce dépôt.",
    "fr-instead": "Utilise pytest au lieu de unittest.",
    "es": "Usa siempre el sistema métrico en las respuestas.",
    "es-no-longer": "Ya no uses jQuery en el frontend.",
    "pt": "Use apenas o português de Portugal nos textos.",
    "it": "Evita le dipendenze esterne nel modulo core.",
    "nl": "Gebruik nooit de productiedatabase voor tests.",
    "ru": "Никогда не трогай миграции.",
    "ru-only": "Используй только табы для отступов.",
    "ja": "マイグレーションは絶対に変更しないでください。",
    "zh": "请不要修改迁移文件。",
    "ko": "마이그레이션 파일은 절대 수정하지 마세요.",
    "ar": "يجب ألا تعرض الأسعار للعميل دون موافقة المدير.",
    # A rule taken back is a rule too: without it the ledger shows the old one as standing.
    "en-stop": "Stop cc'ing legal on renewals.",
    "en-no-need": "No need to run the migrations again.",
    "en-anymore": "We don't ship on Fridays anymore, ship on Thursdays.",
}
REPORTS = {
    "en": "It does not build on the CI runner.",
    "de": "Das funktioniert leider nicht mit Python 3.12.",
    "fr": "Le test ne passe pas sur la branche main.",
    "es": "El servidor no responde desde las diez.",
    "pt": "O relatório não abre no navegador.",
    "it": "Il test non passa in locale.",
    "nl": "De build werkt niet op de server.",
    "ru": "Сборка не проходит на сервере.",
    "ja": "テストがサーバーで失敗しました。",
    "zh": "服务器上的测试失败了。",
    "ko": "서버에서 테스트가 실패했습니다.",
    "en-stopped": "The build stopped at step 3 yesterday.",
    "ar": "الطابعة لا تعمل منذ الصباح.",
}


@pytest.mark.parametrize("sentence", RULES.values(), ids=RULES.keys())
def test_a_rule_is_read_in_the_users_own_language(sentence: str) -> None:
    assert states_rule(sentence)
    assert states_rule(sentence.upper())


@pytest.mark.parametrize("sentence", REPORTS.values(), ids=REPORTS.keys())
def test_a_sentence_that_only_reports_is_not_a_rule(sentence: str) -> None:
    assert not states_rule(sentence)


def test_sentences_without_spaces_end_at_their_own_full_stops() -> None:
    prompt = "在线商店的订单页面很慢。请不要修改迁移文件。数据库是PostgreSQL 16。"
    assert stated_rules(prompt) == ["请不要修改迁移文件。"]
    japanese = "注文画面が遅いです。必ずテストを先に書いてください！よろしく。"
    assert stated_rules(japanese) == ["必ずテストを先に書いてください！"]


@pytest.mark.parametrize(
    ("rule", "ask"),
    [
        (RULES["de"], "Kunde {k} fragt nach Bestellung SK-{n}."),
        (RULES["ja"], "お客様{k}が注文SK-{n}について問い合わせています。"),
        (RULES["es"], "El cliente {k} pregunta por el pedido SK-{n}."),
    ],
    ids=["de", "ja", "es"],
)
def test_a_dropped_request_leaves_the_rule_it_stated_in_its_language(rule: str, ask: str) -> None:
    # The session's task (the oldest request) is dropped last; the one after it states a rule.
    count = FakeTokenCounter().count
    task = LedgerEntry("request", "Work the support queue.", 0, 0)
    first = LedgerEntry("request", f"{ask.format(k=1, n=1001)} {rule}\n{words(200)}", 1, 1)
    later = tuple(
        LedgerEntry("request", f"{ask.format(k=k, n=1000 + k)} {words(40)}", k, k)
        for k in range(2, 3 + RECENT_PER_KIND)
    )
    room = count(render_ledger((task, *later))) + 80

    update = consolidate((task, first, *later), room, count, slack=False)

    assert first in update.dropped
    assert LedgerEntry("constraint", rule, 1, 1) in update.entries
    assert rule in update.text
    assert update.tokens <= room


def test_simulate_counts_a_rule_in_the_users_language_as_a_constraint() -> None:
    facts = extract_facts(
        [Message.user(f"Bonjour. {RULES['fr']} {REPORTS['fr']}"), Message.assistant("D'accord.")]
    )
    constraints = {f.text for f in facts if f.kind == "constraints"}
    assert constraints == {RULES["fr"]}


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        (
            "Never cache tokens, e.g. in Redis. Use the vault.",
            ["Never cache tokens, e.g. in Redis.", "Use the vault."],
        ),
        (
            "Cite sec. 19.2 always. No. It is fine.",
            ["Cite sec. 19.2 always.", "No.", "It is fine."],
        ),
        (
            "Keep logs, traces etc. for a week. Etc. Done.",
            ["Keep logs, traces etc. for a week.", "Etc.", "Done."],
        ),
        ("Use tabs, e.g.\nNever spaces.", ["Use tabs, e.g.", "Never spaces."]),
        ("必ずタブを使う。スペースは禁止！", ["必ずタブを使う。", "スペースは禁止！", ""]),
    ],
)
def test_a_sentence_goes_on_after_a_word_written_short(text: str, parts: list[str]) -> None:
    assert sentences(text) == parts


def test_a_rule_with_an_example_in_it_is_kept_whole() -> None:
    assert stated_rules("Never log secrets, e.g. API keys or tokens. Thanks!") == [
        "Never log secrets, e.g. API keys or tokens."
    ]


def test_milliseconds_end_a_sentence() -> None:
    assert sentences("Search takes 340 ms. Never add a call to the pricing service.") == [
        "Search takes 340 ms.",
        "Never add a call to the pricing service.",
    ]
