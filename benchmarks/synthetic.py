"""Synthetic but realistic memories for the speed benchmarks (seeded, so runs are comparable).

A mix like a real store: ~30% facts (global and per conversation), ~70% chat turns spread over
conversations of ~200 turns, sentences of 8-40 words built from varied names, places, hobbies,
foods and jobs, so both the keyword and the vector index see realistic term statistics.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

NAMES = ["Anna", "Ben", "Carla", "David", "Elif", "Farid", "Grace", "Hugo", "Ines", "Jonas", "Kemal", "Lena",
         "Marta", "Nils", "Olga", "Pavel", "Quinn", "Rosa", "Sven", "Tara", "Umar", "Vera", "Wen", "Yusuf"]
PLACES = ["Lisbon", "Berlin", "Kyoto", "Toronto", "Nairobi", "Oslo", "Lima", "Hanoi", "Porto", "Denver",
          "the lake house", "the old harbour", "the climbing gym", "the farmers market", "the library"]
HOBBIES = ["pottery", "bouldering", "sourdough baking", "chess", "trail running", "birdwatching", "salsa",
           "woodworking", "watercolour painting", "sailing", "gardening", "photography", "the violin"]
FOODS = ["ramen", "sushi", "lentil soup", "tacos", "pad thai", "pierogi", "falafel", "risotto", "dumplings"]
JOBS = ["nurse", "architect", "data engineer", "teacher", "carpenter", "pharmacist", "translator", "chef"]
FACTS = [
    "The user's {rel} {name} lives in {place}.",
    "The user works as a {job} and starts at eight most days.",
    "The user is learning {hobby} on weekends.",
    "The user prefers {food} over {food2} and avoids peanuts.",
    "The user plans a trip to {place} with {name} in {month}.",
    "The user's favourite way to relax is {hobby} at {place}.",
]
USER = [
    "I finally tried {hobby} with {name} yesterday, it was harder than I expected but fun.",
    "We had {food} at a small place near {place}; {name} said it was the best in town.",
    "Work as a {job} has been intense this week, lots of late shifts.",
    "Yes, it was amazing!",
    "Not really, {name} cancelled at the last minute so we stayed home.",
    "Can you remind me what I said about the trip to {place}?",
    "I think I'll sign up for a {hobby} class in {month}.",
]
ASSISTANT = [
    "That sounds great! How did {name} like the {hobby} session?",
    "You mentioned earlier that you want to visit {place} in {month}.",
    "Did you go to the {hobby} workshop on Saturday?",
    "Here is a simple {food} recipe you could try this weekend.",
    "It makes sense to rest after such a long week as a {job}.",
]
MONTHS = ["January", "March", "May", "July", "September", "November"]
RELS = ["sister", "brother", "friend", "cousin", "colleague", "neighbour"]


@dataclass(frozen=True)
class SyntheticMemory:
    """One memory to write: text, conversation, role, kind and time."""

    text: str
    conversation_id: str
    role: str
    kind: str | None
    created_at: datetime


def _fill(rng: random.Random, template: str) -> str:
    return template.format(
        name=rng.choice(NAMES), place=rng.choice(PLACES), hobby=rng.choice(HOBBIES), food=rng.choice(FOODS),
        food2=rng.choice(FOODS), job=rng.choice(JOBS), month=rng.choice(MONTHS), rel=rng.choice(RELS),
    )


def memories(n: int, seed: int = 7, turns_per_conversation: int = 200) -> Iterator[SyntheticMemory]:
    """n memories: facts and alternating user/assistant turns, oldest about a year back."""
    rng = random.Random(seed)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    step = timedelta(days=365) / max(n, 1)
    for i in range(n):
        when = start + step * i
        conv = f"c{i // turns_per_conversation:05d}"
        if rng.random() < 0.3:
            where = "global" if rng.random() < 0.3 else conv
            yield SyntheticMemory(_fill(rng, rng.choice(FACTS)), where, "memory",
                                  rng.choice(["fact", "preference", "context"]), when)
        else:
            role = "user" if i % 2 == 0 else "assistant"
            yield SyntheticMemory(_fill(rng, rng.choice(USER if role == "user" else ASSISTANT)), conv, role,
                                  None, when)


def queries(n: int, seed: int = 11) -> list[str]:
    """Questions a user would ask that touch the synthetic vocabulary."""
    rng = random.Random(seed)
    forms = ["Where does my {rel} live?", "What did I say about {hobby}?", "Which food do I like, {food}?",
             "When is the trip to {place}?", "What is my job?", "Who went to {place} with me?",
             "Did {name} like the {hobby} class?"]
    return [_fill(rng, rng.choice(forms)) for _ in range(n)]
