"""Analysis sessions: an English churn analysis over the warehouse, a German contract review."""

from __future__ import annotations

from pathlib import Path

from tests.support.planted_kinds.session import PlantedSession


def data(out: Path) -> list[Path]:
    """Data analysis, English: SQL tables and columns in prose, the agent's findings stated only
    in its answers, a superseded threshold."""
    s = PlantedSession("churn-analysis-903", 903, "You are a data analyst with warehouse access.")
    s.user("We need a churn analysis for the board pack. Start with the accounts table.")
    s.plant(
        "sql", "user", "analytics.fct_subscriptions", "dim_accounts.signup_channel", "cancelled_at"
    )
    s.user(
        "Use analytics.fct_subscriptions joined to dim_accounts on account_id; the channel is "
        "dim_accounts.signup_channel and churn is a non-null cancelled_at within the month."
    )
    s.say("OK.")
    s.plant("sql", "agent", "stg_stripe__invoices", "invoice_status", "amount_due_cents")
    count = "select count(*) from analytics.fct_subscriptions"
    s.call("Querying.", "query", {"sql": count}, s.rows(80))
    s.say(
        "Revenue comes from stg_stripe__invoices, where invoice_status separates paid from void; "
        "amounts are in amount_due_cents so I divide by 100."
    )
    s.plant("final_answer", "agent", "7.4%", "Q3 2025", "SMB-EMEA", "1,284 accounts", "€412k")
    churn = "select segment, churned from churn_q3"
    s.call("Querying churn.", "query", {"sql": churn}, s.rows(120))
    s.say(
        "Finding: monthly logo churn in Q3 2025 was 7.4%, driven by SMB-EMEA, which lost 1,284 "
        "accounts and €412k of MRR."
    )
    s.reversal("threshold of 30 days", "threshold of 45 days", "user")
    s.user("Count an account as churned after a threshold of 30 days without payment.")
    s.say("Using 30 days.")
    for k in range(12):
        s.filler_turn(k)
    s.user("Finance says use a threshold of 45 days, not 30; rerun with that.")
    s.say("Rerunning with 45 days.")
    s.plant("final_answer", "agent", "6.9%")
    s.say("With 45 days the Q3 churn falls to 6.9%; SMB-EMEA still leads.")
    for k in range(12, 29):
        s.filler_turn(k)
    s.late(
        "What did the cohort query show?",
        "The cohort query joins fct_subscriptions to dim_plans on plan_key; the worst cohort is "
        "Starter-Annual, and Nadia Rahman in RevOps owns that plan. Churn is 9.1% there.",
        [
            ("sql", "dim_plans"),
            ("sql", "plan_key"),
            ("final_answer", "Starter-Annual"),
            ("person", "Nadia Rahman"),
            ("final_answer", "9.1%"),
        ],
    )
    for k in range(29, 31):
        s.filler_turn(k)
    s.user(
        "For the board pack: which tables and columns did we use, the Q3 churn figure, the "
        "segment, accounts lost, MRR lost, and the churn threshold?"
    )
    s.say("Summary follows.")
    return s.write(out)


def legal_de(out: Path) -> list[Path]:
    """Legal review, German, chat-heavy: parties, deadlines with time zones, email and phone,
    exact clause wording to insert, a reversal of the annex."""
    s = PlantedSession(
        "vertrag-de-904", 904, "Du bist ein juristischer Assistent. Antworte auf Deutsch."
    )
    s.user("Wir prüfen heute den Rahmenvertrag mit der Kessler Logistik GmbH.")
    s.say("Gern, ich beginne mit der Gliederung.")
    s.plant("person", "user", "Dr. Anna Vogt", "Jens Hartmann", "Kessler Logistik GmbH")
    s.plant("email", "user", "a.vogt@kanzlei-vogt.de")
    s.plant("phone", "user", "+49 89 2180 4471")
    s.plant("deadline_tz", "user", "Freitag, 12 Uhr MEZ")
    s.plant(
        "quoted",
        "user",
        "Die Haftung ist auf den vorhersehbaren, vertragstypischen Schaden begrenzt.",
    )
    s.plant("section", "user", "§ 7 Abs. 3")
    s.user(
        "Ansprechpartnerin auf unserer Seite ist Dr. Anna Vogt (a.vogt@kanzlei-vogt.de, "
        "+49 89 2180 4471); bei Kessler verhandelt Jens Hartmann. Die Stellungnahme muss bis "
        'Freitag, 12 Uhr MEZ raus. In § 7 Abs. 3 fügst du wörtlich ein: "Die Haftung ist auf den '
        'vorhersehbaren, vertragstypischen Schaden begrenzt."'
    )
    s.say("Verstanden.")
    s.plant(
        "decision_nonen",
        "agent",
        "Ich habe mich für die Schiedsklausel der DIS statt der ICC entschieden.",
    )
    s.say(
        "Ich habe mich für die Schiedsklausel der DIS statt der ICC entschieden. "
        "Die DIS-Regeln sind kürzer und günstiger."
    )
    s.reversal("Die Preisliste steht in Anlage B", "maßgeblich ist Anlage C", "user")
    s.user("Die Preisliste steht in Anlage B, bitte dort abgleichen.")
    s.say("Ich gleiche mit Anlage B ab.")
    for k in range(40):
        s.chat_turn(k)
    s.user("Korrektur: doch nicht Anlage B, maßgeblich ist Anlage C (Stand März).")
    s.say("Alles klar, ich verwende Anlage C.")
    s.plant(
        "final_answer",
        "agent",
        "Vertragsstrafe von 0,5 % pro Woche",
        "Kündigungsfrist von drei Monaten zum Quartalsende",
    )
    s.say(
        "Ergebnis: Die Vertragsstrafe von 0,5 % pro Woche ist zu hoch; wir schlagen eine "
        "Kündigungsfrist von drei Monaten zum Quartalsende vor."
    )
    for k in range(40, 140):
        s.chat_turn(k)
    s.late(
        "Was hat die Gegenseite noch geschrieben?",
        "Herr Hartmann schlägt vor, dass Frau Petra Lindner die Abnahme übernimmt; "
        "Gerichtsstand soll München sein und die Schlussformel lautet "
        '"Mündliche Nebenabreden bestehen nicht."',
        [("person", "Petra Lindner"), ("quoted", "Mündliche Nebenabreden bestehen nicht.")],
    )
    for k in range(140, 146):
        s.chat_turn(k)
    s.user(
        "Fasse zusammen: Ansprechpartner, Kontakt, Frist, der Wortlaut für § 7 Abs. 3, welche "
        "Anlage, und unser Ergebnis zu Strafe und Kündigung."
    )
    s.say("Zusammenfassung folgt.")
    return s.write(out)
