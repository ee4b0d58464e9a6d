"""Infrastructure session: a Terraform state migration across three environments, as a Claude
Code log (tf-migrate-809)."""

from __future__ import annotations

import random
from pathlib import Path

from tests.support.fourteen_sessions.common import (
    ENGLISH,
    CCLog,
    IdGen,
    out_path,
    prose,
    signature,
    text,
    thinking,
    tool_result,
    tool_use,
)

ENVS = ["dev", "staging", "prod"]
MODS = ["network", "eks", "rds", "redis", "iam", "s3-buckets", "cloudfront", "waf"]
RES = [
    "aws_subnet.private",
    "aws_route_table.private",
    "aws_eks_node_group.workers",
    "aws_db_instance.main",
    "aws_elasticache_replication_group.sessions",
    "aws_iam_role.deploy",
    "aws_s3_bucket.assets",
    "aws_cloudfront_distribution.cdn",
    "aws_wafv2_web_acl.edge",
    "aws_security_group.db",
]
ATTRIBUTES = [
    "tags",
    "cidr_block",
    "instance_class",
    "engine_version",
    "desired_size",
    "arn",
    "id",
    "kms_key_id",
    "subnet_ids",
    "vpc_id",
]
PLAN_HEADER = [
    "Terraform used the selected providers to generate the following execution plan.",
    "Resource actions are indicated with the following symbols:",
    "  + create",
    "  ~ update in-place",
    "-/+ destroy and then create replacement",
    "",
    "Terraform will perform the following actions:",
    "",
]
FIRST_PROMPT = (
    "We're migrating acme-infra from the single workspace to per-env state in "
    "s3://acme-tfstate. "
    "Rules: never run terraform apply in prod without showing me the plan first, always use "
    "-lock-timeout=5m, "
    "and do not let anything replace aws_db_instance.main. Start with dev."
)


def _plan(rnd: random.Random, n: int) -> str:
    out = list(PLAN_HEADER)
    adds = chg = dels = 0
    for _ in range(n):
        mod, res = rnd.choice(MODS), rnd.choice(RES)
        act = rnd.choice(["~", "~", "+", "-/+"])
        adds += act in "+-/+"
        chg += act == "~"
        dels += act == "-/+"
        verb = "updated in-place" if act == "~" else "created" if act == "+" else "replaced"
        out.append(f"  # module.{mod}.{res}[{rnd.randint(0, 5)}] will be {verb}")
        kind, name = res.split(".")
        out.append(f'  {act} resource "{kind}" "{name}" {{')
        for _ in range(rnd.randint(3, 12)):
            k = rnd.choice(ATTRIBUTES)
            out.append(
                f"      {rnd.choice(['~', '+', ' '])} {k:<20} = "
                f'"{rnd.getrandbits(40):010x}" -> (known after apply)'
                f"{'  # forces replacement' if rnd.random() < 0.1 else ''}"
            )
        out.append("    }")
    out.append(f"\nPlan: {adds} to add, {chg} to change, {dels} to destroy.")
    return "\n".join(out)


def tf_migrate(out_dir: Path) -> list[Path]:
    """tf-migrate-809 (Claude Code log): moving a platform's Terraform from one state layout to
    another across three environments.

    `terraform plan` outputs of 300-1,500 lines (resources, attribute diffs, `# forces
    replacement`), commands run as `cd infra/envs/ENV && \\` then `terraform ...` on the next
    line, some with `TF_VAR_` secrets inline, `Edit` calls on `.tf` files, `Read` of modules,
    and failing applies (`Error: ...` with `is_error`). Replies name resources, ARNs, provider
    pins (`hashicorp/aws@5.72.1`), endpoints (`db.prod.internal:5432/app`) and state keys
    (`s3://acme-tfstate/prod/network.tfstate`). The platform lead's rules come once at the
    start.
    """
    rnd = random.Random(809)
    ids = IdGen(rnd)
    log = CCLog(
        cwd="/home/ops/acme-infra",
        session="c0ffee42-9b1d-4e6a-8d2f-3a4b5c6d7e8f",
        model="claude-opus-4-1-20250805",
    )
    log.user(FIRST_PROMPT)
    for step in range(20):
        env = ENVS[min(step // 7, 2)]
        mod = rnd.choice(MODS)
        if step:
            log.user(
                rnd.choice(
                    [
                        f"Continue with the {mod} module in {env}.",
                        f"Plan {env} again after that change.",
                        f"Why does {mod} want to replace resources?",
                        f"Apply {env} if the plan is clean.",
                        f"Move {mod} state to the new key.",
                    ]
                )
            )
        t1, t2, t3 = ids(), ids(), ids()
        th = (
            f"Need to look at `modules/{mod}/main.tf` and the state key `{env}/{mod}.tfstate`. "
            + prose(rnd, ENGLISH, rnd.randint(3, 9))
        )
        log.assistant(
            [
                thinking(th, signature(rnd)),
                text(f"Reading the {mod} module."),
                tool_use(t1, "Read", file_path=f"/home/ops/acme-infra/modules/{mod}/main.tf"),
            ],
            stop="tool_use",
        )
        body = "\n".join(
            f'resource "{r.split(".")[0]}" "{r.split(".")[1]}" {{\n'
            f"  count = var.{mod.replace('-', '_')}_count\n  tags  = local.tags\n}}\n"
            for r in rnd.sample(RES, 4)
        )
        numbered = "\n".join(f"{i + 1:>6}\t{line}" for i, line in enumerate(body.splitlines()))
        log.results([tool_result(t1, numbered)])
        secret = f"TF_VAR_db_password='{rnd.getrandbits(64):016x}Aa!' " if mod == "rds" else ""
        cmd = (
            f"cd infra/envs/{env} && \\\n  {secret}terraform plan -lock-timeout=5m "
            f"-out=/tmp/{env}-{mod}.tfplan -target=module.{mod}"
        )
        plan = tool_use(t2, "Bash", command=cmd, description=f"Plan {mod} in {env}", timeout=600000)
        log.assistant([plan], stop="tool_use")
        log.results([tool_result(t2, _plan(rnd, rnd.randint(15, 70)))])
        if step % 3 == 2:
            apply = tool_use(
                t3,
                "Bash",
                command=f"cd infra/envs/{env} && \\\n"
                f"  terraform apply -lock-timeout=5m /tmp/{env}-{mod}.tfplan",
                description="Apply",
            )
            log.assistant([apply], stop="tool_use")
            if rnd.random() < 0.5:
                error = (
                    f"module.{mod}.{rnd.choice(RES)}: Modifying...\n\n"
                    f"Error: updating {rnd.choice(RES)}: "
                    f"operation error {rnd.choice(['EC2', 'RDS', 'EKS'])}: "
                    f"api error InvalidParameterCombination: {prose(rnd, ENGLISH, 1)}\n\n"
                    f"  with module.{mod}.{rnd.choice(RES)},\n"
                    f"  on ../../modules/{mod}/main.tf line {rnd.randint(5, 90)}"
                )
                log.results([tool_result(t3, error, is_error=True)])
            else:
                complete = (
                    f"Apply complete! Resources: {rnd.randint(0, 9)} added, "
                    f"{rnd.randint(0, 9)} changed, 0 destroyed."
                )
                log.results([tool_result(t3, complete)])
        else:
            t4 = ids()
            edit = tool_use(
                t4,
                "Edit",
                file_path=f"/home/ops/acme-infra/modules/{mod}/main.tf",
                old_string="  tags  = local.tags",
                new_string=f'  tags  = merge(local.tags, {{ env = "{env}" }})\n'
                "  lifecycle { prevent_destroy = true }",
            )
            log.assistant([edit], stop="tool_use")
            updated = f"The file /home/ops/acme-infra/modules/{mod}/main.tf has been updated."
            log.results([tool_result(t4, updated)])
        reply = (
            f"{env}/{mod}: the plan moves state to s3://acme-tfstate/{env}/{mod}.tfstate "
            f"with provider hashicorp/aws@5.{rnd.randint(60, 80)}.{rnd.randint(0, 3)}. "
            f"The DB stays at db.{env}.internal:5432/app and the role "
            f"arn:aws:iam::{rnd.randint(10**11, 10**12 - 1)}:role/deploy-{env} keeps its "
            "trust policy. "
            f"Nothing replaces aws_db_instance.main; {rnd.randint(0, 12)} resources change in "
            "place. " + prose(rnd, ENGLISH, rnd.randint(1, 3))
        )
        log.assistant([text(reply)], stop="end_turn")

    log.user("Before I approve prod: restate my three rules and list the state keys you created.")
    rules = (
        "Rules: no prod apply without showing you the plan, always -lock-timeout=5m, nothing "
        "may replace aws_db_instance.main."
    )
    log.assistant([text(rules)], stop="end_turn")
    return log.write(out_path(out_dir, "tf-migrate-809.log.jsonl"))
