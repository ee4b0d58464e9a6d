"""Cases, opinions and search results for the legal research session."""

from __future__ import annotations

import json
import random
from urllib.parse import quote_plus

CASES = [
    ("Gonzalez v. Google LLC", "21-1333", "598 U.S. 617", "2023-05-18", "scotus"),
    ("Twitter, Inc. v. Taamneh", "21-1496", "598 U.S. 471", "2023-05-18", "scotus"),
    ("Anderson v. TikTok, Inc.", "22-3061", "116 F.4th 180", "2024-08-27", "ca3"),
    ("Lemmon v. Snap, Inc.", "20-55295", "995 F.3d 1085", "2021-05-04", "ca9"),
    ("Force v. Facebook, Inc.", "18-397", "934 F.3d 53", "2019-07-31", "ca2"),
    ("Zeran v. America Online, Inc.", "97-1523", "129 F.3d 327", "1997-11-12", "ca4"),
    (
        "Fair Housing Council v. Roommates.com, LLC",
        "04-56916",
        "521 F.3d 1157",
        "2008-04-03",
        "ca9",
    ),
    ("Doe v. Grindr Inc.", "24-475", "128 F.4th 1148", "2025-02-18", "ca9"),
    ("Moody v. NetChoice, LLC", "22-277", "603 U.S. 707", "2024-07-01", "scotus"),
    ("Calise v. Meta Platforms, Inc.", "22-16914", "103 F.4th 732", "2024-06-04", "ca9"),
    (
        "Estate of Bride v. Yolo Technologies, Inc.",
        "23-55134",
        "112 F.4th 1168",
        "2024-08-22",
        "ca9",
    ),
    ("M.P. v. Meta Platforms, Inc.", "23-1880", "127 F.4th 516", "2025-02-04", "ca4"),
]

WORDS = [
    "the",
    "court",
    "held",
    "that",
    "section",
    "230",
    "immunity",
    "does",
    "not",
    "extend",
    "to",
    "claims",
    "premised",
    "on",
    "the",
    "defendant's",
    "own",
    "conduct",
    "rather",
    "than",
    "on",
    "its",
    "role",
    "as",
    "a",
    "publisher",
    "of",
    "third-party",
    "content;",
    "the",
    "plaintiffs",
    "alleged",
    "that",
    "the",
    "platform's",
    "recommendation",
    "algorithm",
    "constituted",
    "expressive",
    "activity",
    "of",
    "the",
    "platform",
    "itself",
    "and",
    "that",
    "the",
    "design",
    "of",
    "the",
    "product",
    "was",
    "defective",
    "independent",
    "of",
    "any",
    "content;",
    "the",
    "district",
    "court",
    "dismissed",
    "under",
    "Rule",
    "12(b)(6)",
    "and",
    "the",
    "court",
    "of",
    "appeals",
    "reviewed",
    "de",
    "novo;",
    "we",
    "agree",
    "with",
    "our",
    "sister",
    "circuits",
    "that",
    "a",
    "duty",
    "to",
    "warn",
    "claim",
    "does",
    "not",
    "treat",
    "the",
    "defendant",
    "as",
    "a",
    "publisher;",
    "the",
    "statute",
    "provides",
    "that",
    "no",
    "provider",
    "or",
    "user",
    "of",
    "an",
    "interactive",
    "computer",
    "service",
    "shall",
    "be",
    "treated",
    "as",
    "the",
    "publisher",
    "or",
    "speaker",
    "of",
    "any",
    "information",
    "provided",
    "by",
    "another",
    "information",
    "content",
    "provider",
]


def prose(rng: random.Random, n: int) -> str:
    out: list[str] = []
    while len(out) < n:
        start = rng.randrange(len(WORDS) - 20)
        out += WORDS[start : start + rng.randint(8, 20)]
        out[-1] += rng.choice([".", ";", ",", "."])
    s = " ".join(out[:n])
    return s[0].upper() + s[1:]


def opinion(rng: random.Random, name: str, dock: str, rep: str, date: str, court: str) -> str:
    paras = [
        f"UNITED STATES COURT OF APPEALS / SUPREME COURT — {court.upper()}",
        f"{name}",
        f"No. {dock}",
        f"Decided {date}",
        f"Reported at {rep}",
        "",
    ]
    for k in range(rng.randint(14, 24)):
        p = prose(rng, rng.randint(60, 140))
        if k % 4 == 1:
            p += (
                f" See 47 U.S.C. § 230(c)({rng.choice(['1', '2'])}); "
                f"{rng.choice(CASES)[0]}, {rng.choice(CASES)[2]} "
                f"({rng.randint(1997, 2024)})."
            )
        if k % 5 == 2:
            p += (
                f" The {rng.choice(['panel', 'majority'])} noted that {rng.randint(2, 9)} "
                f"circuits had addressed the question since {rng.randint(2008, 2020)}."
            )
        paras.append(f"[{k + 1}] {p}")
    return "\n\n".join(paras)


def search_results(
    rng: random.Random,
    urls: dict[str, str],
    query: str,
    court: str,
    pick: list[tuple[str, str, str, str, str]],
) -> str:
    res = []
    for name, dock, rep, date, cr in pick:
        res.append(
            {
                "caseName": name,
                "docketNumber": dock,
                "citation": rep,
                "dateFiled": date,
                "court": cr,
                "absolute_url": urls[dock],
                "snippet": prose(rng, 40),
                "cluster_id": rng.randint(10**6, 10**7),
            }
        )
    return json.dumps(
        {
            "count": len(res) * rng.randint(3, 40),
            "next": (
                f"https://www.courtlistener.com/api/rest/v4/search/?q={quote_plus(query)}&type=o&"
                f"order_by=score+desc&court={court}&cursor={rng.randrange(16**12):012x}"
            ),
            "results": res,
        },
        indent=1,
    )
