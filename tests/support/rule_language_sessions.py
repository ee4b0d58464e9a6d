# ruff: noqa: E501 (the sessions' own text: prompts, log lines and answers)
"""Sessions whose users state their rules in their own language (docs/evaluation.md, "Rules
in the user's own language"), written for that check and never tuned on. Each is an agent
at work for a team that writes in German, French, Spanish, Portuguese, Japanese or
Chinese: the first prompt gives the task and two rules, later prompts add two more and
change a decision, most prompts carry a pasted message or log below their ask, and each
turn runs one to four tool calls with outputs of 1 to 8 KB: over 60 turns a 32k window
compacts many times and the early prompts leave the facts ledger.

- `de-shop-701`: the customer service of an online shop (orders, refunds, e-mails);
- `fr-django-702`: a coding agent on a Django project (shell, files, tests);
- `es-catalog-703`: a product catalogue kept in SQL (prices, stock, imports);
- `pt-ledger-704`: a finance team's bank reconciliations (statements, journal entries);
- `ja-sre-705`: an SRE on-call for a Kubernetes cluster (kubectl, logs, deploys);
- `zh-data-706`: a data analyst (SQL over orders, Python, charts).

The files are abridged JSONL, deterministic: `python -m tests.support.rule_language_sessions
DIR` writes them.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

from tests.support.generated_sessions import Record, write_records

LANGUAGES: dict[str, dict[str, Any]] = {
    "de-shop-701": {
        "task": "Du bearbeitest heute die Kundenanfragen des Shops „Waldgrün“. Die Bestellungen findest du mit search_orders, Erstattungen laufen über refund.",
        "rules": [
            "Erstatte niemals mehr als 200 € ohne Rückfrage beim Teamleiter.",
            "Antworte den Kunden immer auf Deutsch und mit „Sie“.",
        ],
        "later_rules": [
            "Ab sofort dürfen keine Gutscheincodes mehr per E-Mail verschickt werden.",
            "Bitte nicht die Bestellungen aus dem Lager Leipzig stornieren, die sind schon unterwegs.",
        ],
        "decision": "Wir verwenden ab jetzt DHL statt Hermes für alle Ersatzlieferungen.",
        "asks": [
            "Frau Becker fragt nach ihrer Bestellung {id}, das Paket sei seit {n} Tagen nicht angekommen.",
            "Herr Yilmaz möchte die Bestellung {id} zurückgeben, die Jacke ist zu klein.",
            "Kannst du prüfen, warum die Zahlung für {id} zweimal abgebucht wurde?",
            "Die Kundin mit der Bestellung {id} hat eine beschädigte Vase bekommen, was schlagen wir vor?",
            "Schreib bitte eine Antwort an den Kunden zu {id}, er wartet auf seine Gutschrift von {n} €.",
            "Prüf bitte den Lagerbestand für Artikel {id}, im Shop steht {n} Stück.",
        ],
        "context": [
            "Der Kunde ist seit Jahren Stammkunde und hat schon zweimal angerufen.",
            "Im Ticketsystem steht dazu noch keine Notiz vom Vormittag.",
            "Die Versandbestätigung kam laut Log am Montag um 9 Uhr raus.",
            "Das Paket wurde vermutlich im Verteilzentrum Hamburg umgeleitet.",
            "Wir hatten diese Woche viele Rückfragen zu verspäteten Paketen.",
            "Bitte fasse am Ende kurz zusammen, was du gemacht hast.",
        ],
        "notes": [
            "Ich schaue mir die Bestellung an.",
            "Ich prüfe den Zahlungsverlauf.",
            "Jetzt sehe ich im Lagerbestand nach.",
            "Ich bereite die Antwort vor.",
        ],
        "answers": [
            "Erledigt: Die Erstattung ist angelegt und der Kunde informiert.",
            "Die Sendung ist unterwegs; ich habe dem Kunden die neue Sendungsnummer geschickt.",
            "Ich habe den Fall an den Teamleiter weitergegeben, da der Betrag über der Grenze liegt.",
        ],
        "tools": ["search_orders", "refund", "send_email", "stock"],
    },
    "fr-django-702": {
        "task": "On travaille sur le projet Django « atelier » : il faut ajouter l'export des factures en PDF et corriger les tests qui échouent.",
        "rules": [
            "Ne modifie jamais les fichiers de migration dans factures/migrations.",
            "Utilise toujours pytest pour les tests.",
        ],
        "later_rules": [
            "Il faut garder la compatibilité avec Python 3.10.",
            "Évite les dépendances externes dans le module core.",
        ],
        "decision": "On utilise httpx au lieu de requests désormais.",
        "asks": [
            "Le test test_export_{id} échoue depuis ce matin, tu peux regarder ?",
            "Ajoute un champ numero_tva au modèle Facture et mets à jour le formulaire {id}.",
            "La page /factures/{n}/ renvoie une erreur 500 en production.",
            "Peux-tu relire la vue export_pdf et simplifier la partie {id} ?",
            "Lance la suite de tests complète et dis-moi ce qui casse.",
            "Le client {id} dit que le total TTC est faux de {n} centimes.",
        ],
        "context": [
            "Le projet tourne avec Django 4.2 et PostgreSQL 15.",
            "La CI met environ douze minutes à passer.",
            "Marie a touché au calcul des remises la semaine dernière.",
            "Les factures sont générées avec WeasyPrint en production.",
            "On livre une version vendredi, donc pas de gros refactoring.",
            "Merci de résumer les changements à la fin.",
        ],
        "notes": [
            "Je regarde le code concerné.",
            "Je lance les tests.",
            "Je corrige le calcul.",
            "Je vérifie le résultat.",
        ],
        "answers": [
            "C'est corrigé : le test passe et le total est arrondi au centime.",
            "J'ai ajouté le champ et mis à jour le formulaire ; les tests passent.",
            "L'erreur venait d'un arrondi dans le calcul de la TVA, c'est réglé.",
        ],
        "tools": ["bash", "read_file", "edit_file", "bash"],
    },
    "es-catalog-703": {
        "task": "Hoy toca limpiar el catálogo de la tienda «Casa Sol»: precios, stock y las importaciones del proveedor. Tienes acceso a la base de datos con run_sql.",
        "rules": [
            "Nunca borres productos del catálogo; márcalos como inactivos.",
            "Los precios siempre en euros con IVA incluido.",
        ],
        "later_rules": [
            "Ya no uses la tabla legacy_prices para nada.",
            "Debes avisarme antes de cambiar más de 50 productos a la vez.",
        ],
        "decision": "En vez de importar el CSV del proveedor, usaremos su API a partir de hoy.",
        "asks": [
            "El producto {id} sale con precio 0 en la web, ¿puedes revisarlo?",
            "Importa el fichero de stock de hoy y dime cuántos productos cambian; calculo unos {n}.",
            "Hay {n} productos duplicados de la marca Lúa, revisa cuáles son.",
            "El cliente dice que el producto {id} aparece agotado pero hay stock en el almacén.",
            "Actualiza la descripción de la categoría {id} con el texto nuevo.",
            "¿Cuántos productos activos no tienen foto? Necesito la lista.",
        ],
        "context": [
            "El proveedor cambió el formato del fichero la semana pasada.",
            "La web se actualiza cada quince minutos desde la base de datos.",
            "Marta revisó ayer las categorías de menaje.",
            "El almacén de Valencia cierra el inventario los viernes.",
            "No hay prisa, pero lo necesito antes de la campaña de verano.",
            "Al final resúmeme los cambios, por favor.",
        ],
        "notes": [
            "Consulto la base de datos.",
            "Reviso los datos del proveedor.",
            "Preparo la actualización.",
            "Compruebo el resultado.",
        ],
        "answers": [
            "Hecho: el precio está corregido y la web ya lo muestra.",
            "He marcado los duplicados como inactivos; te dejo la lista.",
            "El stock estaba mal sincronizado; ya coincide con el almacén.",
        ],
        "tools": ["run_sql", "run_sql", "fetch_supplier", "run_sql"],
    },
    "pt-ledger-704": {
        "task": "Vamos fechar as conciliações bancárias de outubro da empresa Ipê Móveis. Os extratos estão no portal e o razão no ERP (consulta_erp).",
        "rules": [
            "Nunca lance ajustes acima de R$ 5.000 sem aprovação da Ana.",
            "Use apenas a conta 1.1.02 para as conciliações bancárias.",
        ],
        "later_rules": [
            "Em vez de CSV, gere os relatórios em XLSX.",
            "Não mais enviar extratos por e-mail; use sempre o portal.",
        ],
        "decision": "Decidimos lançar as tarifas bancárias mensalmente, não por transação.",
        "asks": [
            "O extrato do dia {id} tem uma diferença de R$ {n},00 com o razão, pode verificar?",
            "Concilie os lançamentos do Itaú da semana {id}.",
            "Apareceu um débito não identificado de R$ {n},40, o que é?",
            "Gere o relatório de pendências do mês para a Ana.",
            "O boleto {id} foi pago duas vezes? O fornecedor reclamou.",
            "Confira se as tarifas de {id} foram lançadas certo.",
        ],
        "context": [
            "O fechamento precisa estar pronto até o dia 5.",
            "A Ana está de férias na quinta e sexta.",
            "O ERP foi atualizado na semana passada e mudou alguns relatórios.",
            "Os extratos do Bradesco chegam com um dia de atraso.",
            "O auditor pediu a lista de ajustes com justificativa.",
            "No fim, me mande um resumo.",
        ],
        "notes": [
            "Vou consultar o extrato.",
            "Agora consulto o razão no ERP.",
            "Preparo o lançamento.",
            "Confiro o saldo.",
        ],
        "answers": [
            "Pronto: a diferença era uma tarifa não lançada; já está conciliado.",
            "O boleto foi pago uma vez só; o segundo débito é de outro fornecedor.",
            "Relatório gerado e enviado pelo portal.",
        ],
        "tools": ["consulta_extrato", "consulta_erp", "lancamento", "consulta_erp"],
    },
    "ja-sre-705": {
        "task": "今日のオンコールを手伝ってください。決済サービス payments の遅延アラートが出ています。クラスタには kubectl ツールでアクセスできます。",
        "rules": [
            "本番のデータベースには絶対に直接書き込まないでください。",
            "デプロイは必ずステージングで確認してから行ってください。",
        ],
        "later_rules": [
            "kubectl delete は禁止です。",
            "ログは英語ではなく日本語で要約してください。",
        ],
        "decision": "ロールバックの代わりに、設定フラグで新機能をオフにする方針にします。",
        "asks": [
            "payments-{id} のポッドが再起動を繰り返しています。原因を調べてください。",
            "p99 レイテンシが {n} ms を超えています。どのエンドポイントですか？",
            "昨日のデプロイ {id} の差分を確認してください。",
            "エラー率が {n}% まで上がりました。ログを見てください。",
            "ステージングで修正版 {id} を確認してください。",
            "インシデントの報告書の下書きを作ってください。",
        ],
        "context": [
            "アラートは午前三時ごろから出ています。",
            "昨日の夕方に決済ゲートウェイの証明書が更新されました。",
            "顧客からの問い合わせが少し増えています。",
            "データベースの接続数は上限の八割です。",
            "夜間バッチとの重なりも疑っています。",
            "最後に対応内容をまとめてください。",
        ],
        "notes": [
            "ポッドの状態を確認します。",
            "ログを確認します。",
            "メトリクスを見ます。",
            "設定を確認します。",
        ],
        "answers": [
            "原因はコネクションプールの枯渇でした。設定を戻し、レイテンシは正常です。",
            "ステージングで確認済みです。問題は再現しませんでした。",
            "報告書の下書きを作成しました。",
        ],
        "tools": ["kubectl", "logs", "metrics", "kubectl"],
    },
    "zh-data-706": {
        "task": "帮我分析一下上季度的订单数据，找出退货率上升的原因。数据在数仓里，用 run_query 查询，用 python 画图。",
        "rules": [
            "不要修改原始数据表 raw_orders。",
            "所有金额必须以人民币为单位保留两位小数。",
        ],
        "later_rules": [
            "以后只能用 DuckDB 做分析，而不是 pandas。",
            "图表中禁止使用红色表示增长。",
        ],
        "decision": "报告改为按周汇总，不再按天。",
        "asks": [
            "查一下品类 {id} 的退货率，上个月大概是 {n}%。",
            "把华东区的订单按周汇总一下。",
            "订单 {id} 的金额看起来不对，帮我核对。",
            "画一张退货率随时间变化的图。",
            "对比一下新老用户的退货率，差了大概 {n} 个百分点吗？",
            "写一段给老板的结论摘要。",
        ],
        "context": [
            "上季度做了两次大促。",
            "物流供应商在八月换过一次。",
            "运营说退货主要集中在服装类。",
            "数仓每天凌晨两点更新。",
            "老板周五要看结果。",
            "最后帮我总结一下。",
        ],
        "notes": [
            "我先查询数据。",
            "我来计算一下。",
            "我画个图。",
            "我核对一下结果。",
        ],
        "answers": [
            "结论：退货率上升主要来自服装类的尺码问题。",
            "已按周汇总，结果如下。",
            "订单金额核对无误，差异来自优惠券。",
        ],
        "tools": ["run_query", "python", "run_query", "python"],
    },
}


def _output(rng: random.Random, tool: str, size: int) -> str:
    """A tool's output of about `size` characters: log lines, rows or source, with ids."""
    lines: list[str] = []
    while sum(len(line) + 1 for line in lines) < size:
        n = rng.randint(1000, 99999)
        kind = rng.random()
        if kind < 0.4:
            lines.append(
                f"2026-10-{rng.randint(1, 31):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:11Z "
                f"{rng.choice(['INFO', 'INFO', 'WARN', 'DEBUG'])} {tool}[{rng.randint(1, 9)}] "
                f"id={n} latency_ms={rng.randint(3, 900)} status={rng.choice([200, 200, 201, 404, 409])}"
            )
        elif kind < 0.75:
            lines.append(
                json.dumps(
                    {
                        "id": n,
                        "ref": f"R-{n}",
                        "amount": round(rng.uniform(5, 900), 2),
                        "state": rng.choice(["open", "paid", "shipped", "returned"]),
                    }
                )
            )
        else:
            lines.append(
                f"    value_{n % 97} = compute(row[{n % 13}], scale={rng.randint(2, 9)})  # line {n % 400}"
            )
    if rng.random() < 0.15:
        lines.append(f"ERROR: {tool} failed for id={rng.randint(1000, 99999)}: timeout after 30s")
    return "\n".join(lines)


def _pasted(rng: random.Random, lang: dict[str, Any], tool: str) -> str:
    """What a user pastes below an ask: a customer's message or notes in the language, and
    lines of a log or an export, 500 to 2,000 characters."""
    size = rng.randint(500, 2_000)
    lines: list[str] = []
    while sum(len(line) + 1 for line in lines) < size:
        if rng.random() < 0.5:
            lines.append(" ".join(rng.sample(lang["context"], 3)))
        else:
            lines.append(_output(rng, tool, 1))
    return "\n".join(lines)


def session(name: str, seed: int, turns: int = 60) -> list[Record]:
    """One session of `LANGUAGES[name]`, deterministic for `seed`."""
    lang = LANGUAGES[name]
    rng = random.Random(seed)
    records: list[Record] = []
    calls = 0
    later = {turns // 4: lang["later_rules"][0], turns // 2: lang["later_rules"][1]}
    for turn in range(turns):
        ask = rng.choice(lang["asks"]).format(id=rng.randint(10000, 99999), n=rng.randint(2, 90))
        parts = [ask, *rng.sample(lang["context"], rng.randint(1, 4))]
        if turn == 0:
            parts = [lang["task"], *lang["rules"], *parts]
        if turn in later:
            parts.insert(1, later[turn])
        if turn == (2 * turns) // 3:
            parts.insert(1, lang["decision"])
        prompt = " ".join(parts)
        if rng.random() < 0.6:
            prompt += "\n\n" + _pasted(rng, lang, rng.choice(lang["tools"]))
        records.append({"role": "user", "content": prompt})
        for _ in range(rng.randint(1, 4)):
            calls += 1
            ident = f"toolu_{seed:02d}{calls:05d}"
            tool = rng.choice(lang["tools"])
            records.append(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": rng.choice(lang["notes"])},
                        {
                            "type": "tool_use",
                            "id": ident,
                            "name": tool,
                            "input": {"query": f"{tool} {rng.randint(10000, 99999)}"},
                        },
                    ],
                }
            )
            records.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": ident,
                            "content": _output(rng, tool, rng.randint(1_000, 8_000)),
                        }
                    ],
                }
            )
        records.append({"role": "assistant", "content": rng.choice(lang["answers"])})
    return records


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tests.support.rule_language_sessions DIR", file=sys.stderr)
        return 2
    folder = Path(args[0])
    folder.mkdir(parents=True, exist_ok=True)
    for seed, name in enumerate(LANGUAGES, start=1):
        print(write_records(session(name, seed), folder / f"{name}.jsonl"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
