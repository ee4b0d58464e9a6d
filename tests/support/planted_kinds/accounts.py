"""Account-desk sessions: one prompt per account stating facts of the new kinds (people and
owners, phones, exact copy, endpoints, branches, deadlines with zones, PO numbers, config
keys), with working turns between, so the ledger is under pressure at 16k and 32k alike."""

from __future__ import annotations

from pathlib import Path

from tests.support.planted_kinds.session import PlantedSession

COMPANIES = [
    "Globex",
    "Initech",
    "Umbrella",
    "Hooli",
    "Stark",
    "Wayne",
    "Acme",
    "Soylent",
    "Tyrell",
    "Cyberdyne",
    "Wonka",
    "Oscorp",
    "Vandelay",
    "Pied Piper",
    "Massive Dynamic",
]
FIRST = [
    "Karen",
    "Jo",
    "Ravi",
    "Mei",
    "Olu",
    "Sven",
    "Ana",
    "Yusuf",
    "Grace",
    "Tariq",
    "Elif",
    "Bruno",
    "Chloe",
    "Kenji",
    "Fatima",
]
LAST = [
    "Liu",
    "Park",
    "Menon",
    "Zhang",
    "Adeyemi",
    "Lund",
    "Costa",
    "Demir",
    "Hopper",
    "Aziz",
    "Kaya",
    "Rossi",
    "Martin",
    "Mori",
    "Haddad",
]
TEAMS = ["Team Osprey", "Team Kestrel", "Team Heron", "Team Plover", "Team Wren"]
REGIONS = ["EU", "APAC", "LATAM", "MEA"]


def account_desk(
    out: Path,
    name: str = "account-desk-909",
    seed: int = 909,
    rounds: int = 1,
    fillers: int = 4,
) -> list[Path]:
    """Account desk, English: `rounds` passes over the fifteen accounts (regional ones after
    the first), each account's prompt stating facts of one of five shapes, then `fillers`
    working turns; two of the user's early statements are reversed on the way."""
    s = PlantedSession(
        name, seed, "You are an account-management assistant with CRM and ticket tools."
    )
    r = s.r
    s.user(
        "Today we clean up the enterprise accounts. Always cc legal@northwind.io on renewal "
        "emails. Globex is owned by Team Heron. Pull the list first."
    )
    s.call("Listing.", "lookup_ticket", {"ticket_id": "ACCOUNTS"}, s.log(60))
    s.say("I have the 15 enterprise accounts.")
    for k, base in enumerate(COMPANIES * rounds):
        company = base
        if k >= len(COMPANIES):
            company = f"{base} {REGIONS[k // len(COMPANIES) - 1]}"
        who = f"{FIRST[k % 15]} {LAST[(k * 7 + k // 15) % 15]}"
        team = TEAMS[k % len(TEAMS)]
        phone = f"+1 ({r.randint(201, 989)}) 555-{r.randint(1000, 9999)}"
        slug = company.lower().replace(" ", "-")
        variant = k % 5
        if variant == 0:
            t = (
                f"Note for {company}: the billing contact is now {who}, {phone}. "
                f"{team} owns the account."
            )
            s.plant("person", "user", who)
            s.plant("phone", "user", phone)
            s.pair("owner", "user", team, company)
        elif variant == 1:
            quote = (
                f"Payment terms: net {r.choice([30, 45, 60])}, no early-pay discount for {company}."
            )
            t = (
                f'{company} wants the invoice footer to read exactly "{quote}" '
                "Their renewal call is Tuesday 10:30 PST."
            )
            s.plant("quoted", "user", quote)
            s.plant("deadline_tz", "user", "Tuesday 10:30 PST")
        elif variant == 2:
            ep = f"PUT /v1/accounts/{{id}}/{r.choice(['plan', 'seats', 'billing'])}"
            t = (
                f"{company}'s integration calls {ep}; {who} from their side tests it. "
                f"Use branch crm/{slug}-sync for the change."
            )
            s.plant("endpoint", "user", ep)
            s.plant("person", "user", who)
            s.plant("branch", "user", f"crm/{slug}-sync")
        elif variant == 3:
            key = f"accounts.{slug.replace('-', '_')}.seat_cap"
            t = (
                f"Raise {company}'s seat cap: the key is {key}, set it to {r.randint(120, 900)}. "
                f"Ask {who} before {r.choice(['Friday', 'Monday'])} EOD CET."
            )
            s.plant("config", "user", key)
            s.plant("person", "user", who)
        else:
            po = f"PO {r.randint(10, 99)}-{r.randint(1000, 9999)}-{r.choice('ABCD')}"
            t = f"For {company} quote {po} on every invoice and cc {who} at {phone}."
            s.plant("po", "user", po)
            s.plant("phone", "user", phone)
            s.plant("person", "user", who)
        s.user(t)
        s.say("Noted.")
        if k == 3:
            s.reversal("Globex is owned by Team Heron", "Globex moved to Team Wren", "user")
            s.user("FYI, Globex moved to Team Wren last week.")
            s.say("Noted.")
        if k == 5:
            s.reversal(
                "Always cc legal@northwind.io on renewal emails", "Stop cc'ing legal", "user"
            )
            s.user("Stop cc'ing legal on renewals; they asked to be taken off those threads.")
            s.say("Understood.")
        for j in range(fillers):
            s.filler_turn(k * 10 + j, ask=f"Next: check {company}'s ticket backlog, part {j + 1}.")
    s.user(
        "Recap for the handover: for each account, who is the contact and owner, phones, "
        "footers, endpoints, branches, keys and POs."
    )
    s.say("Recap follows.")
    return s.write(out)


def account_desk_long(out: Path) -> list[Path]:
    """The account desk over four rounds (sixty accounts) with five working turns each."""
    return account_desk(out, "account-desk-long-911", 911, rounds=4, fillers=5)
