"""Operations session: an on-call SRE agent in a payments outage (sre-incident-801)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from tests.support.fourteen_sessions.common import (
    ENGLISH,
    IdGen,
    out_path,
    prose,
    text,
    tool_result,
    tool_use,
    write_abridged,
)

SRE_STEPS = 28
SRE_SERVICES = [
    "payments-api",
    "ledger-writer",
    "settlement-worker",
    "fx-rates",
    "card-auth",
    "refunds-api",
    "payouts-cron",
    "webhook-relay",
]
SRE_HOSTS = [f"pg-replica-{i}.prod.internal" for i in range(1, 5)] + [
    "pg-ledger-0.prod.internal",
    "redis-sessions-1.prod.internal",
    "kafka-2.prod.internal",
    "vault.prod.internal",
]
SRE_NS = ["payments", "ledger", "edge", "batch"]

SRE_SYSTEM = (
    "You are the on-call SRE assistant for the payments platform. You have shell access "
    "to the bastion (kubectl, psql, curl, jq) and a Prometheus query tool. Work carefully, "
    "state what you changed, and keep the incident channel updated."
)
SRE_TOOLS: list[dict[str, Any]] = [
    {
        "name": "bash",
        "description": "Run a shell command on the bastion.",
        "input_schema": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
    {
        "name": "prom_query",
        "description": "Run a PromQL range query.",
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "range": {"type": "string"},
                "step": {"type": "string"},
            },
            "required": ["query"],
        },
    },
    {
        "name": "post_status",
        "description": "Post an update to the incident channel.",
        "input_schema": {
            "type": "object",
            "properties": {
                "incident": {"type": "string"},
                "severity": {"type": "string"},
                "summary": {"type": "string"},
            },
        },
    },
]

SRE_FIRST_PROMPT = (
    "We have a SEV2: card payments are timing out since about 09:40. "
    "Rules for this incident: never fail over pg-ledger-0.prod.internal during business hours "
    "without my OK, "
    "always post a status update after each mitigation, and don't scale settlement-worker "
    "above 12 replicas. "
    "Start with the payments namespace."
)
SRE_ASKS = [
    "Check {svc} in {ns}, something is off with its connections.",
    "Can you look at the logs of {svc} again, last 30 minutes?",
    "What does replication lag look like now? Focus on {svc}'s replica.",
    "Patch the pool size for {svc} and tell me what changed.",
    "Run the endpoint check for {svc}.",
    "Is {svc} healthy from inside the cluster?",
    "Compare {svc} with what we saw an hour ago.",
    "Post an update, then continue with {svc}.",
]


def _ts(i: int) -> str:
    return (
        f"2025-10-14T{9 + i // 3600:02d}:{(i // 60) % 60:02d}:{i % 60:02d}.{(i * 37) % 1000:03d}Z"
    )


def _log_output(rnd: random.Random, svc: str, n: int, err_every: int) -> str:
    lines = []
    for i in range(n):
        t = _ts(rnd.randint(0, 20000))
        if i % err_every == err_every - 1:
            kind = rnd.choice(
                [
                    f"ERROR [{svc}] psycopg.errors.QueryCanceled: canceling statement due to "
                    f"statement timeout (query_id={rnd.randint(10**8, 10**9)})",
                    f"ERROR [{svc}] redis.exceptions.ConnectionError: Error 111 connecting to "
                    "redis-sessions-1.prod.internal:6379. Connection refused.",
                    f"WARN  [{svc}] upstream {rnd.choice(SRE_HOSTS)}:5432 slow: "
                    f"p99={rnd.randint(800, 4000)}ms",
                    f"ERROR [{svc}] TimeoutError: settlement batch {rnd.randint(1000, 9999)} "
                    f"exceeded {rnd.choice([30, 45, 60])}s",
                ]
            )
        else:
            kind = (
                f"INFO  [{svc}] {rnd.choice(['POST', 'GET'])} "
                f"/v2/{rnd.choice(['charges', 'refunds', 'payouts', 'balances'])}"
                f" {rnd.choice([200, 200, 200, 201, 202, 409, 502])} {rnd.randint(4, 900)}ms "
                f"trace={rnd.getrandbits(64):016x}"
            )
        lines.append(f"{t} {kind}")
    return "\n".join(lines)


def _pods_output(rnd: random.Random) -> str:
    rows = ["NAME                                   READY   STATUS             RESTARTS        AGE"]
    for svc in SRE_SERVICES:
        for _ in range(rnd.randint(2, 4)):
            st = rnd.choice(["Running"] * 6 + ["CrashLoopBackOff", "OOMKilled"])
            rows.append(
                f"{svc}-{rnd.getrandbits(32):08x}-{rnd.getrandbits(20):05x}   "
                f"{'1/1' if st == 'Running' else '0/1'}     {st:<18} "
                f"{rnd.randint(0, 40):<15} {rnd.randint(1, 72)}h"
            )
    return "\n".join(rows)


def _command(rnd: random.Random, step: int, svc: str, ns: str) -> tuple[str, str, bool]:
    kind = step % 6
    if kind == 0:
        cmd = (
            f"cd /srv/runbooks/{svc} && \\\n  kubectl -n {ns} logs deploy/{svc} --since=30m "
            f"--tail=200 | grep -v healthz > /tmp/incident/{svc}-{step}.log; "
            f"tail -n 80 /tmp/incident/{svc}-{step}.log"
        )
        return cmd, _log_output(rnd, svc, rnd.randint(40, 120), rnd.randint(5, 12)), False
    if kind == 1:
        cmd = (
            f"kubectl -n {ns} get pods -o wide \\\n  --selector=app.kubernetes.io/part-of=payments"
        )
        return cmd, _pods_output(rnd), False
    if kind == 2:
        host = rnd.choice(SRE_HOSTS[:5])
        cmd = (
            f"export PGHOST={host} PGDATABASE=orders\n"
            "psql -X -f /srv/runbooks/sql/replication_lag.sql "
            f"-v threshold={rnd.randint(5, 60)}"
        )
        out = "\n".join(
            f" {h:<32} | {rnd.randint(0, 90000):>8} | {rnd.choice(['streaming', 'catchup'])}"
            for h in SRE_HOSTS[:5]
        )
        header = " application_name                 | lag_bytes | state\n"
        return cmd, header + out + f"\n({5} rows)", False
    if kind == 3:
        cmd = (
            f"cat <<'EOF' > /srv/runbooks/{svc}/patch-{step}.yaml\nspec:\n  template:\n"
            f"    spec:\n      containers:\n      - name: {svc}\n        env:\n"
            f'        - name: POOL_SIZE\n          value: "{rnd.choice([20, 30, 40, 60])}"\nEOF\n'
            f"kubectl -n {ns} patch deploy/{svc} "
            f"--patch-file /srv/runbooks/{svc}/patch-{step}.yaml"
        )
        if rnd.random() < 0.3:
            return (
                cmd,
                f'Error from server (Forbidden): deployments.apps "{svc}" is forbidden: '
                'User "oncall-bot" cannot patch resource "deployments" in API group "apps" '
                f'in the namespace "{ns}"',
                True,
            )
        return cmd, f"deployment.apps/{svc} patched", False
    if kind == 4:
        cmd = (
            f"cd /srv/runbooks && \\\n  ./bin/check-endpoints.sh --env prod --service {svc} \\\n"
            f"  --out /var/tmp/incident/endpoints-{svc}.json"
        )
        out = "\n".join(
            f"{h}:{rnd.choice([5432, 6379, 9092, 8200])}  "
            f"{rnd.choice(['ok', 'ok', 'ok', 'timeout', 'refused'])}  {rnd.randint(1, 3000)}ms"
            for h in SRE_HOSTS
        )
        return cmd, out, False
    cmd = (
        f"curl -sS -m 5 http://{svc}.{ns}.svc.cluster.local:8080/internal/health | jq .\n"
        f"# compare with /srv/runbooks/{svc}/expected-health.json"
    )
    body = {
        "status": rnd.choice(["ok", "degraded"]),
        "db": {
            "primary": "pg-ledger-0.prod.internal:5432",
            "replica_lag_ms": rnd.randint(0, 90000),
        },
        "redis": rnd.choice(["ok", "timeout"]),
        "version": f"2.{rnd.randint(10, 40)}.{rnd.randint(0, 9)}",
    }
    return cmd, json.dumps(body, indent=2), False


def _reply(rnd: random.Random, svc: str) -> str:
    host = rnd.choice(SRE_HOSTS[:5])
    port = rnd.choice([5432, 6432])
    lines = [
        f"The {svc} pods are back to {rnd.randint(2, 4)}/{rnd.randint(4, 6)} ready; "
        f"lag on {host}:{port}/orders is {rnd.randint(1, 60)} seconds now.",
        f"Dashboard: grafana.ops.internal:3000/d/pay-{rnd.randint(100, 999)}/{svc} "
        f"shows p99 at {rnd.randint(300, 2500)} ms.",
        f"The worker connects with postgres://svc_{svc.replace('-', '_')}@{host}:{port}/ledger "
        f"and retries via settings.PAYMENTS_MAX_RETRIES={rnd.randint(3, 9)}.",
        f"We run images {rnd.choice(['1.27', '1.28', '1.29'])}.{rnd.randint(0, 9)}"
        f"/{rnd.choice(['1.29', '1.30'])}.{rnd.randint(0, 9)} across the two node pools.",
        f"I opened tickets/INC-{rnd.randint(4000, 4999)} and linked "
        f"runbooks/PAY-{rnd.randint(100, 999)} for the follow-up.",
        f"JVM flags on the settlement workers are -Dpool.size={rnd.choice([20, 30, 40])} "
        f"-Dsettle.batch={rnd.choice([250, 500, 1000])}, "
        f"retry budget {rnd.randint(10, 90)} per minute.",
        "Kafka lag on kafka-2.prod.internal:9092/payments.settled dropped from "
        f"{rnd.randint(5000, 90000)} to {rnd.randint(0, 4000)} messages.",
        f"Rolled {svc} from commit/{rnd.getrandbits(40):010x} to the previous build; "
        f"release refs/tags/v3.{rnd.randint(10, 20)}.{rnd.randint(0, 9)} stays pinned.",
    ]
    rnd.shuffle(lines)
    return " ".join(lines[: rnd.randint(3, 5)]) + " " + prose(rnd, ENGLISH, rnd.randint(1, 3))


def sre_incident(out_dir: Path) -> list[Path]:
    """sre-incident-801 (abridged JSONL): an on-call agent working a payments outage.

    Multi-line shell commands (`cd DIR && \\` then the real command, heredocs), kubectl and log
    outputs of 40-200 lines with error lines, a Prometheus query tool, and prose replies that
    name endpoints the way SREs write them: `pg-replica-2.prod.internal:5432/orders`,
    `grafana.ops.internal:3000/d/...`, `postgres://svc@host:5432/db`, "tested on
    1.27.3/1.28.1", `-Dpool.size=40`, `settings.PAYMENTS_MAX_RETRIES=5`, tickets
    `tickets/INC-4412`. The on-call rules are stated once, in the first prompt.
    """
    rnd = random.Random(801)
    ids = IdGen(rnd)
    msgs: list[dict[str, Any]] = [{"role": "user", "content": SRE_FIRST_PROMPT}]
    for step in range(SRE_STEPS):
        svc = rnd.choice(SRE_SERVICES)
        ns = rnd.choice(SRE_NS)
        if step:
            msgs.append({"role": "user", "content": rnd.choice(SRE_ASKS).format(svc=svc, ns=ns)})
        # 1-3 tool steps per turn
        for k in range(rnd.randint(1, 3)):
            tid = ids()
            if k == 1 and rnd.random() < 0.5:
                call = tool_use(
                    tid,
                    "prom_query",
                    query="histogram_quantile(0.99, sum(rate(http_server_duration_seconds_bucket"
                    f'{{service="{svc}"}}[5m])) by (le))',
                    range=rnd.choice(["30m", "1h", "3h"]),
                    step=rnd.choice(["15s", "30s", "1m"]),
                )
                result = "\n".join(
                    f"{_ts(rnd.randint(0, 20000))} {rnd.random() * 3:.3f}"
                    for _ in range(rnd.randint(20, 60))
                )
                err = False
            elif k == 2 and rnd.random() < 0.5:
                call = tool_use(
                    tid,
                    "post_status",
                    incident=f"INC-{rnd.randint(4000, 4999)}",
                    severity="SEV2",
                    summary=f"{svc}: mitigation {step}, pool size adjusted",
                )
                result, err = "posted to #inc-payments", False
            else:
                cmd, result, err = _command(rnd, step * 3 + k, svc, ns)
                call = tool_use(tid, "bash", command=cmd)
            leads = [
                "Let me check.",
                f"Looking at {svc}.",
                "Next I'll verify the replicas.",
                "Checking the metrics.",
            ]
            pre = [text(rnd.choice(leads))] if rnd.random() < 0.6 else []
            msgs.append({"role": "assistant", "content": [*pre, call]})
            msgs.append({"role": "user", "content": [tool_result(tid, result, is_error=err)]})
        msgs.append({"role": "assistant", "content": [text(_reply(rnd, svc))]})

    msgs.append(
        {
            "role": "user",
            "content": "Business hours are over now. Before we consider a failover: remind me "
            "which rules I set at the start, and which replica and dashboard you'd use.",
        }
    )
    recap = (
        "You asked me never to fail over pg-ledger-0.prod.internal during business hours "
        "without your OK, to post a status update after each mitigation, and not to scale "
        "settlement-worker above 12 replicas. "
    )
    msgs.append({"role": "assistant", "content": [text(recap + _reply(rnd, "ledger-writer"))]})

    return write_abridged(
        out_path(out_dir, "sre-incident-801.jsonl"),
        msgs,
        system=SRE_SYSTEM,
        tools=SRE_TOOLS,
        model="claude-sonnet-4-5",
    )
