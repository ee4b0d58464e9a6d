"""Operations sessions: an English DevOps handover, a Russian one, and a pasted handover note."""

from __future__ import annotations

from pathlib import Path

from tests.support.planted_kinds.session import PlantedSession


def devops(out: Path) -> list[Path]:
    """DevOps handover, English, tool-heavy: people/owners, contacts, branches, PRs, env vars,
    endpoints, flags, version pins, deadlines with time zones, a reversal by the user."""
    s = PlantedSession(
        "devops-handover-901", 901, "You are an SRE agent for the payments platform."
    )
    s.user(
        "We are migrating the payments rate limiter this week. Start by listing services/ for me."
    )
    s.call("Listing.", "bash", {"command": "ls -R services | head -200"}, s.log(80))
    s.say("The repository has four services: billing, worker, api and sched.")
    # user-stated facts
    s.plant(
        "person", "user", "Priya Raman", "Tomás Ortega", "Team Falcon", "Wen Li", "Dmitri Volkov"
    )
    s.pair("owner", "user", "Priya Raman", "billing-api")
    s.pair("owner", "user", "Team Falcon", "ledger-sync")
    s.pair("owner", "user", "Tomás Ortega", "on-call")
    s.plant("email", "user", "priya.raman@northwind.io", "falcon-oncall@northwind.io")
    s.plant("phone", "user", "+1 415 555 0134", "+44 20 7946 0958")
    s.plant("branch", "user", "feature/ratelimit-pg", "release/2026.03")
    s.plant("pr", "user", "PR 4821", "MR !377")
    s.plant("deadline_tz", "user", "Thursday 17:00 CET", "5pm PT on Friday")
    s.plant("verconstraint", "user", ">=3.11,<3.13", "~=2.31")
    s.user(
        "Context for the handover. Priya Raman owns billing-api and reviews anything touching "
        "refunds; Team Falcon owns ledger-sync. Tomás Ortega is on-call this week, with Wen Li as "
        "backup, and Dmitri Volkov signs off on the database side. Reach Priya at "
        "priya.raman@northwind.io or +1 415 555 0134; the Falcon pager is "
        "falcon-oncall@northwind.io, London desk +44 20 7946 0958. Work on branch "
        "feature/ratelimit-pg, cut from release/2026.03. It lands as PR 4821, and the infra half "
        "is MR !377 in the ops repo. The cutover window closes Thursday 17:00 CET; the status "
        "report is due 5pm PT on Friday. Python must stay >=3.11,<3.13 and requests ~=2.31."
    )
    s.say("Understood. I'll keep those in mind and start with the limiter code.")
    s.user("For the limiter backend, use Redis (the shared cache cluster).")
    s.say("OK, Redis it is. I'll look at the client wrapper first.")
    # agent-stated facts
    routes = "services/api/routes.py"
    s.call("Reading the router.", "read_file", {"path": routes}, s.code(routes, 120))
    s.plant(
        "endpoint",
        "agent",
        "POST /v2/orders/{order_id}/refund",
        "GET /v2/limits/{tenant}",
        "DELETE /v1/sessions/{sid}",
    )
    s.plant("envvar", "agent", "RATE_LIMIT_BACKEND=redis", "LIMITER_BURST=40")
    s.plant(
        "config",
        "agent",
        "limiter.window_seconds",
        "limiter.redis.pool_size",
        "server.max_body_size",
    )
    s.plant("quoted", "agent", "Too many refund attempts, try again in a minute.")
    s.plant("cliflag", "agent", "pytest -n 4 -x")
    s.say(
        "The routes that hit the limiter are POST /v2/orders/{order_id}/refund, "
        "GET /v2/limits/{tenant} and DELETE /v1/sessions/{sid}. The backend is picked by "
        "RATE_LIMIT_BACKEND=redis and the burst by LIMITER_BURST=40. Config lives under "
        "limiter.window_seconds, limiter.redis.pool_size and server.max_body_size in "
        "deploy/values.yaml. When a tenant is throttled the API answers with the message "
        '"Too many refund attempts, try again in a minute." I ran the suite with pytest -n 4 -x '
        "and it passed."
    )
    s.reversal(
        "I decided to use a token bucket rather than a sliding window",
        "the limiter now uses a sliding-window log",
        "agent",
    )
    s.say("I decided to use a token bucket rather than a sliding window, since bursts are short.")
    for k in range(4):
        s.filler_turn(k)
    s.say(
        "Update: the token bucket let too many refunds through under load, so the limiter now "
        "uses a sliding-window log."
    )
    for k in range(4, 8):
        s.filler_turn(k)
    s.reversal("For the limiter backend, use Redis", "use Postgres advisory locks", "user")
    s.user(
        "Change of plan from the infra review: actually don't use Redis, use Postgres advisory "
        "locks for the limiter. The cache cluster is being retired."
    )
    s.say(
        "Switched: the limiter will use Postgres advisory locks; I'll drop the Redis client from "
        "the wrapper."
    )
    s.reversal("replicas: 3", "replicas: 5", "user")
    s.user("Also set the limiter deployment to replicas: 3 for now.")
    s.say("Set replicas: 3 in deploy/values.yaml.")
    for k in range(8, 18):
        s.filler_turn(k)
    s.user("Scratch that replica count, Dmitri wants replicas: 5 for the cutover.")
    s.say("Updated to replicas: 5.")
    for k in range(18, 30):
        s.filler_turn(k)
    s.late(
        "Who takes over on-call, and anything else I should know?",
        "Ines Moreau takes over on-call at 08:00 UTC Monday; page her via +33 6 12 34 56 78. "
        "The new health check is GET /healthz/limiter and the alert fires on "
        "limiter.lock_wait_ms above 250. The runbook says to answer customers with "
        '"Payments are delayed, no action is needed on your side."',
        [
            ("person", "Ines Moreau"),
            ("phone", "+33 6 12 34 56 78"),
            ("endpoint", "GET /healthz/limiter"),
            ("config", "limiter.lock_wait_ms"),
            ("quoted", "Payments are delayed, no action is needed on your side."),
        ],
    )
    for k in range(30, 32):
        s.filler_turn(k)
    s.user(
        "Before I hand over: who owns billing-api and ledger-sync, who is on-call, how do I reach "
        "Priya, which branch and PR, the deadlines, the endpoints you found, the env vars, the "
        "config keys, the throttle message, which backend we use and how many replicas?"
    )
    s.say("Here is the summary.")
    return s.write(out)


def devops_ru(out: Path) -> list[Path]:
    """DevOps, Russian, tool-heavy: endpoints, flags, owners, deadlines with MSK, version pins,
    a value superseded by the user."""
    s = PlantedSession("devops-ru-907", 907, "Ты DevOps-агент. Отвечай по-русски.")
    s.user("Переносим сервис отчётов в новый кластер. Посмотри манифесты.")
    s.call("Смотрю.", "bash", {"command": "ls deploy/"}, s.log(60))
    s.say("В deploy/ манифесты трёх сервисов.")
    s.plant("person", "user", "Ольга Смирнова", "Игорь Петров")
    s.pair("owner", "user", "Ольга Смирнова", "reports-api")
    s.plant("deadline_tz", "user", "в среду до 20:00 МСК")
    s.plant("verconstraint", "user", "helm >=3.14,<4.0")
    s.plant("endpoint", "user", "GET /internal/reports/{id}/pdf")
    s.plant("cliflag", "user", "--atomic", "--wait-for-jobs")
    s.user(
        "reports-api принадлежит Ольга Смирнова, базу согласует Игорь Петров. "
        "Срок: в среду до 20:00 МСК. Нужен helm >=3.14,<4.0. "
        "Проверяй ручку GET /internal/reports/{id}/pdf после выката. "
        "Выкатывай с флагами --atomic и --wait-for-jobs."
    )
    s.say("Понял.")
    s.plant("decision_nonen", "agent", "Решил использовать StatefulSet вместо Deployment.")
    s.say("Решил использовать StatefulSet вместо Deployment. Так у подов будут стабильные имена.")
    s.reversal("лимит памяти 512Mi", "лимит памяти 1Gi", "user")
    s.user("Поставь лимит памяти 512Mi.")
    s.say("Поставил лимит памяти 512Mi.")
    s.plant("final_answer", "agent", "узел pool-b-7f3k")
    for k in range(10):
        s.filler_turn(k, ask=f"Дальше ({k}).")
    s.say("Под reports-api падал на узел pool-b-7f3k из-за taint; я добавил toleration.")
    s.user("Ольга просит лимит памяти 1Gi вместо 512Mi.")
    s.say("Поменял на лимит памяти 1Gi.")
    for k in range(10, 25):
        s.filler_turn(k, ask=f"Продолжай ({k}).")
    s.late(
        "Что с мониторингом?",
        "Дашборд ведёт Артём Козлов; алерт смотрит на ключ reports.render_timeout_s, "
        "а проверка идёт через GET /internal/reports/health.",
        [
            ("person", "Артём Козлов"),
            ("config", "reports.render_timeout_s"),
            ("endpoint", "GET /internal/reports/health"),
        ],
    )
    for k in range(25, 27):
        s.filler_turn(k, ask=f"Продолжай ({k}).")
    s.user(
        "Итог: кто владелец, кто согласует базу, срок, версия helm, какая ручка, флаги, "
        "лимит памяти, на каком узле падал под?"
    )
    s.say("Итог ниже.")
    return s.write(out)


def handover_note(out: Path) -> list[Path]:
    """A handover note of about 2,300 characters pasted as the SECOND prompt (so not the
    task), its facts all past its first 1,700 characters."""
    s = PlantedSession("handover-note-910", 910, "You are an SRE agent.")
    s.user(
        "Please help me run the on-call week for the search cluster. "
        "First check the cluster health."
    )
    health = "curl -s localhost:9200/_cluster/health"
    s.call("Checking.", "bash", {"command": health}, s.log(40))
    s.say("The cluster is green.")
    head = (
        "Here is last week's handover note, pasted from the wiki.\n\n"
        + "\n".join(f"- {s.words(s.r.randint(14, 24)).capitalize()}." for _ in range(14))
        + "\n"
    )
    while len(head) < 1700:
        head += f"- {s.words(16).capitalize()}.\n"
    tail_facts = [
        ("person", "Bianca Ferreira"),
        ("person", "Team Lynx"),
        ("phone", "+351 912 345 678"),
        ("endpoint", "POST /_snapshot/nightly/_restore"),
        ("config", "indices.recovery.max_bytes_per_sec"),
        ("quoted", "Search is degraded; results may be incomplete."),
        ("branch", "hotfix/shard-alloc"),
        ("deadline_tz", "Wednesday 14:00 UTC"),
        ("verconstraint", "elasticsearch-py>=8.12,<9"),
        ("shortcut", "Ctrl+Alt+T"),
        ("pr", "PR 2290"),
    ]
    tail = (
        "\nOwners: Bianca Ferreira leads the cluster; Team Lynx owns ingestion; escalate to "
        "Bianca on +351 912 345 678.\n"
        "Restores go through POST /_snapshot/nightly/_restore only.\n"
        "Throttle with indices.recovery.max_bytes_per_sec when a node rejoins.\n"
        'The status page text during incidents is "Search is degraded; results may be '
        'incomplete."\n'
        "The open fix is on hotfix/shard-alloc as PR 2290; it must merge by Wednesday 14:00 UTC.\n"
        "Client pin: elasticsearch-py>=8.12,<9. Open a terminal on the bastion with Ctrl+Alt+T.\n"
    )
    for kind, t in tail_facts:
        assert t in tail, t
        s.plant(kind, "user", t)
    s.user(head + tail)
    s.say("Thanks, I have the note.")
    for k in range(30):
        s.filler_turn(k)
    s.user(
        "Summarise the handover note's owners, phone, restore endpoint, throttle key, status "
        "text, branch, PR, deadline, client pin and shortcut."
    )
    s.say("Summary follows.")
    return s.write(out)
