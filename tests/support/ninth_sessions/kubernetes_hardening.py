"""The Kubernetes session's second half: auditing each service's PDB, probes and requests,
then the PR."""

from __future__ import annotations

from tests.support.ninth_sessions.common import Conv
from tests.support.ninth_sessions.kubectl_output import (
    REG,
    h,
    pod,
)


def harden_services(c: Conv) -> None:
    rng = c.rng
    for k, app in enumerate(
        ["webhook-relay", "invoice-renderer", "ledger-worker", "checkout-api", "fraud-scorer"]
    ):
        tag = f"{rng.randint(1, 3)}.{rng.randint(0, 12)}.{rng.randint(0, 9)}"
        c.user(
            rng.choice(
                [
                    (
                        f"Next, audit {app}: check its PodDisruptionBudget, probes and "
                        "resource requests against actual usage over 7 days, and propose "
                        "values."
                    ),
                    (
                        f"Check {app} for the same class of problem — config keys required by "
                        "the running image that aren't in its ConfigMap."
                    ),
                    (
                        f"Review {app}'s HPA and PDB; I want minAvailable to never block node "
                        "drains. Only propose changes, don't apply them."
                    ),
                ]
            )
        )
        c.call(
            "Bash",
            {
                "command": (
                    "kubectl -n payments-prod get deploy,hpa,pdb -l "
                    f"app.kubernetes.io/name={app} -o yaml | head -150"
                ),
                "description": "manifests",
            },
            "\n".join(
                [
                    (
                        f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {app}\n  "
                        "namespace: payments-prod\n  labels:\n    app.kubernetes.io/version: "
                        f'"{tag}"\n    helm.sh/chart: '
                        f"{app}-0.{rng.randint(10, 40)}.{rng.randint(0, 9)}\nspec:\n  "
                        f"replicas: {rng.randint(2, 6)}\n  strategy:\n    rollingUpdate:\n     "
                        " maxSurge: 25%\n      maxUnavailable: 0\n  template:\n    spec:\n    "
                        f"  containers:\n      - name: {app}\n        image: {REG}/{app}:{tag}\n "
                        "       envFrom:\n        - configMapRef:\n            name: "
                        f"{app}-config\n        resources:\n          limits:\n            "
                        'cpu: "1"\n            memory: '
                        f"{rng.choice(['256Mi', '512Mi', '768Mi'])}\n          requests:\n     "
                        f"       cpu: {rng.choice(['50m', '100m', '200m'])}\n            "
                        "memory: 128Mi"
                    )
                ]
                + [
                    (
                        "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  "
                        f"name: {app}\nspec:\n  minAvailable: {rng.choice([1, 2, '100%'])}\n  "
                        f"selector:\n    matchLabels:\n      app.kubernetes.io/name: {app}"
                    )
                ]
                + [
                    (
                        f"# managedFields entry {j}: manager=helm operation=Update "
                        f"time=2026-0{rng.randint(1, 2)}-{rng.randint(10, 28)}T0"
                        f"{rng.randint(0, 9)}:{rng.randint(10, 59)}:00Z "
                        f"fieldsV1 {{f:spec: {{f:replicas: {{}}, f:template: {{}}}}}}"
                    )
                    for j in range(25)
                ]
            ),
        )
        q = (
            "sum by (pod) "
            f'(rate(container_cpu_usage_seconds_total{{namespace="payments-prod",container="'
            f'{app}"}}[5m]))'
        )
        c.call(
            "Bash",
            {
                "command": (
                    "curl -s -G 'http://prometheus.observability:9090/api/v1/query_range' "
                    f"--data-urlencode 'query={q}' --data-urlencode "
                    "'start=2026-02-03T00:00:00Z' --data-urlencode 'end=2026-02-10T00:00:00Z' "
                    "--data-urlencode 'step=1h' | jq -r '.data.result[] | .metric.pod + \" \" "
                    "+ ([.values[][1] | tonumber] | max | tostring)'"
                ),
                "description": "7d CPU max",
            },
            "\n".join(f"{pod(rng, app)} {rng.uniform(0.02, 0.9):.6f}" for _ in range(30)),
        )
        if k == 2:
            c.call(
                "Bash",
                {
                    "command": (
                        f"kubectl -n payments-prod exec deploy/{app} -- /app/{app} config check"
                    ),
                    "description": "config check",
                },
                (
                    "error: unknown flag: --strict-schema\nError: config check failed: "
                    'key LEDGER_BATCH_SIZE has invalid value "5k": strconv.Atoi: parsing '
                    '"5k": invalid syntax\n'
                    "command terminated with exit code 1",
                    True,
                ),
            )
            c.say(
                f'`{app}` has a latent config bug: `LEDGER_BATCH_SIZE` is `"5k"`, which '
                'the binary can\'t parse (`strconv.Atoi: parsing "5k": invalid syntax`). '
                "It only reads that key on the batch path, which is why it hasn't crashed "
                "yet. I won't touch its migrations, as you said."
            )
        c.call(
            "Bash",
            {
                "command": (
                    "cat <<EOF | kubectl apply --dry-run=server -f -\napiVersion: "
                    f"policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: {app}\n  "
                    "namespace: payments-prod\nspec:\n  maxUnavailable: 1\n  selector:\n    "
                    f"matchLabels:\n      app.kubernetes.io/name: {app}\nEOF"
                ),
                "description": "dry-run PDB",
            },
            f"poddisruptionbudget.policy/{app} configured (server dry run)",
        )
        c.say(
            f"For `{app}` (`{REG}/{app}:{tag}`): switch the PDB from `minAvailable` to "
            "`maxUnavailable: 1` (validated with `--dry-run=server`), "
            "and set CPU requests to the 7-day p99 rounded up. Peak CPU over 7 days was "
            f"{rng.uniform(0.2, 0.9):.2f} cores per pod. Nothing applied."
        )

    c.user(
        "Last thing: open a PR with the values change and the terraform change on a "
        "branch fix/checkout-timeout-asg. Title should reference INC-2291."
    )

    c.call(
        "Bash",
        {
            "command": (
                "cd /home/ops/infra && git checkout -b fix/checkout-timeout-asg && git add "
                "charts/checkout-api/values-prod-eu.yaml terraform/eks/nodegroups.tf "
                "docs/incidents/2026-02-10-checkout-503.md && git commit -m 'INC-2291: add "
                "PAYMENT_PROVIDER_TIMEOUT_MS, raise general ASG max to 9'"
            ),
            "description": "commit",
        },
        (
            "Switched to a new branch 'fix/checkout-timeout-asg'\n[fix/checkout-timeout-asg "
            f"{h(rng, 7)}] INC-2291: add PAYMENT_PROVIDER_TIMEOUT_MS, raise general ASG max to 9\n "
            "3 files changed, 9 insertions(+), 1 deletion(-)\n create mode 100644 "
            "docs/incidents/2026-02-10-checkout-503.md"
        ),
    )

    c.call(
        "Bash",
        {
            "command": (
                "git push -u origin fix/checkout-timeout-asg && gh pr create --title "
                "'INC-2291: checkout timeout key + ASG max 9' --body-file "
                "docs/incidents/2026-02-10-checkout-503.md --label incident"
            ),
            "description": "push and PR",
        },
        "remote: \nremote: Create a pull request for 'fix/checkout-timeout-asg' on GitHub "
        "by visiting:\nremote:      "
        "https://github.com/acme-pay/infra/pull/new/fix/checkout-timeout-asg\n"
        "To github.com:acme-pay/infra.git\n * [new branch]      fix/checkout-timeout-asg "
        "-> fix/checkout-timeout-asg\nhttps://github.com/acme-pay/infra/pull/1187",
    )

    c.say(
        "PR opened: https://github.com/acme-pay/infra/pull/1187 (`INC-2291: checkout "
        "timeout key + ASG max 9`) from `fix/checkout-timeout-asg`."
    )
