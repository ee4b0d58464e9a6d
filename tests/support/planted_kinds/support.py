"""Support sessions: an English warranty desk and an Arabic billing desk, both chat-heavy."""

from __future__ import annotations

from pathlib import Path

from tests.support.planted_kinds.session import PlantedSession


def support(out: Path) -> list[Path]:
    """Support desk, English, many short prompts: customers, emails, phones, exact copy text,
    agent questions and the user's answers, an account not to use, times with zones."""
    s = PlantedSession(
        "support-desk-902", 902, "You are a support agent for Lumen Bikes. Be concise."
    )
    s.user("New shift. Today we handle the warranty queue; first pull ticket LB-20931.")
    s.call("Looking it up.", "lookup_ticket", {"ticket_id": "LB-20931"}, s.log(40))
    s.say("Ticket LB-20931 is a frame crack claim from March.")
    s.plant("person", "user", "Hannah Okafor", "Marcus Bell", "Aiko Tanaka")
    s.plant("email", "user", "hannah.okafor@gmail.com", "m.bell@bellcycles.co.uk")
    s.plant("phone", "user", "(212) 555-0187", "07700 900461")
    s.plant(
        "quoted",
        "user",
        "We're sorry your ride was interrupted. A replacement frame ships within 5 business days.",
        "Warranty does not cover crash damage.",
    )
    s.plant(
        "donotuse", "user", "support-shared@lumenbikes.com", "the legacy Zendesk macro 'Refund-All'"
    )
    s.plant("deadline_tz", "user", "9:00 AM ET", "16:30 GMT")
    s.user(
        "The customer on LB-20931 is Hannah Okafor (hannah.okafor@gmail.com, (212) 555-0187). "
        "The dealer is Marcus Bell of Bell Cycles, m.bell@bellcycles.co.uk, 07700 900461. "
        "Aiko Tanaka from QA approves frame replacements. When you approve, reply with exactly "
        "this text: \"We're sorry your ride was interrupted. A replacement frame ships within 5 "
        'business days." When you deny, use exactly "Warranty does not cover crash damage." '
        "Do not send from support-shared@lumenbikes.com and do not use the legacy Zendesk macro "
        "'Refund-All'. Call-backs only after 9:00 AM ET; the UK dealer desk closes at 16:30 GMT."
    )
    s.say("Got it.")
    # agent asks, user answers
    ship = (
        "Should I ship the replacement to the dealer (Bell Cycles, Leeds) or to Hannah's home "
        "address in Brooklyn?"
    )
    s.plant("question", "agent", ship)
    s.say(ship)
    s.pair("answer", "user", "the dealer", "Bell Cycles")
    s.user("Ship it to the dealer.")
    s.say("Will do: shipping to the dealer.")
    size = "Which frame size do you want me to put on the order, 54 cm or 56 cm?"
    s.plant("question", "agent", size)
    s.say(size)
    s.user("The larger one.")
    s.pair("answer", "user", "The larger one", "56 cm")
    s.say("Noted, the larger one.")
    s.plant("final_answer", "agent", "RMA-77120", "Hannah's frame serial is LMN-F-0042291")
    s.say(
        "Done. I opened return authorization RMA-77120; Hannah's frame serial is LMN-F-0042291 "
        "and it matches the recall batch."
    )
    for k in range(110):
        if k % 3 == 0:
            tid = f"LB-{21000 + k}"
            s.user(f"Next ticket {tid}.")
            s.call(
                "Looking it up.", "lookup_ticket", {"ticket_id": tid}, s.log(s.r.randint(30, 90))
            )
            s.say(f"{tid}: {s.words(20)}. I replied with the standard text.")
        else:
            s.chat_turn(k)
    s.late(
        "Anything from the dealer call?",
        "Marcus said the courier is DPD, parcel 15501234567890, and that their workshop manager "
        'Gareth Lyle signs for deliveries. He asked us to write "Attn: Workshop" on the label.',
        [
            ("person", "Gareth Lyle"),
            ("final_answer", "parcel 15501234567890"),
            ("quoted", "Attn: Workshop"),
        ],
    )
    for k in range(110, 116):
        s.chat_turn(k)
    s.user(
        "End of shift: remind me of the customer's contacts, the dealer's, who approves, the "
        "exact approve and deny texts, what not to use, call-back hours, where we ship and which "
        "frame size, and the RMA."
    )
    s.say("Here it is.")
    return s.write(out)


def support_ar(out: Path) -> list[Path]:
    """Support, Arabic, chat-heavy: rules in Arabic (no rule word the ledger reads), names,
    phone numbers, amounts, exact reply text."""
    s = PlantedSession("support-ar-906", 906, "أنت وكيل دعم لشركة اتصالات. أجب بالعربية.")
    s.user("مرحبا، سنعالج اليوم شكاوى الفواتير.")
    s.say("أهلا، أنا جاهز.")
    s.plant("person", "user", "أحمد الشمري", "ليلى حداد")
    s.plant("phone", "user", "+966 55 123 4567")
    s.plant("rule_ar", "user", "لا تعرض استرداد أكثر من 200 ريال دون موافقة ليلى حداد")
    s.plant("quoted", "user", "نعتذر عن الإزعاج، تم تعديل فاتورتك.")
    s.user(
        "العميل هو أحمد الشمري، رقمه +966 55 123 4567. "
        "لا تعرض استرداد أكثر من 200 ريال دون موافقة ليلى حداد. "
        'عند إغلاق الشكوى اكتب حرفيا: "نعتذر عن الإزعاج، تم تعديل فاتورتك."'
    )
    s.say("مفهوم.")
    s.plant("final_answer", "agent", "رقم المرجع CR-55812")
    s.say("تم فتح الطلب، رقم المرجع CR-55812، والمبلغ المسترد 150 ريال.")
    for k in range(150):
        s.chat_turn(k)
    s.late(
        "هل هناك شيء آخر؟",
        "المشرفة سارة العتيبي طلبت إرسال الإيصال إلى billing-ksa@telco.example "
        'وكتابة "تمت المعالجة" في الملاحظة.',
        [("person", "سارة العتيبي"), ("quoted", "تمت المعالجة")],
    )
    for k in range(150, 156):
        s.chat_turn(k)
    s.user("ذكرني: اسم العميل ورقمه، حد الاسترداد ومن يوافق، النص الحرفي، ورقم المرجع.")
    s.say("إليك الملخص.")
    return s.write(out)
