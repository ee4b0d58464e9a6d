"""Fourteen deterministic sessions in the three formats `abridged simulate` imports.

The formats are abridged JSONL (with a `.meta.json` beside it when the session has a system
prompt, tools or a model), OpenAI chat-completions messages, and Claude Code session logs.
They were written to probe the library from outside the sessions its defaults were chosen on. Each
one states its rules or preferences once, early, and its last user turn asks for them back.
Each generator has its own seed, so the files are the same byte for byte on every run:

    python -m tests.support.fourteen_sessions DIR

writes them all into DIR and prints each path written.

The sessions, and what each one probes:

- sre-incident-801 (abridged JSONL, `ops`): an on-call agent in a payments outage; multi-line
  shell commands and heredocs, 40-200 line kubectl and log outputs, and prose naming
  `host:port/db` endpoints, versions, JVM flags and tickets.
- ja-shop-802 (OpenAI chat, `support`): a Japanese shop's support agent; parallel
  order/shipment/payment lookups and amounts, points and days written straight after the
  words, without spaces.
- sheets-close-803 (abridged JSONL, `finance`): a month-end close; CSV ranges, journal rows,
  deeply nested `batch_update` requests, Airtable field names with spaces, and amounts in
  European and ISO formats with short dates.
- gh-triage-804 (Claude Code log, `coding`): a triage day through the GitHub MCP server;
  signed thinking, TodoWrite, multi-line Bash, failing runs, and npm pins, tags and commits
  in prose.
- browser-805 (abridged JSONL, `browser`): a browser agent comparing trips; 350-900 character
  URLs, 40-120 KB accessibility snapshots, PNG screenshots, and replies quoting the URL.
- telco-plans-806 (OpenAI chat, `chats`): a mobile operator's desk in four languages; parallel
  tariff-API calls with plan codes, MSISDNs, dates and ticket ids, and JSON bills.
- contract-807 (OpenAI chat, no tools, `documents`): a contract review; pasted clauses of
  1,500 to 9,000 characters and redlines quoting clause numbers, amounts and dates.
- notebook-808 (abridged JSONL, thinking, `notebook`): a Jupyter churn analysis; signed
  thinking before each step, multi-line cells, tracebacks as errors, plots as image results,
  and named metrics.
- tf-migrate-809 (Claude Code log, `infra`): a Terraform state migration; 300-1,500 line
  plans, `cd DIR && \\` commands with inline `TF_VAR_` secrets, failing applies, and ARNs,
  provider pins and state keys in prose.
- quick-chat-810 (OpenAI chat, no tools, `chats`): 900 one-line exchanges, each naming one
  port, flag, version, env var, endpoint or pin.
- handover-811 (abridged JSONL, thinking, `documents`): a 90,000-character CSV paste with a
  PDF `document` block, then 70 short questions about single accounts.
- audit-fanout-812 (Claude Code log, `coding`): a security audit; 8-16 parallel calls per
  reply with results out of order, some failing, some screenshots, and findings naming CVEs,
  versions, files and lines.
- eu-returns-813 (abridged JSONL, `support`): a returns desk in German, French and Spanish;
  long e-mails with European dates and amounts, IBAN fragments and tracking numbers, and a
  one-line SMS `body`.
- proxy-recorded-814 (abridged JSONL, `ci`): a CI agent's traffic as a logging proxy recorded
  it; a `"\\n\\n"` text block before a tool call, and the empty `end_turn` reply followed by
  "continue".

`common` holds the writers and helpers the generators share.
"""
