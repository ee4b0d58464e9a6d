"""Spanish/Portuguese e-commerce support in OpenAI chat format (s5_ecommerce_es_pt)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.ninth_sessions.common import Conv, openai_tool
from tests.support.ninth_sessions.ecommerce_orders import (
    ES_ADDR,
    ES_ASKS,
    ES_NAMES,
    PRODUCTS,
    PT_ADDR,
    PT_ASKS,
    PT_NAMES,
    TOOLS,
    br,
    money,
    order_json,
    tracking_json,
)


def ecommerce_es_pt(out_dir: Path) -> list[Path]:
    c = Conv(
        505,
        (
            "Eres Lía, asistente del equipo de soporte de Aurora Casa (tienda online de "
            "hogar en España y Brasil). / Você é a Lía, assistente do "
            "suporte da Aurora Casa. Responde al operador en el idioma del cliente. Nunca "
            "prometas fechas que la transportadora no confirme."
        ),
        TOOLS,
        model="gpt-4o-2024-11-20",
    )

    rng = c.rng

    orders: list[dict[str, Any]] = []

    for k in range(24):
        pt = k % 2 == 1
        name = (PT_NAMES if pt else ES_NAMES)[k // 2 % 6]
        if k >= 12:
            name = (
                name.split()[0]
                + " "
                + rng.choice(["Pereira", "Gómez", "Santos", "Martín", "Lima", "Romero"])
            )
        items = [(p, v, rng.randint(1, 2)) for p, v in rng.sample(PRODUCTS, rng.randint(1, 3))]
        ship = rng.choice([0, 19.9, 29.9, 49.9])
        total = sum(v * q for _, v, q in items) + ship
        track = (
            f"{rng.choice(['LB', 'QB', 'OJ'])}{rng.randint(10**8, 10**9 - 1)}BR"
            if pt
            else f"PK{rng.randint(10**9, 10**10 - 1)}ES"
        )
        orders.append(
            {
                "id": f"AUR-{'BR' if pt else 'ES'}-{rng.randint(100000, 999999)}",
                "pt": pt,
                "name": name,
                "email": name.split()[0].lower()
                + "."
                + name.split()[-1].lower().replace("á", "a").replace("é", "e")
                + rng.choice(["@gmail.com", "@hotmail.com", "@outlook.es", "@uol.com.br"]),
                "phone": f"+55 11 9{rng.randint(1000, 9999)}-{rng.randint(1000, 9999)}"
                if pt
                else f"+34 6{rng.randint(10, 99)} {rng.randint(100, 999)} {rng.randint(100, 999)}",
                "items": items,
                "ship": ship,
                "total": total,
                "status": rng.choice(["enviado", "en tránsito", "entregado", "en preparación"]),
                "created": f"2026-01-{rng.randint(3, 15):02d}",
                "addr": (PT_ADDR if pt else ES_ADDR)[k // 2 % 6],
                "carrier": rng.choice(["Correios SEDEX", "Jadlog", "Loggi"])
                if pt
                else rng.choice(["SEUR", "Correos Express", "MRW"]),
                "track": track,
                "eta": f"{rng.randint(20, 31)}/01/2026",
                "ticket": f"TCK-{rng.randint(40000, 49999)}",
            }
        )

    c.user(
        "Hola Lía, hoy llevo la cola de tickets de España y Brasil. Reglas de hoy: nunca "
        "emitas un reembolso de más de 300 € / R$ 1.500,00 sin "
        "que yo lo apruebe, y no cambies direcciones de pedidos que ya salieron del "
        "almacén. Responde siempre al cliente en su idioma. "
        "Empezamos."
    )

    c.say(
        "¡Hola! Entendido: reembolsos por encima de 300 € o R$ 1.500,00 solo con tu "
        "aprobación, no modifico direcciones de pedidos ya enviados "
        "y respondo en el idioma del cliente. ¿Cuál es el primer ticket?"
    )

    c.call(
        "consultar_politica",
        {"topico": "devoluciones y reembolsos ES/BR"},
        "POLÍTICA DE DEVOLUCIONES (v2026.1)\n\n"
        + "\n".join(
            f"{k}. {t}"
            for k, t in enumerate(
                [
                    (
                        "España: 30 días naturales desde la entrega (Ley General para la "
                        "Defensa de los Consumidores, art. 102 y ss.); gastos de devolución a "
                        "cargo de Aurora si el producto es defectuoso."
                    ),
                    (
                        "Brasil: direito de arrependimento de 7 dias (CDC, art. 49) para "
                        "compras online; reembolso integral incluindo frete."
                    ),
                    (
                        "Reembolsos parciales por daño estético: hasta el 20% del precio del "
                        "artículo sin devolución."
                    ),
                    "Colchões: não aceitamos devolução após retirada do lacre, salvo defeito.",
                    (
                        "Plazos de reembolso: tarjeta 5–10 días hábiles; PIX até 2 dias "
                        "úteis; Bizum 48 h."
                    ),
                    (
                        "Escalado: importes > 300 € / R$ 1.500,00 requieren aprobación del "
                        "supervisor (SUP-APPROVAL)."
                    ),
                    (
                        "Cambios de dirección: solo con estado 'en preparación'. Nunca "
                        "después de 'enviado'."
                    ),
                ]
                * 3,
                start=1,
            )
        ),
    )

    for k, o in enumerate(orders):
        if k == 9:
            c.user(
                "Nota del supervisor (in English, pasted from Slack): Always include the "
                "refund id (RMB-...) in the customer message. Don't refund shipping on ES "
                "orders older than 30 days."
            )
            c.say(
                "Anotado: incluiré siempre el id de reembolso (RMB-…) en el mensaje al "
                "cliente y no reembolsaré el envío en pedidos ES de más de 30 días."
            )
        asks = PT_ASKS if o["pt"] else ES_ASKS
        ask = asks[k // 2 % 6].format(
            id=o["id"],
            eta=o["eta"],
            track=o["track"],
            prod=o["items"][0][0],
            total=money(o["total"], o["pt"]),
            carrier=o["carrier"],
        )
        c.user(f'Ticket {o["ticket"]} de {o["name"]} <{o["email"]}>:\n\n"{ask}"')
        c.calls(
            [
                ("buscar_pedido", {"pedido_id": o["id"]}, order_json(rng, o)),
                (
                    "rastrear_envio",
                    {"codigo": o["track"], "transportadora": o["carrier"]},
                    tracking_json(rng, o),
                ),
            ]
        )
        kind = k // 2 % 6
        if kind == 2:
            if o["status"] in ("enviado", "en tránsito", "entregado"):
                c.say(
                    f"El pedido {o['id']} ya está en estado «{o['status']}», así que según "
                    f"tus reglas no cambio la dirección. Propongo pedir a {o['carrier']} "
                    f"una redirección con el código {o['track']}."
                    if not o["pt"]
                    else (
                        f"O pedido {o['id']} já está com status «{o['status']}»; pela regra de "
                        "hoje não altero o endereço. Sugiro pedir redirecionamento à "
                        f"{o['carrier']} (código {o['track']})."
                    )
                )
            else:
                new = (
                    "Calle Mayor 18, 2º izq., 28013 Madrid"
                    if not o["pt"]
                    else "Rua Oscar Freire 379, Jardins, São Paulo - SP, 01426-001"
                )
                c.call(
                    "atualizar_endereco",
                    {"pedido_id": o["id"], "endereco": new},
                    json.dumps(
                        {"ok": True, "pedido": o["id"], "nova_entrega": new}, ensure_ascii=False
                    ),
                )
                c.say(f"Dirección del pedido {o['id']} actualizada a: {new}.")
        elif kind in (1, 3, 4):
            val = o["total"] if kind != 1 else round(o["items"][0][1] * 0.2, 2)
            limit = 1500 if o["pt"] else 300
            if val > limit:
                c.say(
                    f"El reembolso sería de {money(val, o['pt'])}, por encima del límite "
                    f"de {money(limit, o['pt'])}. Necesito tu aprobación antes de "
                    "emitirlo."
                )
                c.user(
                    rng.choice(
                        [
                            "Aprobado, adelante.",
                            "Ok, aprovado. Pode emitir.",
                            "No, espera; ofrece solo el 20% por daño estético.",
                        ]
                    )
                )
                if c.events[-1][1].startswith("No"):
                    val = round(o["items"][0][1] * 0.2, 2)
            motivo = [
                "daño estético 20%",
                "cobro duplicado",
                "desistimiento",
                "avaria no transporte",
                "cobrança duplicada",
                "direito de arrependimento",
            ][kind % 3 + (3 if o["pt"] else 0)]
            c.call(
                "emitir_reembolso",
                {
                    "pedido_id": o["id"],
                    "valor": br(val),
                    "moeda": "BRL" if o["pt"] else "EUR",
                    "motivo": motivo,
                },
                json.dumps(
                    {
                        "reembolso_id": f"RMB-{rng.randint(100000, 999999)}",
                        "valor": money(val, o["pt"]),
                        "estado": "procesado",
                        "plazo": "PIX até 2 dias úteis" if o["pt"] else "5–10 días hábiles",
                    },
                    ensure_ascii=False,
                ),
            )
            c.say(f"Reembolso de {money(val, o['pt'])} emitido para {o['id']} ({motivo}).")
        else:
            c.say(
                (
                    f"Según {o['carrier']}, el envío {o['track']} tiene el último evento "
                    f"del {rng.randint(14, 20)}/01/2026. No puedo prometer fecha hasta que "
                    "la transportadora la confirme; abro incidencia."
                )
                if not o["pt"]
                else (
                    f"Segundo a {o['carrier']}, o objeto {o['track']} teve o último evento "
                    f"em {rng.randint(14, 20)}/01/2026. Não posso prometer data sem "
                    "confirmação da transportadora; vou abrir reclamação."
                )
            )
        msg = (
            (
                f"Hola {o['name'].split()[0]}, gracias por escribirnos. Hemos revisado tu "
                f"pedido {o['id']} y "
            )
            + rng.choice(
                [
                    "ya hemos emitido el reembolso; lo verás en 5–10 días hábiles.",
                    "hemos abierto una incidencia con la transportadora.",
                    "te confirmamos los pasos de devolución por email.",
                ]
            )
            + " Un saludo, equipo Aurora Casa."
            if not o["pt"]
            else (
                f"Olá {o['name'].split()[0]}, obrigado pelo contato. Verificamos o pedido "
                f"{o['id']} e "
            )
            + rng.choice(
                [
                    "o estorno já foi emitido; via PIX cai em até 2 dias úteis.",
                    "abrimos uma reclamação com a transportadora.",
                    "enviamos a etiqueta de devolução por e-mail.",
                ]
            )
            + " Abraços, equipe Aurora Casa."
        )
        c.call(
            "enviar_mensagem",
            {"ticket_id": o["ticket"], "texto": msg},
            json.dumps({"ok": True, "ticket": o["ticket"], "estado": "pendiente cliente"}),
        )
        c.say(
            f"Mensaje enviado en el ticket {o['ticket']}."
            if not o["pt"]
            else f"Mensagem enviada no ticket {o['ticket']}."
        )

    c.user(
        "Genial. Hazme un resumen de la cola: ticket, pedido, cliente, acción y importe "
        "reembolsado, y el total reembolsado en EUR y en BRL por separado."
    )

    c.say(
        "| Ticket | Pedido | Cliente | Acción |\n|---|---|---|---|\n"
        + "\n".join(f"| {o['ticket']} | {o['id']} | {o['name']} | ver arriba |" for o in orders)
        + (
            "\n\nNingún reembolso superó el límite sin tu aprobación y no se cambió ninguna "
            "dirección de pedidos enviados."
        )
    )

    path = c.write_openai(out_dir, "s5_ecommerce_es_pt")
    meta = {"tools": [openai_tool(t) for t in TOOLS]}
    meta_path = out_dir / "s5_ecommerce_es_pt.meta.json"
    meta_path.write_text(json.dumps(meta, ensure_ascii=False, indent=1), encoding="utf-8")
    return [path, meta_path]
