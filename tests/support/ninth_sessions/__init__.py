"""Seven deterministic sessions, written after the ledger changes of 2026-11-28 as a check the
library was not tuned on.

They come in the three formats `abridged simulate` imports: abridged JSONL with a `.meta.json`
beside it, OpenAI chat-completions messages (with a `.meta.json` holding the tools), and a Claude
Code session log. Each session states its rules once, early, and later turns lean on them. Each
generator has its own seed, so the files are the same byte for byte on every run:

    python -m tests.support.ninth_sessions DIR

writes them all into DIR and prints each path written.

The sessions, and what each one probes:

- s1_notebook_pandas (abridged JSONL, `notebook`): data analysis in a Jupyter notebook; wide
  pandas tables, tracebacks as errors, a statsmodels summary, and column names and figures in
  prose.
- s2_crm_renewals (OpenAI chat, `crm`): a CRM renewals agent; parallel account, contract, ticket
  and usage lookups returning nested JSON, amounts in two currencies, a discount ceiling and a
  do-not-contact rule.
- s3_k8s_claude_code (Claude Code log, `kubernetes`): a Kubernetes incident; kubectl and helm
  output, multi-line commands and heredocs, CrashLoopBackOff and OOMKilled pods, and a rule
  against deleting anything in production.
- s4_legal_research (abridged JSONL, `legal`): legal research; long opinions, URLs with query
  strings, docket numbers, reporter citations and pin cites that must survive verbatim.
- s5_ecommerce_es_pt (OpenAI chat, `ecommerce`): Spanish and Portuguese e-commerce support;
  order and tracking JSON, amounts in `1.234,56` form, addresses, and a refund limit needing
  approval.
- s6_code_review_thinking (abridged JSONL, thinking, `review`): a code review of GitHub PRs;
  signed thinking before tool calls, diffs, CI logs, SHAs and `file:line` references.
- s7_research_browsing (abridged JSONL, `research`): a research and browsing agent; many search
  results and fetched pages, long URLs, exact quotes with numbers and years, and a rule to cite
  primary sources only.

The module named for each session holds its generator; the longer sessions keep their tool
output and later phases beside it (`notebook_output`, `notebook_deep_dives`, `crm_records`,
`kubectl_output`, `kubernetes_capacity`, `kubernetes_hardening`, `legal_sources`,
`ecommerce_orders`, `review_diffs`, `research_sources`). `common` holds the conversation
builder and its three writers.
"""
