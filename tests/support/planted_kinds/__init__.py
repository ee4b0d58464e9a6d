"""Twelve deterministic sessions that plant kinds of fact the ledger was not built around.

Written from outside the sessions the defaults were tuned on, they state people and who owns
what, e-mails and phone numbers, endpoints, env vars, config keys, keyboard shortcuts, version
constraints, branches, PR and PO numbers, deadlines with time zones, exact copy to send,
accounts not to use, the agent's questions and the user's answers, decisions and rules in
other languages, the agent's findings, and reversals (a value or decision replaced later).
Each session is abridged JSONL with a `.meta.json` (system prompt, four tools) and a
`NAME.facts.json` listing what it planted (`session` describes the fields). Each generator has
its own seed, so the files are the same byte for byte on every run:

    python -m tests.support.planted_kinds DIR

writes them all into DIR and prints each path written, and

    python -m tests.support.planted_kinds.check --window 32000 DIR/*.jsonl

replays each under abridged's defaults and the LangChain-style reference and prints, per kind,
how many planted facts each one's final request keeps verbatim (`check`).

The sessions, by module:

- `ops`: devops-handover-901 (English, tool-heavy: owners, contacts, branches, endpoints, env
  vars, pins, deadlines, two reversals by the user and one by the agent), devops-ru-907
  (Russian: owners, flags, a helm pin, a memory limit changed) and handover-note-910 (a wiki
  note of 2,300 characters pasted as the second prompt, its facts past the first 1,700).
- `support`: support-desk-902 (English, 110 short tickets and chats: contacts, exact approve
  and deny texts, accounts not to use, the agent's questions and the user's answers) and
  support-ar-906 (Arabic: a refund rule in Arabic, names, a phone, exact reply text).
- `analysis`: churn-analysis-903 (SQL tables and columns in prose, findings stated only in the
  agent's answers, a threshold changed) and vertrag-de-904 (German contract review: parties,
  a deadline in MEZ, clause wording to insert, the annex changed).
- `coding`: coding-ja-905 (Japanese, tool-heavy: owners, a JST deadline, a commit message,
  env vars, the agent's reversal) and editor-plugin-908 (156 short chats: shortcuts, engine
  pins, setting names, a formatter changed by the user).
- `accounts`: account-desk-909 and account-desk-long-911 (fifteen and sixty accounts, each
  prompt stating facts of one of five shapes, with working turns between them).
- `sweep`: late-sweep-912 (66 modules, each reply stating one fact of a rotating kind,
  two of them controls the ledger was built for).

All but the account desks, the handover note and the sweep also have a `late` turn near their
end: facts the agent states inside the reference's last twenty messages but, once a few turns
follow, outside abridged's recent tail.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.support.planted_kinds.accounts import account_desk, account_desk_long
from tests.support.planted_kinds.analysis import data, legal_de
from tests.support.planted_kinds.coding import coding_chat, coding_ja
from tests.support.planted_kinds.ops import devops, devops_ru, handover_note
from tests.support.planted_kinds.support import support, support_ar
from tests.support.planted_kinds.sweep import sweep

GENERATORS: tuple[Callable[[Path], list[Path]], ...] = (
    devops,
    support,
    data,
    legal_de,
    coding_ja,
    support_ar,
    devops_ru,
    coding_chat,
    account_desk,
    handover_note,
    account_desk_long,
    sweep,
)


def write_all(out_dir: Path) -> list[Path]:
    """Write every session into `out_dir` (created if missing); the paths written, in order."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return [path for generate in GENERATORS for path in generate(out_dir)]
