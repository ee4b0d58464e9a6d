"""The Kubernetes session's capacity phase: fraud-scorer memory, the autoscaler and a
Terraform plan."""

from __future__ import annotations

from tests.support.ninth_sessions.common import Conv
from tests.support.ninth_sessions.kubectl_output import (
    APPS,
    h,
    pod,
)


def fix_capacity(c: Conv, nodes: list[str]) -> None:
    rng = c.rng
    c.user(
        "Now fraud-scorer. Bump memory limit to 1Gi, but apply it as a patch through a "
        "heredoc so I can paste it into the runbook. "
        "Keep requests as they are."
    )

    c.call(
        "Bash",
        {
            "command": (
                "cat <<'EOF' > /tmp/fraud-scorer-mem.yaml\nspec:\n  template:\n    spec:\n    "
                "  containers:\n        - name: fraud-scorer\n          resources:\n          "
                "  limits:\n              memory: 1Gi\nEOF\nkubectl -n payments-prod patch "
                "deployment fraud-scorer --type strategic --patch-file "
                "/tmp/fraud-scorer-mem.yaml"
            ),
            "description": "patch memory",
        },
        "deployment.apps/fraud-scorer patched",
    )

    c.call(
        "Bash",
        {
            "command": "kubectl -n payments-prod rollout status deploy/fraud-scorer --timeout=5m",
            "description": "status",
        },
        (
            'Waiting for deployment "fraud-scorer" rollout to finish: 1 old replicas are '
            'pending termination...\nerror: deployment "fraud-scorer" exceeded its progress '
            "deadline"
        ),
    )

    p1b = pod(rng, "fraud-scorer")

    c.call(
        "Bash",
        {
            "command": (
                "kubectl -n payments-prod get events --sort-by=.lastTimestamp "
                "--field-selector involvedObject.kind=Pod | tail -30"
            ),
            "description": "events",
        },
        "\n".join(
            (
                f"{rng.randint(1, 9)}m   Warning   FailedScheduling   pod/{p1b}   0/6 nodes "
                f"are available: {rng.randint(2, 6)} Insufficient memory, 2 node(s) had "
                f"untolerated taint {{dedicated: batch}}. preemption: 0/6 nodes are available: "
                "6 No preemption victims found for incoming pod."
            )
            if k % 3 == 0
            else (
                f"{rng.randint(1, 9)}m   Normal    Scheduled          "
                f"pod/{pod(rng, rng.choice(APPS))}   Successfully assigned payments-prod/... to "
                f"{rng.choice(nodes)}"
            )
            for k in range(30)
        ),
    )

    c.say(
        "The patch applied, but the new `fraud-scorer` pod can't be scheduled: `0/6 nodes "
        "are available: Insufficient memory` and two nodes carry the "
        "`dedicated: batch` taint. The cluster autoscaler should add a node; checking its status."
    )

    c.call(
        "Bash",
        {
            "command": (
                "kubectl -n kube-system logs deploy/cluster-autoscaler --since=15m | grep -E "
                "'scale-up|Failed|error' | tail -40"
            ),
            "description": "autoscaler logs",
        },
        "\n".join(
            [
                (
                    f"I0210 11:{rng.randint(10, 30)}:{rng.randint(10, 59)}."
                    f"{rng.randint(100000, 999999)} "
                    f"      1 scale_up.go:{rng.randint(300, 600)}] Best option to resize: "
                    f"eks-payments-general-{h(rng, 8)}"
                )
                for _ in range(12)
            ]
            + [
                (
                    "E0210 11:21:37.118230       1 scale_up.go:829] Failed to increase node "
                    "group size: AutoScalingGroup eks-payments-general-5ec6a2b1 reached max "
                    "size 6"
                ),
                (
                    "W0210 11:21:37.118302       1 orchestrator.go:582] Node group "
                    "eks-payments-general-5ec6a2b1 is not ready for scaleup - backoff"
                ),
            ]
        ),
    )

    c.say(
        "Root cause for scheduling: the node group `eks-payments-general-5ec6a2b1` is at "
        "its max size of 6 (`Failed to increase node group size: ... reached max size "
        "6`)."
    )

    c.user(
        "Raise the ASG max to 9 in terraform (infra/terraform/eks/nodegroups.tf), plan "
        "only, don't apply. And write me a short incident summary in "
        "docs/incidents/2026-02-10-checkout-503.md."
    )

    tf = "\n".join(
        f"{k + 1:>6}\t{line}"
        for k, line in enumerate(
            [
                'module "eks_payments" {',
                '  source  = "terraform-aws-modules/eks/aws"',
                '  version = "20.8.4"',
                "",
                "  eks_managed_node_groups = {",
                "    general = {",
                '      instance_types = ["m6i.xlarge"]',
                "      min_size       = 3",
                "      max_size       = 6",
                "      desired_size   = 6",
                '      labels = { workload = "general" }',
                "    }",
                "    batch = {",
                '      instance_types = ["c6i.2xlarge"]',
                "      min_size = 0",
                "      max_size = 4",
                '      taints = [{ key = "dedicated", value = "batch", effect = "NO_SCHEDULE" }]',
                "    }",
                "  }",
                "}",
            ]
        )
    )

    c.call("Read", {"file_path": "/home/ops/infra/terraform/eks/nodegroups.tf"}, tf)

    c.call(
        "Edit",
        {
            "file_path": "/home/ops/infra/terraform/eks/nodegroups.tf",
            "old_string": "      max_size       = 6",
            "new_string": "      max_size       = 9",
        },
        "The file /home/ops/infra/terraform/eks/nodegroups.tf has been updated.",
    )

    plan = (
        "Terraform will perform the following actions:\n\n  # "
        'module.eks_payments.module.eks_managed_node_group["general"].aws_eks_node_group.this[0] '
        "will be updated in-place\n"
        '  ~ resource "aws_eks_node_group" "this" {\n        id = '
        '"payments-prod:general-20250611093012"\n      ~ scaling_config {\n          ~ '
        "max_size     = 6 -> 9\n            # (2 unchanged attributes hidden)\n        }\n "
        "   }\n\nPlan: 0 to add, 1 to change, 0 to destroy.\n"
        "\nWarning: Argument is deprecated\n\n  with "
        'module.eks_payments.aws_eks_addon.this["vpc-cni"],\n  on '
        ".terraform/modules/eks_payments/main.tf line 492\n"
    )

    c.call(
        "Bash",
        {
            "command": (
                "cd /home/ops/infra/terraform/eks && terraform init -input=false >/dev/null "
                "&& terraform plan -input=false -lock-timeout=60s -out=/tmp/asg-max9.plan"
            ),
            "description": "terraform plan",
        },
        "\n".join(
            f"module.eks_payments.data.aws_iam_policy_document.{x}: Reading..."
            for x in ["assume_role_policy", "cni_ipv6_policy", "custom"] * 8
        )
        + "\n"
        + plan,
    )

    c.call(
        "Write",
        {
            "file_path": "/home/ops/infra/docs/incidents/2026-02-10-checkout-503.md",
            "content": (
                "# 2026-02-10 checkout 503s\n\n- 10:21 UTC checkout-api 1.4.2 rolled out "
                "(helm rev 47)\n- 1.4.2 requires PAYMENT_PROVIDER_TIMEOUT_MS; missing -> "
                "panic at start\n- 11:02 rev 48 adds PAYMENT_PROVIDER_TIMEOUT_MS=2500, "
                "recovered\n- fraud-scorer OOMKilled at 512Mi; limit raised to 1Gi; blocked "
                "by ASG max 6\n- follow-up: terraform max_size 6 -> 9 (planned, not applied)\n"
            ),
        },
        "File created successfully at: /home/ops/infra/docs/incidents/2026-02-10-checkout-503.md",
    )

    c.say(
        "Plan (`/tmp/asg-max9.plan`): `max_size 6 -> 9` on the `general` node group, "
        "`Plan: 0 to add, 1 to change, 0 to destroy.` Not applied. "
        "Incident summary written to `docs/incidents/2026-02-10-checkout-503.md`."
    )
