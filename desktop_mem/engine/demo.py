"""A small demo store for first run and screenshots: every change is a real commit."""

from __future__ import annotations

from datetime import timedelta

from desktop_mem.engine.models import Operation, Role, utc_now
from desktop_mem.engine.store.conversations import Conversations
from desktop_mem.engine.store.memory_writes import MemoryWrites
from desktop_mem.engine.store.transaction import StoreWriter

_TURNS = {
    "trip-to-lisbon": [
        ("user", "I'm planning a trip to Lisbon in May with my sister Anna."),
        ("assistant", "Lovely! May is a great time for Lisbon. Do you want help with neighbourhoods?"),
        ("user", "Yes please, we like quiet places and good seafood."),
        ("assistant", "Then Alfama in the morning and Cais do Sodré for seafood in the evening."),
    ],
    "garden": [
        ("user", "My tomatoes get yellow leaves. I water them every evening."),
        ("assistant", "Evening watering keeps leaves wet overnight; try mornings, at the soil."),
    ],
}


def create_demo_store(writes: MemoryWrites, conversations: Conversations, writer: StoreWriter) -> None:
    """Fill an (empty) store with conversations, facts, a replacement, a soft delete and summaries."""
    start = utc_now() - timedelta(days=20)
    writes.add("The user's name is Sam", kind="fact", created_at=start)
    writes.add("The user prefers short answers with examples", kind="preference",
               created_at=start + timedelta(hours=1))
    old_job = writes.add("The user works as a teacher in Porto", kind="fact",
                         created_at=start + timedelta(days=1))
    conversations.new("Trip to Lisbon")
    conversations.new("Garden")
    conversations.new("Work notes")
    for conv, turns in _TURNS.items():
        for role, text in turns:
            writes.add(text, conversation_id=conv, role=role, source="manual" if role == Role.USER else "llm")
    writes.add("The user travels with their sister Anna", conversation_id="trip-to-lisbon")
    writes.add("The user likes quiet places and seafood", conversation_id="trip-to-lisbon", kind="preference")
    writes.add("The user waters the tomatoes in the evening", conversation_id="garden")
    writes.add("The user's tomato plants have yellow leaves", conversation_id="garden", kind="context")
    writes.replace(old_job.id, "The user works as a data analyst in Lisbon")
    scratch = writes.add("The user wants to learn Portuguese", conversation_id="work-notes")
    writes.delete(scratch.id)
    versions = (
        ("Sam plans a May trip to **Lisbon** with their sister Anna. They like quiet places and "
         "seafood; suggested Alfama (mornings) and Cais do Sodré (evenings).", 2),
        ("Sam plans a May trip to **Lisbon** with their sister Anna.\n\n- Likes quiet places and "
         "seafood\n- Alfama in the mornings, Cais do Sodré for dinner", 4),
    )
    for text, covered in versions:  # two versions, so the summary pane has a history to diff
        subject = "Update summary of trip-to-lisbon"
        with writer.transaction(Operation.SUMMARY, subject, "trip-to-lisbon") as tx:
            tx.write_summary("trip-to-lisbon", text, summarized_count=covered)
