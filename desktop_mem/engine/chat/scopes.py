"""Whose fact is it: the user's (read in every conversation) or this conversation's task.

A fact about the user - who they are, family and pets, work, home, health, likes and dislikes,
habits, standing plans - belongs to the user and is filed in the user scope (the `global`
conversation id: every conversation's read path already reads it, agent-cli's included). A fact
about what one conversation is working on (a trip being planned, a text being written) stays in
that conversation.

The extraction prompt asks the model which list a fact belongs to; these pattern rules decide
when the model did not say, and overrule it for the core facts (name, family, work, home,
health), which a small model now and then files under the task.
"""

from __future__ import annotations

import re
from typing import Literal

from desktop_mem.engine.models import GLOBAL_CONVERSATION

Scope = Literal["user", "conversation"]
USER: Scope = "user"
CONVERSATION: Scope = "conversation"

# Core facts about the user: always the user's, whatever the model said.
_CORE = re.compile(
    r"\b(?:name[ds]?|called|"
    r"wife|husband|partner|spouse|married|daughters?|sons?|child|children|kids?|baby|babies|"
    r"mother|mom|mum|father|dad|parents?|sisters?|brothers?|siblings?|grand\w*|family|"
    r"girlfriend|boyfriend|fianc\w*|cousins?|aunt|uncle|nephew|niece|"
    r"cats?|dogs?|pets?|"
    r"works?|worked|working|job|employ\w*|profession|occupation|career|colleagues?|boss|"
    r"nurse|teacher|engineer|developer|doctor|student|studies|studying|retired|"
    r"lives?|lived|living|moved|home|born|grew up|hometown|"
    r"allerg\w*|diabet\w*|health|illness|disease|condition|medication|pregnan\w*|"
    r"vegetarian|vegan|gluten|lactose|"
    r"years? old|age[ds]?|birthday)\b",
    re.IGNORECASE,
)
# The user's standing preferences and habits: the user's unless the model said otherwise.
_PREFERENCE = re.compile(
    r"\b(?:likes?|loves?|enjoys?|prefers?|hates?|dislikes?|favou?rite|fan of|usually|always|never|"
    r"every (?:day|morning|evening|week)|habit)\b",
    re.IGNORECASE,
)
# What one conversation is working on.
_TASK = re.compile(
    r"\b(?:trip|itinerary|flights?|hotels?|booking|packing|visit(?:ing)?|vacation|holiday|"
    r"essay|draft|report|presentation|slides|email|letter|code|bug|script|project|assignment|"
    r"homework|recipe|menu|agenda|meeting|deadline|budget|"
    r"wants? (?:help|a|an|to know)|needs? (?:help|a|an)|is looking for|is asking|asked for|"
    r"in this (?:chat|conversation)|currently|right now|at the moment|today|tonight|tomorrow|"
    r"this (?:week|weekend|month))\b",
    re.IGNORECASE,
)


def classify(fact: str, said: Scope | None = None) -> Scope:
    """The scope of a third-person fact: a core fact without task words is the user's; otherwise
    what the model `said`; otherwise task words make it the conversation's, the rest the user's."""
    task = bool(_TASK.search(fact))
    if _CORE.search(fact) and not task:
        return USER
    if said in (USER, CONVERSATION):
        return said
    if task and not _PREFERENCE.search(fact) and not _CORE.search(fact):
        return CONVERSATION
    return USER


def conversation_for(scope: Scope, conversation_id: str) -> str:
    """Where a fact of `scope` learned in `conversation_id` is filed."""
    return GLOBAL_CONVERSATION if scope == USER else conversation_id


def is_core(fact: str) -> bool:
    """True for a fact about who the user is (name, family, work, home, health)."""
    return bool(_CORE.search(fact))
