"""The write path after a turn (reference 001 §4, 000, 002), run in the background.

Order: facts from the latest user message (LLM, else the 002 pattern rules), or the targets of a
"forget ..." request -> reconcile with ADD / UPDATE / DELETE / NONE -> rolling summary -> TTL
expiry -> eviction beyond max_entries -> one commit. This module decides (the LLM steps, without
the writer lock) and returns the whole turn as one `TurnPlan`; chat/apply_plan.py writes it in one
transaction with the turn's files. Every LLM failure has a documented fallback and a note in the
outcome; nothing already stored is ever lost.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from desktop_mem.engine.chat import fact_guards, review, scopes, summary_state
from desktop_mem.engine.chat.apply_plan import TurnPlan, apply_turn
from desktop_mem.engine.chat.chat_types import TurnRecord, WriteOutcome
from desktop_mem.engine.chat.decisions import Planned
from desktop_mem.engine.chat.fact_types import ChatModel, ExtractedFact
from desktop_mem.engine.chat.fact_words import name_changed, number_changed
from desktop_mem.engine.chat.named_facts import find_named, forget_named
from desktop_mem.engine.chat.ports import ChatPorts
from desktop_mem.engine.chat.reconciliation import ReconcileDecision, ReconcileResult, reconcile
from desktop_mem.engine.chat.snapshot import ConversationSnapshot
from desktop_mem.engine.chat.summary_cleanup import drop_gone, drop_superseded
from desktop_mem.engine.chat.summary_update import update_summary
from desktop_mem.engine.chat.understanding import asks_only, read_again, understand_turn
from desktop_mem.engine.chat.write_progress import (
    EXTRACTING,
    RECONCILING,
    SAVING,
    SUMMARIZING,
    Tracker,
    WriteCancelled,
    quiet,
)
from desktop_mem.engine.index.retrieval import SearchFilters
from desktop_mem.engine.models import GLOBAL_CONVERSATION, Decision, Memory, Role
from desktop_mem.engine.store.projects import project_name
from desktop_mem.engine.store.secrets_scan import REDACTED_PREFIX, describe

log = logging.getLogger(__name__)
NEIGHBOURS_PER_FACT = 5
MAX_DELETES = 2  # deletes per turn the user did not name; more wait for review
# How much of each new turn the summary reads: the user's words in full (up to a limit), the
# assistant's reply as an excerpt (its answers are not facts about the user).
SUMMARY_USER_CHARS = 1200
SUMMARY_REPLY_CHARS = 400


def run_write_path(
    ports: ChatPorts, turn: TurnRecord, llm: ChatModel | None, progress: Tracker | None = None
) -> WriteOutcome:
    """Everything after a reply: returns what changed, for the UI's "Memory updated" line.

    First the whole turn is decided without the writer lock (`plan_turn`: the LLM steps), then
    that plan is written in one transaction and one commit (chat/apply_plan.py)."""
    return apply_turn(ports, plan_turn(ports, turn, llm, progress))


def plan_turn(
    ports: ChatPorts, turn: TurnRecord, llm: ChatModel | None, progress: Tracker | None = None
) -> TurnPlan:
    """What the turn asks of memory: the facts to add / update / delete (the user's own filed in
    the user scope, the conversation's task in the conversation) and the new summary.

    The store is read once (a snapshot, taken after the previous turn's write path finished);
    the transaction that applies the plan re-checks what it changes against the catalog.
    ``progress`` reports each step; a cancel between steps leaves a plan of the turn's messages
    alone."""
    conv = turn.conversation_id
    notes: list[str] = list(turn.notes)
    track = progress or quiet(conv, turn.user.id)
    snap = ports.snapshot()
    project = ports.conversation_project(conv)  # read once: where its work is filed, what it reads
    user_scoped: set[str] = set()
    held: list[Planned] = []
    try:
        track.stage(EXTRACTING)
        decisions = _decide(ports, snap, turn, llm, notes, user_scoped, track, held, project)
        # what review mode holds reaches no summary until it is accepted: neither as a new fact
        # nor as a replacement or a forget (the summary follows it once the fact changes)
        waits = review.held_events(ports.config)
        now = [d for d in decisions if d.event not in waits]
        superseded = _superseded(snap, now)
        writes = (Decision.ADD, Decision.UPDATE)
        new_texts = [d.text for d in now if d.event in writes]
        withheld = [d.text for d in [*decisions, *held] if d not in now and d.event in writes]
        withheld += _waiting_texts(ports)
        track.stage(SUMMARIZING)
        summary_text, summary_count, note = _summary_update(ports, snap, conv, new_texts, superseded, llm,
                                                            withheld)
        track.stage(SAVING)
    except WriteCancelled:
        decisions, summary_text, summary_count, note = (), None, 0, None
        held = []
        notes.append("Memory update cancelled: this turn's messages were saved, no fact or summary changed.")
    if note:
        notes.append(note)
    mine = tuple(d for d in decisions if d.event == Decision.ADD and d.text in user_scoped)
    return TurnPlan(turn, snap, tuple(d for d in decisions if d not in mine), mine, summary_text,
                    summary_count, tuple(notes), held=tuple(held), project=project)


def _decide(
    ports: ChatPorts, snap: ConversationSnapshot, turn: TurnRecord, llm: ChatModel | None, notes: list[str],
    user_scoped: set[str], track: Tracker, held: list[Planned], project: str | None = None,
) -> tuple[Planned, ...]:
    """What the turn asks of memory: DELETEs for "forget ...", else the reconciled new facts
    (LLM steps; no lock held). Texts are redacted of likely secrets: nobody is there to ask.
    The texts of new facts about the user (the user scope) are added to ``user_scoped``."""
    conv = turn.conversation_id
    if not ports.config["memory.extract_facts"]:
        return ()
    understood = turn.understood
    if understood is None or (llm is not None and not understood.by_model and not turn.forget):
        # not read on the reply path, or its model call failed there (it waits less): read here
        transcript = snap.transcript(conv)
        at = next((i for i, m in enumerate(transcript) if m.id == turn.user.id), len(transcript))
        before = transcript[:at]
        live = [m for m in _facts(snap, conv, project=project) if not m.deleted]
        understood = understand_turn(llm, turn.user.text,
                                     [(str(m.role), snap.for_prompt(m).text) for m in before], live,
                                     project_name(project))
        if understood.asks_forget and not turn.forget:
            previous = [m for m in before if m.role == Role.USER]
            named = forget_named(ports.search, conv, live, understood, turn.user.text,
                                 previous[-1].id if previous else None, llm)
            turn = replace(turn, forget=tuple(m.id for m in named.clear),
                           unclear=tuple(m.id for m in named.maybe))
    elif llm is not None:
        understood = read_again(llm, understood)  # the follow-up calls the reply did not wait for
    if understood.error:
        notes.append(understood.error)
    elif llm is None:
        notes.append("No LLM configured: facts were taken by pattern rules.")
    for text, why in understood.rejected:
        log.info("not stored as a fact (%s): %s", why, text)
    if understood.asks_forget:
        # the facts the reply path found it names (and told the model of); one deleted by hand
        # since is left out
        targets = [m for i in turn.forget if (m := snap.lookup(i)) is not None and not m.deleted]
        unclear = [m for i in turn.unclear if (m := snap.lookup(i)) is not None and not m.deleted]
        if unclear and not targets:
            notes.append("Not forgotten: it was not clear which fact you meant ("
                         + "; ".join(m.text for m in unclear)
                         + "). Say which, or forget it in the memory browser.")
        elif not targets:
            notes.append("Nothing in memory matched what you asked to forget.")
        return tuple(Planned(Decision.DELETE, m.text, m.id, forgets=True) for m in targets)
    facts = understood.facts
    if not facts:
        return ()
    kinds = {f.text: f for f in facts}
    # what the user says they correct, found by search; the rest is reconciled with its neighbours
    handled = _corrections(ports, snap, conv, facts, turn.user.text, notes, held, project)
    corrected = [d for _fact, d in handled]
    rest = [f for f in facts if f.text not in {fact for fact, _d in handled}]
    reconciled = ReconcileResult(())
    if rest:
        track.stage(RECONCILING)
        existing = _neighbourhood(ports, snap, conv, rest)
        if llm is None:
            known = {t.casefold() for _i, t in existing}
            reconciled = ReconcileResult(tuple(ReconcileDecision(Decision.ADD, f.text, None) for f in rest
                                               if f.text.casefold() not in known))
        else:
            reconciled = reconcile(llm, [f.text for f in rest], existing, turn.user.text)
        if reconciled.error:
            notes.append(reconciled.error)
        reconciled = ReconcileResult(_tasks_keep_to_their_chat(snap, rest, reconciled.decisions),
                                     reconciled.error)
    found_kinds: list[str] = []
    decisions: list[Planned] = []
    for d in [*corrected, *reconciled.decisions]:
        text, found = ports.writer.redact(d.text)
        if found or (REDACTED_PREFIX in text and d.event != Decision.DELETE):
            # never a fact about a secret, not even a redacted one (issue #22)
            found_kinds.append(describe(found) if found else "an already redacted secret")
            continue
        fact = kinds.get(d.text)
        decisions.append(Planned(d.event, text, d.target_id, fact.kind if fact else "fact",
                                 fact.source if fact else "llm"))
        if (fact.scope if fact else scopes.classify(text)) == scopes.USER:
            user_scoped.add(text)
    if found_kinds:
        notes.append(f"A fact holding a likely secret ({', '.join(dict.fromkeys(found_kinds))}) was not "
                     "stored (security.secrets).")
    if asks_only(turn.user.text):
        decisions = _added_only(decisions)
    return _capped(decisions, held, notes)


def _added_only(decisions: Sequence[Planned]) -> list[Planned]:
    """A message that only asks (each sentence ends in a question mark, any script) changes no
    stored fact: its UPDATEs are ADDs and its DELETEs are dropped. "Which instrument do I play?",
    asked in the window after the user restored "plays the cello" on the Timeline, was read by
    the 1.5B model as "The user doesn't know which instrument they play", and reconciliation
    deleted the fact the user had just restored. ("I'm a nurse, can you help me?" still adds.)"""
    return [replace(d, event=Decision.ADD, target_id=None) if d.event == Decision.UPDATE else d
            for d in decisions if d.event != Decision.DELETE]


def _tasks_keep_to_their_chat(
    snap: ConversationSnapshot, facts: Sequence[ExtractedFact], decisions: Sequence[ReconcileDecision],
) -> tuple[ReconcileDecision, ...]:
    """The decisions, but a fact about this chat's work (a task) never replaces or deletes one
    of the user's own facts: "The user is working on planning their vacation" UPDATEd "The user
    works as a librarian" (the 1.5B model, from "Vielleicht fahren wir nach Island"). Such an
    UPDATE becomes an ADD; such a DELETE is dropped when every new fact is a task."""
    scope_of = {f.text: scopes.classify(f.text, f.scope) for f in facts}
    only_tasks = all(scope == scopes.CONVERSATION for scope in scope_of.values())

    def users(target: str | None) -> bool:
        memory = snap.lookup(target) if target else None
        return memory is not None and memory.conversation_id == GLOBAL_CONVERSATION

    out: list[ReconcileDecision] = []
    for d in decisions:
        task = scope_of.get(d.text) == scopes.CONVERSATION
        if d.event == Decision.UPDATE and task and users(d.target_id):
            out.append(ReconcileDecision(Decision.ADD, d.text, None))
        elif not (d.event == Decision.DELETE and only_tasks and users(d.target_id)):
            out.append(d)
    return tuple(out)


def _waiting_texts(ports: ChatPorts) -> list[str]:
    """The new texts earlier turns left waiting for review (proposals not answered yet)."""
    found, _broken = review.pending(ports.config.store_path.expanduser().resolve())
    return [p.text for p in found if p.event in (Decision.ADD, Decision.UPDATE)]


def _capped(decisions: list[Planned], held: list[Planned], notes: list[str]) -> tuple[Planned, ...]:
    """The decisions with at most MAX_DELETES deletes the user did not name; the rest are held
    for review (``held``), with a note. A reconciliation that wants to delete many facts for one
    new one ("I like green tea") is far more often wrong than right."""
    deletes = [d for d in decisions if d.event == Decision.DELETE]
    if len(deletes) <= MAX_DELETES:
        return tuple(decisions)
    extra = deletes[MAX_DELETES:]
    held.extend(extra)
    notes.append(f"{len(extra)} more fact{'s' if len(extra) > 1 else ''} that may be out of date "
                 f"{'wait' if len(extra) > 1 else 'waits'} for your review: at most {MAX_DELETES} are "
                 "deleted in one turn unless you name them.")
    return tuple(d for d in decisions if d not in extra)


def _corrections(
    ports: ChatPorts, snap: ConversationSnapshot, conv: str, facts: Sequence[ExtractedFact], said: str,
    notes: list[str], held: list[Planned], project: str | None = None,
) -> list[tuple[str, ReconcileDecision]]:
    """(fact, decision) for the facts that correct a live one: those that say what they correct
    ("replaces"), where the read path finds the fact it names clearly (chat/named_facts.py),
    never a vaguer fact; and those that say a live fact again with another number ("Ines is 8"
    after "daughter Ines is 7") or with other names the message also names ("works at
    Lufthansa" from "I quit Hotel Adler, I work at Lufthansa now"), which update it. When the
    search finds only facts a correction might mean, the new fact is added and those wait for
    review as possibly out of date."""
    live = [m for m in _facts(snap, conv, project=project) if not m.deleted]
    out: list[tuple[str, ReconcileDecision]] = []
    taken: set[str] = set()
    for fact in facts:
        if not fact.replaces:
            free = [m for m in live if m.id not in taken]
            changed = number_changed(fact.text, free)
            if changed is not None:
                taken.add(changed[0].id)
                out.append((fact.text, ReconcileDecision(Decision.UPDATE, changed[1], changed[0].id)))
            elif (moved := name_changed(fact.text, free, said, [f.text for f in facts if f is not fact])):
                taken.add(moved.id)
                out.append((fact.text, ReconcileDecision(Decision.UPDATE, fact.text, moved.id)))
            continue
        named = find_named(ports.search, conv, [m for m in live if m.id not in taken], [fact.replaces])
        if len(named.clear) == 1:
            old = named.clear[0]
            taken.add(old.id)
            if old.text.casefold() == fact.text.casefold() or fact_guards.vaguer(old.text, fact.text, said):
                out.append((fact.text, ReconcileDecision(Decision.NONE, old.text, old.id)))
            else:
                # the same fact with another number keeps what the old one said beside it
                changed = number_changed(fact.text, [old])
                text = changed[1] if changed else fact.text
                out.append((fact.text, ReconcileDecision(Decision.UPDATE, text, old.id)))
        elif named.clear or named.maybe:
            out.append((fact.text, ReconcileDecision(Decision.ADD, fact.text, None)))
            unsure = [*named.clear, *named.maybe]
            held.extend(Planned(Decision.DELETE, m.text, m.id) for m in unsure)
            notes.append(f"{fact.text}: it may correct " + "; ".join(m.text for m in unsure)
                         + ", which wait for your review.")
    return out


def _facts(
    snap: ConversationSnapshot, conv: str, include_deleted: bool = False, project: str | None = None,
) -> list[Memory]:
    """The facts a conversation reads: its own, its project's and the user's (oldest first)."""
    found = [m for c in dict.fromkeys([conv, *([project] if project else []), GLOBAL_CONVERSATION])
             for m in snap.list_memories(conversation_id=c, role="memory", include_deleted=include_deleted)]
    found.sort(key=lambda m: (m.created_at, m.path))
    return found


def _superseded(snap: ConversationSnapshot, decisions: Sequence[Planned]) -> list[tuple[str, str | None]]:
    """(old text, new text or None) of what the decisions replace or delete: the summary drops them."""
    result: list[tuple[str, str | None]] = []
    for d in decisions:
        old = snap.lookup(d.target_id) if d.target_id else None
        if old is not None and d.event in (Decision.UPDATE, Decision.DELETE):
            result.append((old.text, d.text if d.event == Decision.UPDATE else None))
    return result


def _neighbourhood(
    ports: ChatPorts, snap: ConversationSnapshot, conv: str, facts: Sequence[ExtractedFact]
) -> list[tuple[str, str]]:
    """Existing facts near the new ones (conversation + global), for reconciliation."""
    found: dict[str, str] = {}
    filters = SearchFilters(conversation_id=conv, roles=("memory",))
    for fact in facts:
        try:
            results = ports.search(fact.text, top_k=NEIGHBOURS_PER_FACT, filters=filters, use_mmr=False)
        except Exception:  # an index problem must not stop memory from being written
            log.exception("neighbourhood search failed; reconciling against the catalog")
            results = []
        for r in results:
            found.setdefault(r.memory.id, r.memory.text)
    if not found:
        recent = _facts(snap, conv)[-NEIGHBOURS_PER_FACT * 2:]
        found = {m.id: m.text for m in recent}
    return list(found.items())


def _summary_update(
    ports: ChatPorts, snap: ConversationSnapshot, conv: str, new_facts: list[str],
    superseded: list[tuple[str, str | None]], llm: ChatModel | None, withheld: Sequence[str] = (),
) -> tuple[str | None, int, str | None]:
    """001 §4.4 + 000: fold the new turns, new facts and replacements into the rolling summary.

    Returns (the new text, or None to keep the current summary; its summarized_count; a note).
    ``summarized_count`` is the number of history messages the summary covers. It is updated when
    there is something to remember (new facts, replacements) or when more than
    ``memory.summary_threshold`` messages are not covered yet, and then reads every message not
    covered yet (the user's words, an excerpt of each complete reply), so its count is the whole
    history. A reply that was interrupted or cut is never read (000: no partial responses).
    ``superseded`` facts are removed from the summary: it follows replacements. Sentences stating
    a ``withheld`` fact (one waiting for review) are removed too: the turn's words may say it.
    """
    current = snap.summary(conv)  # the plan's one read of the store
    if not ports.config["memory.enable_summarization"] or llm is None:
        return None, 0, None
    if current is not None and current.id in snap.held:
        return None, 0, "The summary was not updated: its hand edit waits for your Redact / Keep answer."
    turns = [snap.for_prompt(m) for m in snap.transcript(conv)]
    covered = min(current.summarized_count or 0, len(turns)) if current else 0
    pending = turns[covered:]
    facts = _facts(snap, conv, include_deleted=True)
    stale = current is not None and summary_state.is_stale(current, facts, conv)
    if not new_facts and not superseded and not stale and (
            len(pending) <= ports.config["memory.summary_threshold"]):
        return None, covered, None
    gone_now = {old for old, _new in superseded}  # replaced or forgotten by this very turn
    live = [m for m in facts if not m.deleted and m.text not in gone_now]
    previous = current.text if current else None
    material = [_summary_line(m) for m in pending if m.complete]
    material += [f"fact: {t}" for t in new_facts]
    if stale and previous is not None:
        # Facts it speaks for changed since it was written (a hand delete, restore, revert,
        # edit): what is gone leaves it, and it is written again from the facts true now.
        gone = [(m.text, None) for m in summary_state.own_facts(facts, conv) if m.deleted]
        keep = frozenset(n for m in live for n in fact_guards.specifics(m.text))
        previous = drop_gone(previous, gone, keep)
        material += [f"fact: {m.text}" for m in summary_state.own_facts(live, conv)
                     if f"fact: {m.text}" not in material]
    result = update_summary(llm, previous, material, superseded)
    text, note = result.text, None
    if text is not None:
        text = summary_state.with_core_facts(text, summary_state.core_facts(live))
    if text is None and superseded and current is not None:
        # The model failed or had nothing left to say, yet what was replaced or forgotten must
        # leave the summary: the previous one without its stale sentences.
        text = drop_superseded(current.text, superseded)
        if text == current.text.strip():
            text = None
        elif result.error:
            note = f"Summary: {result.error}; only what is no longer true was removed from it."
    if text is None:
        if result.error:
            note = f"Summary not updated ({result.error}); the previous summary was kept."
        return None, covered, note
    if not text.strip():
        text = _facts_summary(live, conv, new_facts, superseded)
    if withheld:
        keep = frozenset(n for m in live for n in fact_guards.specifics(m.text))
        text = drop_gone(text, [(t, None) for t in withheld], keep) or _facts_summary(
            live, conv, new_facts, superseded)
    text, _found = ports.writer.redact(text)
    return text, len(turns), note


NOTHING_TO_SUMMARISE = "Nothing about the user is remembered from this conversation."


def _facts_summary(
    live: Sequence[Memory], conv: str, new_facts: list[str], superseded: list[tuple[str, str | None]]
) -> str:
    """A summary made of the facts learned in the conversation that are true now (its own and the
    user's, which are filed under "global"): for when all the old summary said is gone. Before, it
    read the conversation's own facts only, so after "Please forget where I live" the 1.5B model's
    empty summary became "Nothing about the user is remembered" beside a live job and cat."""
    gone = {old for old, _new in superseded}
    kept = [m.text for m in summary_state.own_facts(live, conv)]
    facts = [t for t in dict.fromkeys([*kept, *new_facts]) if t not in gone]
    return "\n".join(f"- {t}" for t in facts) or NOTHING_TO_SUMMARISE


def _summary_line(turn: Memory) -> str:
    limit = SUMMARY_USER_CHARS if turn.role == Role.USER else SUMMARY_REPLY_CHARS
    text = " ".join(turn.text.split())
    return f"{turn.role}: {text[:limit]}" + ("..." if len(text) > limit else "")
