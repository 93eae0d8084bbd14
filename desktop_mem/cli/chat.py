"""`desktop-mem chat`: a terminal chat that shows what memory it used and what it stored."""

from __future__ import annotations

import os
import queue
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TextIO

from desktop_mem.api.stop_signals import stop_signals_exit
from desktop_mem.cli.progress import embedding_progress
from desktop_mem.engine.api import ChatReply, MemoryEngine, MemoryUsed, WriteOutcome, validate_conversation_id
from desktop_mem.engine.config import Config
from desktop_mem.engine.models import ValidationError

# Interactive turns wait this long for the write path before giving the prompt back.
OUTCOME_WAIT_SECONDS = 20.0
PREFIX = "[memory] "
TEMPORARY_NOTE = "temporary chat: memory is read, nothing of this chat is stored"


class TerminalChat:
    """One conversation in a terminal: stream replies, show injected memory and write outcomes."""

    def __init__(self, engine: MemoryEngine, conversation: str, strategy: str | None,
                 out: TextIO = sys.stdout, err: TextIO = sys.stderr, *, temporary: bool = False) -> None:
        self.engine, self.conversation, self.strategy = engine, conversation, strategy
        self.temporary = temporary  # read memory, store nothing of these turns
        self.out, self.err = out, err
        self.color = out.isatty() and "NO_COLOR" not in os.environ
        self._outcomes: queue.Queue[WriteOutcome] = queue.Queue()
        self._unsubscribe = engine.subscribe_outcomes(self._outcomes.put)
        self._runner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chat-turn")

    def close(self) -> None:
        """Stop listening and let the last write path finish (its outcome is printed)."""
        self._runner.shutdown(wait=True)
        self.engine.wait_idle(None)
        self._print_outcomes()
        self._unsubscribe()

    # ------------------------------------------------------------------ turns

    def turn(self, text: str, *, wait: float | None) -> ChatReply:
        """Send one message; Ctrl-C stops the reply (the partial text is kept)."""
        cancel = threading.Event()
        future: Future[ChatReply] = self._runner.submit(
            self.engine.chat, self.conversation, text, strategy=self.strategy,
            on_token=self._token, on_used=self._show_used, cancel=cancel, temporary=self.temporary,
        )
        try:
            reply = future.result()
        except KeyboardInterrupt:
            cancel.set()
            reply = future.result()
        except SystemExit:  # SIGTERM / SIGHUP (run_chat): stop the reply, then leave
            cancel.set()
            raise
        self.out.write("\n")
        if reply.cancelled:
            self._dim("reply stopped; the partial text was kept")
        if reply.error:
            print(f"desktop-mem: {reply.error}", file=self.err, flush=True)
        if not self.engine.wait_idle(wait):
            self._dim("memory is still being updated in the background; the result shows later")
        self._print_outcomes()
        return reply

    def loop(self, stdin: TextIO = sys.stdin) -> int:
        """Read lines until EOF, /quit or Ctrl-C at the prompt."""
        self._dim(f"conversation {self.conversation!r} - type /quit or press Ctrl-D to leave")
        if self.temporary:
            self._dim(TEMPORARY_NOTE)
        interactive = stdin.isatty()
        while True:
            try:
                if interactive:
                    line = input("you> ")
                else:
                    line = stdin.readline()
                    if not line:
                        break
            except (EOFError, KeyboardInterrupt):
                self.out.write("\n")
                break
            text = line.strip()
            if text in ("/quit", "/exit"):
                break
            if text:
                try:
                    self.turn(text, wait=OUTCOME_WAIT_SECONDS)
                except KeyboardInterrupt:  # a second Ctrl-C while stopping
                    break
        return 0

    # ------------------------------------------------------------- printing

    def _token(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def _show_used(self, used: MemoryUsed) -> None:
        if used.summary is not None:
            self._dim(f"summary: {_one_line(used.summary.text, 160)}")
        for r in used.memories:
            self._dim(f"{r.scores.final:.2f}  {_one_line(r.memory.text, 120)}  ({r.memory.conversation_id})")
        freed = f", freed {used.tokens_freed} tokens" if used.tokens_freed else ""
        self._dim(f"strategy {used.strategy}, context {used.tokens_after} tokens{freed}")

    def _print_outcomes(self) -> None:
        while True:
            try:
                outcome = self._outcomes.get_nowait()
            except queue.Empty:
                return
            if outcome.conversation_id != self.conversation:
                continue
            self._dim(outcome.describe())
            for note in outcome.notes:
                self._dim(f"note: {note}")

    def note(self, line: str) -> None:
        """One dimmed `[memory]` line."""
        self._dim(line)

    def _dim(self, line: str) -> None:
        text = PREFIX + line
        self.out.write(f"\x1b[2m{text}\x1b[0m\n" if self.color else text + "\n")
        self.out.flush()


def run_chat(config: Config, conversation: str, strategy: str | None, message: str | None,
             temporary: bool = False, project: str | None = None) -> int:
    """The `chat` command: one turn with --message (exit 1 if the reply failed), else a loop;
    `temporary` (--temporary): the turns read memory and nothing of them is stored."""
    validate_conversation_id(conversation)
    if message is not None and not message.strip():
        raise ValidationError("--message is empty; give the text to send")
    # SIGTERM / SIGHUP (a closed terminal, `kill`): SystemExit, so a reply under way stops and the
    # finally of _chat lets the write path finish and releases the store lock, as on Ctrl-D
    with stop_signals_exit():
        return _chat(config, conversation, strategy, message, temporary, project)


def _chat(config: Config, conversation: str, strategy: str | None, message: str | None,
          temporary: bool, project: str | None = None) -> int:
    engine = MemoryEngine.open(config)
    chat: TerminalChat | None = None
    try:
        if project is not None and not temporary:  # `--project`: the conversation reads the project
            engine.set_conversation_project(conversation, project)
        with embedding_progress() as progress:
            engine.open_index(progress)  # a changed embedding model re-embeds everything first
        engine.hold_chat_scope()
        chat = TerminalChat(engine, conversation, strategy, temporary=temporary)
        if message is not None:
            if temporary:
                chat.note(TEMPORARY_NOTE)
            return 0 if chat.turn(message, wait=None).ok else 1
        return chat.loop()
    except ValueError as exc:  # e.g. a broken context strategy saved for the conversation
        print(f"desktop-mem: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(file=sys.stdout)
        return 130
    finally:
        if chat is not None:
            chat.close()
        engine.close()


def _one_line(text: str, n: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= n else flat[: n - 1] + "…"
