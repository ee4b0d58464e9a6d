"""Cluster output for the Kubernetes session: pods, describe and container logs."""

from __future__ import annotations

import random

NS = "payments-prod"

APPS = ["checkout-api", "ledger-worker", "fraud-scorer", "webhook-relay", "invoice-renderer"]

REG = "registry.acme-pay.io/platform"


def h(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def pod(rng: random.Random, app: str) -> str:
    return (
        f"{app}-{h(rng, 10)[:9]}-"
        f"{''.join(rng.choice('bcdfghjklmnpqrstvwxz2456789') for _ in range(5))}"
    )


def get_pods(
    rng: random.Random, pods: dict[str, list[str]], nodes: list[str], state: dict[str, str]
) -> str:
    lines = [
        (
            "NAME                                 READY   STATUS             RESTARTS     "
            "   AGE     IP             NODE"
        )
    ]
    for a in APPS:
        for p in pods[a]:
            st = state.get(a, "Running")
            ready = "0/1" if st != "Running" else "1/1"
            rs = (
                f"{rng.randint(5, 40)} ({rng.randint(1, 5)}m ago)"
                if st == "CrashLoopBackOff"
                else str(rng.randint(0, 2))
            )
            lines.append(
                f"{p:<36} {ready}     {st:<18} {rs:<15} "
                f"{rng.randint(1, 9)}d{rng.randint(0, 23)}h   "
                f"10.{rng.randint(0, 3)}.{rng.randint(0, 255)}.{rng.randint(0, 255):<5} "
                f"{rng.choice(nodes)}"
            )
    return "\n".join(lines)


def describe(rng: random.Random, nodes: list[str], p: str, app: str, tag: str, reason: str) -> str:
    return f"""Name:             {p}
Namespace:        {NS}
Priority:         0
Service Account:  {app}
Node:             {rng.choice(nodes)}/10.{rng.randint(0, 3)}.{rng.randint(0, 255)}.\
{rng.randint(0, 255)}
Start Time:       Tue, 10 Feb 2026 09:{rng.randint(10, 59)}:{rng.randint(10, 59)} +0000
Labels:           app.kubernetes.io/name={app}
                  app.kubernetes.io/instance={app}
                  pod-template-hash={p.split("-")[-2]}
Annotations:      checksum/config: {h(rng, 64)}
Status:           Running
Controlled By:    ReplicaSet/{"-".join(p.split("-")[:-1])}
Containers:
  {app}:
    Container ID:   containerd://{h(rng, 64)}
    Image:          {REG}/{app}:{tag}
    Image ID:       {REG}/{app}@sha256:{h(rng, 64)}
    Port:           8080/TCP
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       {reason}
      Exit Code:    {1 if reason == "Error" else 137}
      Started:      Tue, 10 Feb 2026 10:{rng.randint(10, 59)}:02 +0000
      Finished:     Tue, 10 Feb 2026 10:{rng.randint(10, 59)}:09 +0000
    Ready:          False
    Restart Count:  {rng.randint(8, 30)}
    Limits:
      cpu:     {rng.choice(["500m", "1", "2"])}
      memory:  {rng.choice(["256Mi", "512Mi", "1Gi"])}
    Requests:
      cpu:      {rng.choice(["100m", "250m"])}
      memory:   {rng.choice(["128Mi", "256Mi"])}
    Liveness:   http-get http://:8080/healthz delay=10s timeout=2s period=10s #success=1 #failure=3
    Readiness:  http-get http://:8080/readyz delay=5s timeout=2s period=5s #success=1 #failure=3
    Environment Variables from:
      {app}-config  ConfigMap  Optional: false
      {app}-secrets Secret     Optional: false
    Environment:
      DATABASE_URL:        <set to the key 'database-url' in secret '{app}-secrets'>  Optional: \
false
      OTEL_EXPORTER_OTLP_ENDPOINT:  http://otel-collector.observability:4317
Conditions:
  Type              Status
  Initialized       True
  Ready             False
  ContainersReady   False
  PodScheduled      True
Events:
  Type     Reason     Age                   From     Message
  ----     ------     ----                  ----     -------
  Normal   Pulled     {rng.randint(2, 9)}m (x{rng.randint(5, 20)} over 40m)   kubelet  Container \
image "{REG}/{app}:{tag}" already present on machine
  Warning  BackOff    {rng.randint(1, 4)}m (x{rng.randint(40, 200)} over 38m)  kubelet  Back-off \
restarting failed container {app} in pod {p}_{NS}({h(rng, 8)}-{h(rng, 4)}-{h(rng, 4)}-{h(rng, 4)}-\
{h(rng, 12)})
  Warning  Unhealthy  {rng.randint(5, 30)}m                   kubelet  Readiness probe failed: \
Get "http://10.2.14.7:8080/readyz": dial tcp 10.2.14.7:8080: connect: connection refused"""


def logs(rng: random.Random, app: str, lines_err: list[str]) -> str:
    out = []
    for _k in range(rng.randint(25, 60)):
        lvl = rng.choice(["INFO", "INFO", "INFO", "DEBUG", "WARN"])
        msg = rng.choice(
            [
                "http server listening addr=:8080",
                "connected to kafka brokers=b-1.payments-msk:9092,b-2.payments-msk:9092",
                f"loaded config keys={rng.randint(30, 80)} source=/etc/{app}/config.yaml",
                "otel tracer initialised endpoint=otel-collector.observability:4317",
                f"migration check schema_version={rng.randint(110, 140)}",
                f"pool stats open={rng.randint(1, 20)} idle={rng.randint(0, 10)}",
                f"GET /healthz 200 {rng.randint(1, 9)}ms",
                f"consumer group rebalanced partitions={rng.randint(1, 24)}",
            ]
        )
        out.append(
            f"2026-02-10T10:{rng.randint(10, 59)}:{rng.randint(10, 59)}.{rng.randint(100, 999)}Z "
            f"{lvl:<5} {app} {msg}"
        )
    out += lines_err
    return "\n".join(out)
