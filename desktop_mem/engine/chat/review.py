"""Review mode: the model's changes to memory wait for the user.

With `memory.review` = "changes", UPDATE and DELETE decisions of the write path (and of an MCP
add with reconcile) are not applied: each becomes a proposal; "all" holds ADD too. A proposal is a
small JSON file under `review/` in the store, committed with the turn that made it, so it
survives restarts and travels with a sync. Accepting applies it (optionally with the user's own
text) and removes the file in ONE commit; rejecting removes it in one commit. A proposal whose
fact changed or went away meanwhile is refused with the reason, never applied to something else.
Proposal files are hostile input (a sync remote, a hand edit): one that does not parse is
listed as unreadable, never applied.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from desktop_mem.engine.chat.decisions import Planned, apply_decisions
from desktop_mem.engine.config import Config
from desktop_mem.engine.models import Decision, Memory, NotFoundError, Operation, ValidationError, utc_now
from desktop_mem.engine.store.markdown_store import atomic_write
from desktop_mem.engine.store.ports import MemorySource
from desktop_mem.engine.store.transaction import Transaction, clip

FOLDER = "review"
MAX_FILE_BYTES = 64 * 1024
_ID = re.compile(r"^p-[0-9a-f]{8,32}$")


@dataclass(frozen=True)
class Proposal:
    """A change the model proposed, waiting for the user."""

    id: str
    event: str  # ADD, UPDATE or DELETE
    conversation_id: str
    text: str  # the new text (ADD / UPDATE); the target's text for a DELETE
    created_at: str
    target_id: str | None = None
    target_text: str | None = None  # what the fact said when the model proposed the change
    kind: str = "fact"
    source: str = "llm"
    turn_id: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def path(self) -> str:
        return f"{FOLDER}/{self.id}.json"

    def describe(self) -> str:
        """One line: "Update: The user lives in Ghent → The user lives in Leuven"."""
        tidy = self.extra.get(TIDY_KEY)
        if isinstance(tidy, Mapping) and isinstance(tidy.get("summary"), str):
            return f"Tidy-up: {clip(tidy['summary'], 200)}"
        if self.event == Decision.UPDATE:
            return f"Update: {clip(self.target_text or '?', 80)} → {clip(self.text, 80)}"
        if self.event == Decision.DELETE:
            return f"Forget: {clip(self.target_text or self.text, 120)}"
        return f"Add: {clip(self.text, 120)}"


def held_events(config: Config) -> frozenset[str]:
    """Which decisions wait for the user under the current setting."""
    mode = config["memory.review"]
    if mode == "all":
        return frozenset({Decision.ADD, Decision.UPDATE, Decision.DELETE})
    if mode == "changes":
        return frozenset({Decision.UPDATE, Decision.DELETE})
    return frozenset()


def hold_for_review(
    config: Config, lookup: Callable[[str], Memory | None], tx: Transaction, conv: str,
    decisions: Sequence[Planned], extra: Mapping[str, Any] | None, turn_id: str | None = None,
    notes: list[str] | None = None, waiting: list[Proposal] | None = None,
) -> list[Planned]:
    """Write the decisions review mode holds as proposals in `tx`; return the ones to apply now.
    `notes` is told how many wait ("2 memory changes wait for your review"), `waiting` which."""
    held = held_events(config)
    if not held:
        return list(decisions)
    now = [d for d in decisions if d.event not in held]
    written = propose(config, lookup, tx, conv, [d for d in decisions if d.event in held], extra, turn_id)
    if written and notes is not None:
        n = len(written)
        notes.append(f"{n} memory change{'s wait' if n > 1 else ' waits'} for your review "
                     "(review mode is on).")
    if waiting is not None:
        waiting.extend(written)
    return now


def propose(
    config: Config, lookup: Callable[[str], Memory | None], tx: Transaction, conv: str,
    decisions: Sequence[Planned], extra: Mapping[str, Any] | None, turn_id: str | None = None,
) -> list[Proposal]:
    """Write each decision as a proposal in `tx` (whatever the review setting: the caller holds
    it); a change whose fact is gone is dropped. Returns the proposals written."""
    written: list[Proposal] = []
    for d in decisions:
        target = lookup(d.target_id) if d.target_id else None
        if d.event != Decision.ADD and target is None:
            continue  # nothing left to change
        proposal = Proposal(
            id=new_id(), event=str(d.event), conversation_id=conv,
            text=d.text or (target.text if target else ""), created_at=utc_now().isoformat(),
            target_id=target.id if target else None, target_text=target.text if target else None,
            kind=d.kind, source=d.source, turn_id=turn_id, extra=dict(extra or {}),
        )
        write(config.store_path.expanduser().resolve(), proposal)
        tx.touch([proposal.path])
        written.append(proposal)
    return written


def new_id() -> str:
    return f"p-{uuid.uuid4().hex[:12]}"


def write(root: Path, proposal: Proposal) -> None:
    """The proposal's file under review/ (the caller's transaction commits it)."""
    data = asdict(proposal)
    atomic_write(root / proposal.path, json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8"))


def pending(root: Path) -> tuple[list[Proposal], list[str]]:
    """Proposals waiting, oldest first, and the files under review/ that could not be read (why)."""
    folder = root / FOLDER
    found: list[Proposal] = []
    broken: list[str] = []
    if not folder.is_dir() or folder.is_symlink():
        return found, broken
    for path in sorted(folder.glob("*.json")):
        try:
            found.append(_read(path))
        except (OSError, ValueError, TypeError, KeyError) as exc:
            broken.append(f"{FOLDER}/{path.name}: {exc}")
    found.sort(key=lambda p: (p.created_at, p.id))
    return found, broken


def _read(path: Path) -> Proposal:
    if path.is_symlink() or path.stat().st_size > MAX_FILE_BYTES:
        raise ValueError("not a proposal file (a link, or too large)")
    data = json.loads(path.read_text("utf-8"))
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    pid = str(data["id"])
    if not _ID.match(pid) or f"{pid}.json" != path.name:
        raise ValueError("its id does not match its file name")
    event = str(data["event"])
    if event not in (Decision.ADD, Decision.UPDATE, Decision.DELETE):
        raise ValueError(f"event {event!r} is not ADD, UPDATE or DELETE")
    extra = data.get("extra") if isinstance(data.get("extra"), dict) else {}
    text = data.get("text")
    if not isinstance(text, str):
        raise ValueError("text is not text")
    return Proposal(
        id=pid, event=event, conversation_id=str(data["conversation_id"]), text=text,
        created_at=str(data.get("created_at", "")), target_id=_opt(data.get("target_id")),
        target_text=_opt(data.get("target_text")), kind=str(data.get("kind") or "fact"),
        source=str(data.get("source") or "llm"), turn_id=_opt(data.get("turn_id")), extra=extra or {},
    )


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)


def find(root: Path, proposal_id: str) -> Proposal:
    """The pending proposal with this id (or unique prefix); NotFoundError naming the list."""
    found, _broken = pending(root)
    matches = [p for p in found if p.id == proposal_id or p.id.startswith(proposal_id)]
    if len(matches) != 1 or len(proposal_id) < 4:
        raise NotFoundError(f"no pending proposal {proposal_id!r}; `desktop-mem review` lists them")
    return matches[0]


def accept(source: MemorySource, proposal_id: str, text: str | None = None) -> tuple[Proposal, str | None]:
    """Apply a proposal (with the user's `text` instead of the model's, if given) and remove it:
    one commit. Refused when its fact changed or went away since it was proposed. Returns the
    proposal as accepted (with the user's text: what the commit subject and the UI describe)."""
    proposal = find(source.root, proposal_id)
    new_text = text.strip() if text is not None else proposal.text
    if proposal.event != Decision.DELETE and not new_text:
        raise ValidationError("the accepted text is empty")
    if proposal.event != Decision.ADD:
        target = source.lookup(proposal.target_id or "")
        if target is None or target.deleted:
            gone = clip(proposal.target_text or "")
            raise ValidationError(f"the fact this proposal changes is gone ({gone}); reject the proposal")
        if proposal.target_text is not None and target.text != proposal.target_text:
            raise ValidationError("the fact changed since the proposal was made; reject it, or edit the fact")
    group = _group(source, proposal)
    operation = {Decision.ADD: Operation.ADD, Decision.UPDATE: Operation.UPDATE}.get(
        Decision(proposal.event), Operation.DELETE)
    if text is not None and proposal.event != Decision.DELETE:
        new_text = source.writer.check_secrets(new_text, "redact")
    with source.writer.transaction(operation, conversation=proposal.conversation_id,
                                   trailers={"Review": "accepted"}, publish=False) as tx:
        successor = group.replaced_by
        if proposal.event == Decision.DELETE and successor is not None:
            tx.soft_delete(source.get(proposal.target_id or ""), replaced_by=successor)
        else:
            applied = apply_decisions(tx, source.get, proposal.conversation_id,
                                      [Planned(proposal.event, new_text, proposal.target_id, proposal.kind,
                                               proposal.source)], group.front_matter)
            if not (applied.added or applied.updated or applied.deleted):
                raise ValidationError("the proposal could not be applied; reject it")
            if applied.updated:
                successor = applied.updated[0][1].id
        for retired in group.retire:  # a merge: the other copies point at what holds now
            tx.soft_delete(retired, replaced_by=successor)
        _remove(source.root, proposal, tx)
        accepted = replace(proposal, text=new_text) if proposal.event != Decision.DELETE else proposal
        tx.subject = f"Accept proposal: {accepted.describe()}"
        change = tx.publish()
    return accepted, change.commit


def reject(source: MemorySource, proposal_id: str) -> tuple[Proposal, str | None]:
    """Drop a proposal: one commit that removes its file; memory is left as it is."""
    proposal = find(source.root, proposal_id)
    with source.writer.transaction(Operation.REVIEW, f"Reject proposal: {proposal.describe()}",
                                   conversation=proposal.conversation_id, trailers={"Review": "rejected"},
                                   publish=False) as tx:
        _remove(source.root, proposal, tx)
        if (seen := _remember_rejected(source.root, proposal)) is not None:
            tx.touch([seen])
        change = tx.publish()
    return proposal, change.commit


def _remove(root: Path, proposal: Proposal, tx: Transaction) -> None:
    (root / proposal.path).unlink(missing_ok=True)
    tx.touch([proposal.path])


def created(proposal: Proposal) -> datetime | None:
    """When it was proposed (None for a hand-made file without a usable time)."""
    try:
        return datetime.fromisoformat(proposal.created_at)
    except ValueError:
        return None


# -- proposals that change several facts at once (tidy-up's) -----------------------------------

TIDY_KEY = "tidy"  # in `extra`: what tidy-up found; never written to a fact's front matter
REJECTED = f"{FOLDER}/tidy/rejected.json"  # not *.json at the top of review/: never read as a proposal


@dataclass(frozen=True)
class _Group:
    front_matter: Mapping[str, Any]
    replaced_by: str | None = None  # a DELETE that retires its fact in favour of this one
    retire: tuple[Memory, ...] = ()  # more facts retired along, pointing at what holds now


def _group(source: MemorySource, proposal: Proposal) -> _Group:
    """What a tidy-up proposal changes beyond its target, checked as the target is: every fact
    still live and as it was when proposed."""
    meta = proposal.extra.get(TIDY_KEY)
    if not isinstance(meta, Mapping):
        return _Group(proposal.extra)
    front = {k: v for k, v in proposal.extra.items() if k != TIDY_KEY}
    sources = [s for s in meta.get("sources") or [] if isinstance(s, str)]
    if sources and proposal.event != Decision.DELETE:
        front["from_turns"] = sources
    successor = meta.get("replaced_by")
    if isinstance(successor, str):
        now = source.lookup(successor)
        if now is None or now.deleted:
            raise ValidationError("the fact that replaces it is gone; reject the proposal")
    retire: list[Memory] = []
    for item in meta.get("retire") or []:
        if not isinstance(item, Mapping):
            continue
        fact = source.lookup(str(item.get("id", "")))
        if fact is None or fact.deleted or fact.text != item.get("text"):
            raise ValidationError("a fact this proposal merges changed or went away; reject it")
        retire.append(fact)
    return _Group(front, successor if isinstance(successor, str) else None, tuple(retire))


def _read_json(path: Path) -> Any:
    try:
        if path.is_symlink() or path.stat().st_size > MAX_FILE_BYTES * 4:
            return None
        return json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None


def rejected_signatures(root: Path) -> set[str]:
    """What the user rejected from tidy-up (a hostile file: anything odd in it is ignored)."""
    data = _read_json(root / REJECTED)
    items = data.get("rejected") if isinstance(data, dict) else None
    return {s for s in items if isinstance(s, str)} if isinstance(items, list) else set()


def _remember_rejected(root: Path, proposal: Proposal) -> str | None:
    """A rejected tidy-up proposal is not proposed again: its signature is kept (the path written)."""
    meta = proposal.extra.get(TIDY_KEY)
    signature = meta.get("signature") if isinstance(meta, Mapping) else None
    if not isinstance(signature, str):
        return None
    known = sorted(rejected_signatures(root) | {signature})
    atomic_write(root / REJECTED, json.dumps({"rejected": known}, indent=1).encode("utf-8"))
    return REJECTED
