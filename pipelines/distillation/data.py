"""A small built-in English text set for the distillation pipeline (no download): sentences to
distil on, and held-out sentences split into a prompt and the continuation to compare with.
"""
from __future__ import annotations

#: A CI-sized run (--quick): distillation steps, held-out items, new tokens a continuation.
QUICK = {"steps": 4, "heldout": 3, "max_new_tokens": 8}

TRAIN_TEXTS = [
    "The sun rises in the east and sets in the west.",
    "Water boils at one hundred degrees Celsius at sea level.",
    "My grandmother grows tomatoes and beans in her small garden.",
    "The train to the city leaves every morning at seven o'clock.",
    "Cats like to sleep in warm places near the window.",
    "The library is quiet, so please speak softly.",
    "He opened the door and saw that it was raining outside.",
    "Children learn to read by listening to stories every day.",
    "The museum has a large collection of paintings from Italy.",
    "She poured a cup of tea and sat down to read the newspaper.",
    "A good night's sleep helps the body and the mind recover.",
    "The river flows through the valley towards the sea.",
    "They bought fresh bread and cheese at the market on Saturday.",
    "The teacher asked the students to write a short essay about summer.",
    "Bicycles are a cheap and healthy way to travel around town.",
    "The old bridge was repaired after the winter storms.",
    "Doctors recommend eating fruit and vegetables every day.",
    "The concert started late because the singer was stuck in traffic.",
    "Birds build their nests in the spring to protect their eggs.",
    "The company announced that its sales increased last year.",
    "We walked along the beach and collected shells in a bucket.",
    "The recipe needs two eggs, a cup of flour and some milk.",
    "Mountains are often covered with snow during the winter months.",
    "The computer restarted after the software update was installed.",
    "My brother plays football with his friends after school.",
    "The city council voted to build a new park near the station.",
    "Farmers harvest wheat at the end of the summer.",
    "The dog barked loudly when the postman came to the door.",
    "Reading before bed is a habit that many people enjoy.",
    "The scientists measured the temperature of the ocean every hour.",
]

HELDOUT_TEXTS = [
    "The moon shines brightly in the clear night sky.",
    "She walked to the shop to buy milk and bread for breakfast.",
    "The students listened carefully while the teacher explained the lesson.",
    "Heavy rain caused the river to flood the nearby fields.",
    "He drinks a cup of coffee every morning before work.",
    "The children played in the park until the sun went down.",
    "The new library opened last week in the centre of the town.",
    "Fresh vegetables from the garden taste better than those from the shop.",
    "The plane landed safely despite the strong wind.",
    "My sister is learning to play the piano at music school.",
    "The workers finished building the house before the winter.",
    "A small cat was sleeping on the chair in the kitchen.",
]


def heldout_items(n: int | None = None) -> list[dict[str, str]]:
    """Held-out items: ``prompt`` (first half of the words), ``reference`` (the rest), ``text`` (all)."""
    items = []
    for text in HELDOUT_TEXTS[:n]:
        words = text.split()
        cut = max(1, len(words) // 2)
        items.append({"prompt": " ".join(words[:cut]), "reference": " ".join(words[cut:]), "text": text})
    return items
