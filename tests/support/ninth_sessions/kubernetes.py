"""A Kubernetes incident as a Claude Code session log (s3_k8s_claude_code)."""

from __future__ import annotations

from pathlib import Path

from tests.support.ninth_sessions.common import Conv
from tests.support.ninth_sessions.kubectl_output import (
    APPS,
    REG,
    describe,
    get_pods,
    h,
    logs,
    pod,
)
from tests.support.ninth_sessions.kubernetes_capacity import fix_capacity
from tests.support.ninth_sessions.kubernetes_hardening import harden_services


def k8s_claude_code(out_dir: Path) -> list[Path]:
    c = Conv(303, "", [], model="claude-sonnet-4-5-20250929")

    rng = c.rng

    pods = {a: [pod(rng, a) for _ in range(rng.randint(2, 4))] for a in APPS}

    nodes = [
        (
            f"ip-10-{rng.randint(0, 3)}-{rng.randint(1, 254)}-{rng.randint(1, 254)}"
            ".eu-west-1.compute.internal"
        )
        for _ in range(6)
    ]

    c.user(
        "We have a production incident in payments-prod: checkout is returning 503s since "
        "the 1.4.2 rollout about 40 minutes ago. "
        "Please investigate. Do NOT run kubectl delete on anything in payments-prod, and "
        "don't touch the ledger-worker database "
        "migrations. Use the `prod-eu` context only."
    )

    c.call(
        "Bash",
        {
            "command": (
                "kubectl config use-context prod-eu && kubectl -n payments-prod get pods -o wide"
            ),
            "description": "List pods in payments-prod",
        },
        'Switched to context "prod-eu".\n'
        + get_pods(
            rng,
            pods,
            nodes,
            {"checkout-api": "CrashLoopBackOff", "fraud-scorer": "CrashLoopBackOff"},
        ),
        text="Let me look at the pod status first.",
    )

    c.call(
        "Bash",
        {
            "command": "helm -n payments-prod history checkout-api --max 8",
            "description": "Helm history",
        },
        (
            "REVISION\tUPDATED                 \tSTATUS    \tCHART              \tAPP "
            "VERSION\tDESCRIPTION\n"
        )
        + "\n".join(
            (
                f"{r}\tMon Feb  {r - 30} 1{r % 10}:0{r % 6}:11 "
                f"2026\t{'deployed' if r == 47 else 'superseded'}\tcheckout-api-0.{r - 20}"
                f".0\t1.{3 if r < 47 else 4}.{r % 3}\tUpgrade "
                "complete"
            )
            for r in range(40, 48)
        ),
    )

    p0 = pods["checkout-api"][0]

    c.call(
        "Bash",
        {
            "command": f"kubectl -n payments-prod describe pod {p0}",
            "description": "Describe crashing pod",
        },
        describe(rng, nodes, p0, "checkout-api", "1.4.2", "Error"),
    )

    c.call(
        "Bash",
        {
            "command": f"kubectl -n payments-prod logs {p0} --previous --tail=200",
            "description": "Previous container logs",
        },
        logs(
            rng,
            "checkout-api",
            [
                (
                    "2026-02-10T10:41:09.882Z ERROR checkout-api config: required key "
                    "PAYMENT_PROVIDER_TIMEOUT_MS missing"
                ),
                (
                    "panic: config validation failed: 1 error(s): PAYMENT_PROVIDER_TIMEOUT_MS "
                    "is required"
                ),
                "",
                "goroutine 1 [running]:",
                "main.main()",
                "\t/src/cmd/checkout-api/main.go:64 +0x3c5",
            ],
        ),
    )

    c.say(
        f"The `checkout-api` pods on image `{REG}/checkout-api:1.4.2` crash at start-up: "
        "`PAYMENT_PROVIDER_TIMEOUT_MS` is required "
        "by 1.4.2 but missing from the `checkout-api-config` ConfigMap. Helm revision 47 "
        "deployed chart `checkout-api-0.27.0`. "
        "`fraud-scorer` is also in CrashLoopBackOff; checking it next."
    )

    p1 = pods["fraud-scorer"][0]

    c.call(
        "Bash",
        {
            "command": (
                f"kubectl -n payments-prod describe pod {p1} | sed -n '/State:/,/Restart "
                "Count/p;/Events:/,$p'"
            ),
            "description": "fraud-scorer state",
        },
        describe(rng, nodes, p1, "fraud-scorer", "2.9.0", "OOMKilled"),
    )

    c.call(
        "Bash",
        {
            "command": (
                "kubectl -n payments-prod top pod -l app.kubernetes.io/name=fraud-scorer "
                "--containers"
            ),
            "description": "memory usage",
        },
        "POD                                  NAME           CPU(cores)   MEMORY(bytes)\n"
        + "\n".join(
            f"{p:<36} fraud-scorer   {rng.randint(200, 900)}m         {rng.randint(480, 511)}Mi"
            for p in pods["fraud-scorer"]
        ),
    )

    c.say(
        "`fraud-scorer` (`2.9.0`) is a different problem: `OOMKilled` (exit 137) with a "
        "`512Mi` limit, and live usage sits at 480–511Mi. "
        "That predates the checkout rollout, so I'd treat it separately."
    )

    c.user(
        "Fix checkout first. Add the missing key to the values file, timeout 2500 ms, and "
        "roll it out with helm. Show me the diff before you apply."
    )

    c.call(
        "Read",
        {"file_path": "/home/ops/infra/charts/checkout-api/values-prod-eu.yaml"},
        "\n".join(
            f"{k + 1:>6}\t{line}"
            for k, line in enumerate(
                [
                    "image:",
                    f"  repository: {REG}/checkout-api",
                    "  tag: 1.4.2",
                    "  pullPolicy: IfNotPresent",
                    "replicaCount: 4",
                    "",
                    "resources:",
                    "  limits:",
                    '    cpu: "1"',
                    "    memory: 512Mi",
                    "  requests:",
                    "    cpu: 250m",
                    "    memory: 256Mi",
                    "",
                    "config:",
                    "  LOG_LEVEL: info",
                    "  KAFKA_BROKERS: b-1.payments-msk:9092,b-2.payments-msk:9092",
                    "  PAYMENT_PROVIDER: adyen",
                    "  PAYMENT_PROVIDER_URL: https://checkout-live.adyenpayments.com/checkout/v71",
                    '  RETRY_MAX_ATTEMPTS: "3"',
                    '  FEATURE_3DS2_FRICTIONLESS: "true"',
                    "",
                    "podDisruptionBudget:",
                    "  minAvailable: 2",
                    "",
                    "autoscaling:",
                    "  enabled: true",
                    "  minReplicas: 4",
                    "  maxReplicas: 16",
                    "  targetCPUUtilizationPercentage: 65",
                    "",
                    "ingress:",
                    "  enabled: true",
                    "  className: nginx-internal",
                    "  hosts:",
                    "    - host: checkout.payments.internal.acme-pay.io",
                    '      paths: ["/"]',
                ]
                + [
                    (
                        f"# revision note {k}: {rng.choice(['bumped', 'pinned', 'reverted'])} "
                        f"{rng.choice(APPS)} "
                        f"{rng.randint(1, 3)}.{rng.randint(0, 9)}.{rng.randint(0, 9)}"
                    )
                    for k in range(30)
                ]
            )
        ),
    )

    c.call(
        "Edit",
        {
            "file_path": "/home/ops/infra/charts/checkout-api/values-prod-eu.yaml",
            "old_string": '  RETRY_MAX_ATTEMPTS: "3"',
            "new_string": '  RETRY_MAX_ATTEMPTS: "3"\n  PAYMENT_PROVIDER_TIMEOUT_MS: "2500"',
        },
        "The file /home/ops/infra/charts/checkout-api/values-prod-eu.yaml has been updated.",
    )

    c.call(
        "Bash",
        {
            "command": (
                "cd /home/ops/infra && helm diff upgrade checkout-api charts/checkout-api \\\n "
                " -n payments-prod \\\n  -f charts/checkout-api/values-prod-eu.yaml \\\n  "
                "--set image.tag=1.4.2 \\\n  --context 3"
            ),
            "description": "helm diff",
        },
        (
            "payments-prod, checkout-api-config, ConfigMap (v1) has changed:\n  # Source: "
            "checkout-api/templates/configmap.yaml\n  apiVersion: v1\n  kind: ConfigMap\n  "
            "data:\n    PAYMENT_PROVIDER_URL: "
            '"https://checkout-live.adyenpayments.com/checkout/v71"\n    RETRY_MAX_ATTEMPTS: '
            '"3"\n+   PAYMENT_PROVIDER_TIMEOUT_MS: "2500"\npayments-prod, checkout-api, '
            "Deployment (apps) has changed:\n-         checksum/config: "
        )
        + h(rng, 64)
        + "\n+         checksum/config: "
        + h(rng, 64),
    )

    c.say(
        'Diff: one new key `PAYMENT_PROVIDER_TIMEOUT_MS: "2500"` in '
        "`checkout-api-config`, plus the config checksum annotation on the Deployment "
        "(which triggers the rollout). Nothing else changes. OK to apply?"
    )

    c.user("Yes, apply. Use --atomic with a 10 minute timeout.")

    c.call(
        "Bash",
        {
            "command": (
                "cd /home/ops/infra && helm upgrade checkout-api charts/checkout-api \\\n  -n "
                "payments-prod \\\n  -f charts/checkout-api/values-prod-eu.yaml \\\n  --set "
                "image.tag=1.4.2 \\\n  --atomic --timeout 10m --wait"
            ),
            "description": "helm upgrade",
        },
        (
            'Release "checkout-api" has been upgraded. Happy Helming!\nNAME: '
            "checkout-api\nLAST DEPLOYED: Tue Feb 10 11:02:44 2026\nNAMESPACE: "
            "payments-prod\nSTATUS: deployed\nREVISION: 48\nTEST SUITE: None"
        ),
    )

    c.call(
        "Bash",
        {
            "command": (
                "kubectl -n payments-prod rollout status deploy/checkout-api --timeout=5m && "
                "kubectl -n payments-prod get pods -l app.kubernetes.io/name=checkout-api"
            ),
            "description": "rollout status",
        },
        (
            'Waiting for deployment "checkout-api" rollout to finish: 2 of 4 updated replicas '
            'are available...\ndeployment "checkout-api" successfully rolled out\n'
        )
        + get_pods(rng, pods, nodes, {}).split("\n")[0]
        + "\n"
        + "\n".join(x for x in get_pods(rng, pods, nodes, {}).split("\n")[1:] if "checkout" in x),
    )

    c.say(
        'Revision 48 is deployed and `deployment "checkout-api" successfully rolled out`; '
        "all 4 pods are `1/1 Running`. 503s should stop now."
    )

    fix_capacity(c, nodes)

    harden_services(c)

    return [
        c.write_claude_code(
            out_dir,
            "s3_k8s_claude_code",
            cwd="/home/ops/infra",
            session="9b3e1f42-5d7a-4c6e-8f21-0a9c4b7d2e13",
        )
    ]
