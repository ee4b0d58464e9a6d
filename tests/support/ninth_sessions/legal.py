"""Legal research on case law and statutes (s4_legal_research, abridged JSONL)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.ninth_sessions.common import Conv, schema
from tests.support.ninth_sessions.legal_sources import (
    CASES,
    opinion,
    prose,
    search_results,
)

HELPFUL = "helpful — it treats design claims as independent of publishing"
MIXED = "mixed — the claim survived only because it did not depend on third-party content"
DEFENDANTS = ["Roblox Corp.", "Snap, Inc.", "Meta Platforms, Inc.", "ByteDance Ltd."]


def legal_research(out_dir: Path) -> list[Path]:
    c = Conv(
        404,
        (
            "You are a legal research assistant for Hartwell & Brandt LLP. Cite every "
            "authority with its docket number and a link. "
            "You do not give legal advice to clients; you prepare research memos for attorneys."
        ),
        [
            schema(
                "search_caselaw",
                "Search court opinions (CourtListener index).",
                query="string",
                court="string",
                filed_after="string",
            ),
            schema(
                "get_opinion", "Fetch an opinion's text by its CourtListener URL.", url="string"
            ),
            schema(
                "search_statutes",
                "Search the U.S. Code and state codes.",
                query="string",
                code="string",
            ),
            schema("fetch_url", "Fetch a web page as text.", url="string"),
            schema(
                "cite_check",
                "Check whether a case is still good law (citing references).",
                citation="string",
            ),
        ],
    )

    rng = c.rng
    urls: dict[str, str] = {}

    for name, dock, _rep, _date, _court in CASES:
        slug = name.lower().replace(",", "").replace(".", "").replace(" ", "-")[:40]
        urls[dock] = (
            f"https://www.courtlistener.com/opinion/{rng.randint(4000000, 9999999)}/{slug}/"
        )

    c.user(
        "We represent the parents in a wrongful death matter against a social video app "
        "(D.N.J. filing planned). I need a research memo on whether "
        "§ 230(c)(1) bars product-design and failure-to-warn claims based on algorithmic "
        "recommendations. Focus on the Third Circuit, then "
        "persuasive authority from the Ninth and Fourth. Cite only published opinions, "
        'and always give the docket number like "No. 22-3061". '
        "Don't rely on anything decided before 2019 except Zeran and Roommates for background."
    )

    q = '"section 230" algorithm recommendation "failure to warn" OR "design defect"'

    c.call(
        "search_caselaw",
        {"query": q, "court": "ca3", "filed_after": "2019-01-01"},
        search_results(rng, urls, q, "ca3", [CASES[2], *rng.sample(CASES, 4)]),
        text="Starting with the Third Circuit.",
    )

    c.call("get_opinion", {"url": urls["22-3061"]}, opinion(rng, *CASES[2]))

    c.say(
        "The controlling Third Circuit authority is *Anderson v. TikTok, Inc.*, No. "
        "22-3061, 116 F.4th 180 (3d Cir. Aug. 27, 2024), "
        f"{urls['22-3061']}. The panel held that TikTok's algorithmic curation (the \"For "
        "You Page\") is TikTok's own first-party expressive "
        "activity, relying on *Moody v. NetChoice, LLC*, No. 22-277, 603 U.S. 707 (2024), "
        "so § 230(c)(1) does not bar claims premised on it. "
        "I'll pull *Moody* and check whether *Anderson* has subsequent history."
    )

    c.call(
        "cite_check",
        {"citation": "116 F.4th 180"},
        json.dumps(
            {
                "citation": "116 F.4th 180",
                "status": "caution",
                "history": [
                    {
                        "date": "2024-10-03",
                        "event": "Petition for rehearing en banc filed",
                        "docket_entry": 84,
                    },
                    {"date": "2024-11-13", "event": "Rehearing en banc denied", "docket_entry": 97},
                ],
                "citing_references": [
                    {
                        "case": rng.choice(CASES)[0],
                        "treatment": rng.choice(
                            ["distinguished", "followed", "cited", "criticized"]
                        ),
                        "year": rng.randint(2024, 2025),
                    }
                    for _ in range(22)
                ],
            },
            indent=1,
        ),
    )

    c.call("get_opinion", {"url": urls["22-277"]}, opinion(rng, *CASES[8]))

    c.say(
        "*Anderson* is a published opinion; rehearing en banc was denied on 2024-11-13, "
        "so it remains binding in the Third Circuit, but "
        "the citator flags it with caution because several district courts outside the "
        "circuit have declined to follow it."
    )

    for k, (name, dock, rep, date, court) in enumerate(
        [CASES[3], CASES[9], CASES[10], CASES[7], CASES[11], CASES[4]]
    ):
        ask = rng.choice(
            [
                (
                    f"Now look at {name}. What exactly did it hold about design defect claims, "
                    "and does it help us?"
                ),
                (
                    f"Pull {name} and summarize the reasoning on failure to warn. Quote the "
                    "key sentence exactly."
                ),
                f"How does {name} (No. {dock}) fit with Anderson? I need pin cites.",
            ]
        )
        if k == 2:
            ask += " Also, from here on, add the pin cite in the form 116 F.4th at 184."
        if k == 4:
            ask += (
                " Keep in mind the client never used the app's messaging feature; only the "
                "feed matters."
            )
        c.user(ask)
        qq = (
            f'"{name.split(" v. ")[0]}" section 230 '
            f"{rng.choice(['design defect', 'duty to warn', 'product liability'])}"
        )
        c.call(
            "search_caselaw",
            {"query": qq, "court": court, "filed_after": "2019-01-01"},
            search_results(
                rng, urls, qq, court, [(name, dock, rep, date, court), *rng.sample(CASES, 3)]
            ),
        )
        c.call("get_opinion", {"url": urls[dock]}, opinion(rng, name, dock, rep, date, court))
        pin = int(rep.split()[-1]) + rng.randint(2, 12)
        c.say(
            f"*{name}*, No. {dock}, {rep} "
            f"({court.upper().replace('CA', '') + 'th Cir.' if court.startswith('ca') else 'U.S.'} "
            f"{date[:4]}), {urls[dock]}.\n\n"
            f'Holding (at {pin}): {prose(rng, 45)}.\n\nQuoted exactly: "{prose(rng, 30)}." '
            f"({rep.split()[0]} {rep.split()[1]} at {pin}).\n\n"
            f"Relevance: {HELPFUL if k % 2 == 0 else MIXED}. "
            f"Filed {date}; published."
        )

    c.user(
        "Now statutes. Pull the text of 47 U.S.C. § 230(c) and (f)(3) and (f)(4), and "
        "also check New Jersey's product liability act definition of 'harm' (N.J.S.A. "
        "2A:58C-1)."
    )

    c.call(
        "search_statutes",
        {"query": "47 U.S.C. 230(c) protection for good samaritan blocking", "code": "usc"},
        "47 U.S.C. § 230 — Protection for private blocking and screening of offensive "
        'material\n\n(c) Protection for "Good Samaritan" blocking and screening of '
        "offensive material\n"
        "(1) Treatment of publisher or speaker\nNo provider or user of an interactive "
        "computer service shall be treated as the publisher or speaker of any information "
        "provided by another information content provider.\n"
        "(2) Civil liability\nNo provider or user of an interactive computer service "
        "shall be held liable on account of—\n(A) any action voluntarily taken in good "
        "faith to restrict access to or availability of material that the provider or "
        "user considers to be obscene, lewd, lascivious, filthy, excessively violent, "
        "harassing, or otherwise objectionable, whether or not such material is "
        "constitutionally protected; or\n(B) any action taken to enable or make available "
        "to information content providers or others the technical means to restrict "
        "access to material described in paragraph (1).\n\n"
        '(f)(3) Information content provider\nThe term "information content provider" '
        "means any person or entity that is responsible, in whole or in part, for the "
        "creation or development of information provided through the Internet or any "
        "other interactive computer service.\n"
        '(f)(4) Access software provider\nThe term "access software provider" means a '
        "provider of software (including client or server software), or enabling tools "
        "that do any one or more of the following: (A) filter, screen, allow, or disallow "
        "content; (B) pick, choose, analyze, or digest content; or (C) transmit, receive, "
        "display, forward, cache, search, subset, organize, reorganize, or translate "
        "content.\n\n"
        "Source: https://uscode.house.gov/view.xhtml?"
        "req=granuleid:USC-prelim-title47-section230&num=0&edition=prelim",
    )

    c.call(
        "fetch_url",
        {
            "url": (
                "https://lis.njleg.state.nj.us/nxt/gateway.dll?f=templates&fn=default.htm&"
                "vid=Publish:10.1048/Enu&q=2A%3A58C-1"
            )
        },
        (
            "N.J.S.A. 2A:58C-1. Short title; definitions\n\na. This act shall be known and "
            'may be cited as the "Products Liability Act."\nb. As used in this act:\n(1) '
            '"Claimant" means any person who brings a product liability action directly or '
            'through a representative.\n(2) "Harm" means (a) physical damage to property, '
            "other than to the product itself; (b) personal physical illness, injury or "
            "death; (c) pain and suffering, mental anguish or emotional harm; and (d) any "
            "loss of consortium or services or other loss deriving from any type of harm "
            'described in subparagraphs (a) through (c) of this paragraph.\n(3) "Product '
            'liability action" means any claim or action brought by a claimant for harm '
            "caused by a product, irrespective of the theory underlying the claim, except "
            "actions for harm caused by breach of an express warranty.\n\n"
        )
        + "\n".join(f"Annotation {k}: {prose(rng, 40)}" for k in range(12)),
    )

    c.say(
        'Key text: § 230(c)(1) — "No provider or user of an interactive computer service '
        "shall be treated as the publisher or speaker of any "
        'information provided by another information content provider." § 230(f)(4)(B) '
        "defines an access software provider to include tools that "
        '"pick, choose, analyze, or digest content", which defendants will argue covers '
        "recommendation algorithms. N.J.S.A. 2A:58C-1(b)(2) defines "
        '"harm" to include death and emotional harm; (b)(3) makes the PLA the exclusive '
        'vehicle "irrespective of the theory underlying the claim". '
        "Sources: https://uscode.house.gov/view.xhtml?"
        "req=granuleid:USC-prelim-title47-section230&num=0&edition=prelim "
        "and "
        "https://lis.njleg.state.nj.us/nxt/gateway.dll?f=templates&fn=default.htm&"
        "vid=Publish:10.1048/Enu&q=2A%3A58C-1"
    )

    c.user(
        "Check secondary commentary on Anderson — law review articles or the CRS — and "
        "any D.N.J. decisions applying it since August 2024."
    )

    for url in [
        "https://crsreports.congress.gov/product/pdf/LSB/LSB11097",
        (
            "https://www.congress.gov/crs-product/R46751?"
            "q=%7B%22search%22%3A%22section+230%22%7D&s=1&r=3"
        ),
        "https://harvardlawreview.org/print/vol-138/anderson-v-tiktok-inc/",
        (
            "https://www.lawfaremedia.org/article/"
            "the-third-circuit-s-section-230-decision-in-anderson-v.-tiktok?"
            "utm_source=newsletter&utm_medium=email"
        ),
    ]:
        c.call(
            "fetch_url",
            {"url": url},
            f"{url}\n\n"
            + "\n\n".join(prose(rng, rng.randint(80, 150)) for _ in range(rng.randint(6, 10))),
        )

    dnj = [
        (
            (f"Doe v. {rng.choice(DEFENDANTS)}"),
            f"2:24-cv-{rng.randint(1000, 9999)}",
            f"2025-0{rng.randint(1, 9)}-{rng.randint(10, 28)}",
        )
        for _ in range(5)
    ]

    c.call(
        "search_caselaw",
        {"query": '"Anderson v. TikTok" section 230', "court": "njd", "filed_after": "2024-08-27"},
        json.dumps(
            {
                "count": 5,
                "results": [
                    {
                        "caseName": n,
                        "docketNumber": d,
                        "dateFiled": dt,
                        "court": "njd",
                        "published": False,
                        "absolute_url": (
                            "https://www.courtlistener.com/opinion/"
                            f"{rng.randint(10**7, 2 * 10**7)}/"
                            f"{n.lower().replace(' ', '-').replace('.', '').replace(',', '')}/"
                        ),
                        "snippet": prose(rng, 50),
                    }
                    for n, d, dt in dnj
                ],
            },
            indent=1,
        ),
    )

    c.say(
        "Commentary: the CRS Legal Sidebar LSB11097 "
        "(https://crsreports.congress.gov/product/pdf/LSB/LSB11097) and the Harvard Law "
        "Review's "
        "case comment (vol. 138) both read *Anderson* as creating a circuit split with "
        "*Force v. Facebook, Inc.*, No. 18-397 (2d Cir. 2019). "
        "In D.N.J., five decisions cite *Anderson*, but none is published, so under your "
        "instruction I'll list them only as context: "
        + "; ".join(f"{n}, No. {d} (D.N.J. {dt})" for n, d, dt in dnj)
        + "."
    )

    c.user(
        "Draft the memo now: 1) question presented, 2) short answer, 3) discussion with "
        "Third Circuit first, 4) risks. Under 1,200 words. "
        "Remember: published opinions only, docket numbers on every cite, nothing "
        "pre-2019 except Zeran and Roommates."
    )

    memo = [
        "MEMORANDUM — PRIVILEGED & CONFIDENTIAL / ATTORNEY WORK PRODUCT",
        "To: R. Brandt; From: Research; Date: 2026-01-22",
        "",
        (
            "1. Question presented: Whether 47 U.S.C. § 230(c)(1) bars New Jersey Products "
            "Liability Act design-defect and failure-to-warn claims premised on a platform's "
            "algorithmic recommendations."
        ),
        (
            "2. Short answer: Probably not in the Third Circuit. *Anderson v. TikTok, Inc.*, "
            f"No. 22-3061, 116 F.4th 180, 184 (3d Cir. 2024), {urls['22-3061']}, holds that "
            "algorithmic curation is first-party speech outside § 230(c)(1)."
        ),
        "3. Discussion.",
    ]

    for name, dock, rep, date, _court in CASES:
        if date >= "2019" or dock in ("97-1523", "04-56916"):
            memo.append(
                f"- *{name}*, No. {dock}, {rep} ({date[:4]}), {urls[dock]}: {prose(rng, 35)}."
            )

    memo += [
        (
            "4. Risks: (a) en banc or Supreme Court review of *Anderson*; (b) § 230(f)(4)(B) "
            "'pick, choose, analyze, or digest' argument; (c) PLA exclusivity under N.J.S.A. "
            "2A:58C-1(b)(3) may subsume negligence counts."
        )
    ]

    c.say("\n".join(memo))

    return c.write_abridged(out_dir, "s4_legal_research")
