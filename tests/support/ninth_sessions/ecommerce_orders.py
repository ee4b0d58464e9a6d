"""Orders, tracking and customer asks for the Spanish/Portuguese support session."""

from __future__ import annotations

import json
import random
from typing import Any

from tests.support.ninth_sessions.common import schema

TOOLS = [
    schema(
        "buscar_pedido",
        "Busca un pedido por su número / Busca um pedido pelo número.",
        pedido_id="string",
    ),
    schema(
        "rastrear_envio",
        "Estado del envío en la transportadora.",
        codigo="string",
        transportadora="string",
    ),
    schema(
        "emitir_reembolso",
        "Emite un reembolso total o parcial.",
        pedido_id="string",
        valor="string",
        moeda="string",
        motivo="string",
    ),
    schema(
        "atualizar_endereco",
        "Cambia la dirección de entrega si el pedido no salió.",
        pedido_id="string",
        endereco="string",
    ),
    schema(
        "enviar_mensagem",
        "Envía un mensaje al cliente en el ticket.",
        ticket_id="string",
        texto="string",
    ),
    schema(
        "consultar_politica",
        "Consulta la política interna (devoluciones, garantías, plazos).",
        topico="string",
    ),
]

ES_NAMES = [
    "María José Fernández",
    "Javier Ruiz Ortega",
    "Lucía Navarro",
    "Andrés Molina",
    "Carmen Delgado",
    "Sergio Castillo",
]

PT_NAMES = [
    "Ana Beatriz Souza",
    "João Pedro Almeida",
    "Mariana Ferreira",
    "Rafael Oliveira",
    "Camila Ribeiro",
    "Thiago Carvalho",
]

ES_ADDR = [
    "Calle de Alcalá 214, 3º B, 28028 Madrid",
    "Avinguda Diagonal 455, 08036 Barcelona",
    "Calle Larios 12, 29005 Málaga",
    "Gran Vía 31, 48011 Bilbao",
    "Calle San Fernando 4, 41004 Sevilla",
    "Avenida del Puerto 120, 46023 Valencia",
]

PT_ADDR = [
    "Rua Augusta 1508, apto 92, Consolação, São Paulo - SP, 01304-001",
    "Av. Atlântica 2364, Copacabana, Rio de Janeiro - RJ, 22041-001",
    "Rua da Bahia 1148, Centro, Belo Horizonte - MG, 30160-011",
    "Av. Boa Viagem 3500, Recife - PE, 51020-000",
    "Rua XV de Novembro 700, Curitiba - PR, 80020-310",
    "SCLN 210 Bloco C, Asa Norte, Brasília - DF, 70862-530",
]

PRODUCTS = [
    ("Sofá cama Nórdico 3 plazas", 899.0),
    ("Juego de sartenes Cerâmica Pro", 129.9),
    ("Colchão Viscoelástico Queen", 2349.9),
    ("Lámpara de pie Arco latón", 219.0),
    ("Jogo de cama 400 fios", 459.9),
    ("Mesa de centro roble", 349.0),
    ("Aspirador robô Aurora X2", 1899.0),
    ("Cortinas blackout 2x", 79.95),
    ("Panela de pressão elétrica 6L", 689.9),
]

ES_ASKS = [
    (
        "Buenas, mi pedido {id} tenía que llegar el {eta} y no sé nada. El seguimiento "
        "{track} no se mueve desde hace 4 días. ¿Qué pasa? Necesito el sofá antes del sábado "
        "porque vienen mis suegros."
    ),
    (
        "Hola, me ha llegado la {prod} con un golpe en la esquina. Pedido {id}. Pagué {total} "
        "en total. Quiero una solución, no devolverla entera si puede ser."
    ),
    (
        "Quiero cambiar la dirección de entrega del pedido {id} a Calle Mayor 18, 2º izq., "
        "28013 Madrid. Me mudo el lunes."
    ),
    (
        "Me habéis cobrado dos veces el pedido {id} ({total}). Os mando captura del banco. "
        "¡Devolvedme el duplicado ya, por favor!"
    ),
    (
        "No quiero la {prod}, es más grande de lo que parecía. Pedido {id}. ¿Cómo la devuelvo "
        "y cuánto me devolvéis?"
    ),
    (
        "El repartidor de {carrier} dice que estaba ausente pero yo estaba en casa todo el "
        "día. Pedido {id}, seguimiento {track}."
    ),
]

PT_ASKS = [
    (
        "Oi, comprei o {prod} (pedido {id}) e até agora não chegou. O rastreio {track} está "
        "parado em Cajamar. Paguei {total} no PIX. Podem verificar?"
    ),
    (
        "Boa tarde! Meu pedido {id} chegou com a {prod} quebrada. Quero o reembolso integral, "
        "por favor, ou a troca."
    ),
    (
        "Preciso mudar o endereço do pedido {id} para Rua Oscar Freire 379, Jardins, São "
        "Paulo - SP, 01426-001. É possível?"
    ),
    (
        "Fui cobrada duas vezes no cartão pelo pedido {id}. Valor {total}. Quero o estorno de "
        "uma das cobranças."
    ),
    "Me arrependi da compra do pedido {id}, ainda estou dentro dos 7 dias. Como faço a devolução?",
    (
        "O entregador da {carrier} marcou 'destinatário ausente' mas eu estava em casa. "
        "Pedido {id}, código {track}."
    ),
]


NOTES = [
    "cliente llamó preguntando por el plazo",
    "endereço validado pelo CEP",
    "pago retenido 24 h por revisión",
    "cliente VIP, 6 pedidos en 2025",
    "etiqueta reimpresa",
]


def br(x: float) -> str:
    s = f"{x:,.2f}"
    return s.replace(",", "X").replace(".", ",").replace("X", ".")


def money(x: float, pt: bool) -> str:
    return f"R$ {br(x)}" if pt else f"{br(x)} €"


def order_json(rng: random.Random, o: dict[str, Any]) -> str:
    return json.dumps(
        {
            "pedido": o["id"],
            "cliente": {"nombre": o["name"], "email": o["email"], "telefone": o["phone"]},
            "estado": o["status"],
            "creado": o["created"],
            "pais": "BR" if o["pt"] else "ES",
            "itens": [
                {
                    "sku": f"AUR-{rng.randint(10000, 99999)}",
                    "descricao": p,
                    "qtd": q,
                    "preco_unitario": money(v, o["pt"]),
                }
                for p, v, q in o["items"]
            ],
            "frete": money(o["ship"], o["pt"]),
            "total": money(o["total"], o["pt"]),
            "pago_com": rng.choice(["PIX", "Visa ****4417", "Bizum", "PayPal", "Boleto"]),
            "entrega": {
                "direccion": o["addr"],
                "transportadora": o["carrier"],
                "codigo_rastreio": o["track"],
                "prevista": o["eta"],
            },
            "historial": [
                {
                    "fecha": (
                        f"2026-01-{rng.randint(5, 20):02d} "
                        f"{rng.randint(8, 22):02d}:{rng.randint(0, 59):02d}"
                    ),
                    "evento": e,
                }
                for e in rng.choices(
                    [
                        "pedido creado",
                        "pago confirmado",
                        "nota fiscal emitida",
                        "en preparación",
                        "enviado",
                        "incidencia de transporte",
                        "cliente contactado",
                        "etiqueta generada",
                        "recogido por transportista",
                        "antifraude: aprobado",
                    ],
                    k=14,
                )
            ],
            "notas_internas": [
                (f"{rng.choice(['Operador', 'Sistema', 'Antifraude'])}: {rng.choice(NOTES)}")
                for _ in range(6)
            ],
        },
        ensure_ascii=False,
        indent=1,
    )


def tracking_json(rng: random.Random, o: dict[str, Any]) -> str:
    ev = []
    for _k in range(rng.randint(14, 26)):
        ev.append(
            {
                "data": (
                    f"{rng.randint(10, 22)}/01/2026 "
                    f"{rng.randint(6, 23):02d}:{rng.randint(0, 59):02d}"
                ),
                "local": rng.choice(
                    [
                        "CTE Cajamar/SP",
                        "CDD Copacabana/RJ",
                        "Centro logístico Coslada",
                        "Hub Zaragoza Plaza",
                        "Unidade de Tratamento Curitiba/PR",
                        "Delegación Málaga",
                    ]
                ),
                "status": rng.choice(
                    [
                        "Objeto postado",
                        "Objeto em trânsito - por favor aguarde",
                        "En reparto",
                        "Ausente - se dejó aviso",
                        "Objeto saiu para entrega ao destinatário",
                        "Destinatário ausente",
                        "Clasificado en centro de tratamiento",
                        "Aguardando retirada na agência",
                    ]
                ),
            }
        )
    return json.dumps(
        {
            "codigo": o["track"],
            "transportadora": o["carrier"],
            "eventos": ev,
            "ultima_atualizacao": ev[-1]["data"],
        },
        ensure_ascii=False,
        indent=1,
    )
