"""A Markdown view that never fetches anything: remote images stay unloaded, links need a click.

Chat replies and memories are untrusted text; a reply containing `![](http://tracker/x.png)`
must not make the app contact that host. `loadResource` returns nothing, Qt's own link
navigation is off, and http(s) links open in the desktop browser only when the user clicks one.
"""

from __future__ import annotations

import math
from typing import Any

from PySide6.QtCore import QSizeF, Qt, QUrl, Signal, Slot
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QFrame, QSizePolicy, QTextBrowser, QWidget

WEB_SCHEMES = ("http", "https")


class MarkdownView(QTextBrowser):
    """Render Markdown safely; with `auto_height` the view is as tall as its text (chat bubbles)."""

    link_activated = Signal(QUrl)  # a clicked link that is not a web link (app-internal)

    def __init__(self, parent: QWidget | None = None, *, auto_height: bool = False) -> None:
        super().__init__(parent)
        self._auto_height = auto_height
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.anchorClicked.connect(self._on_anchor_clicked)
        self.document().setDocumentMargin(2 if auto_height else 8)
        if auto_height:
            self.setFrameShape(QFrame.Shape.NoFrame)
            self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
            self.document().documentLayout().documentSizeChanged.connect(self._on_document_size_changed)
            self.setFixedHeight(self._height_for(self.document().size()))

    def loadResource(self, type: int, name: QUrl | str) -> Any:  # noqa: A002, N802
        """Never load anything (images, style sheets) from anywhere."""
        return None

    def set_markdown(self, text: str) -> None:
        """Show `text` as Markdown (raw HTML in it is rendered inert: nothing is fetched)."""
        self.setMarkdown(text)

    @Slot(QUrl)
    def _on_anchor_clicked(self, url: QUrl) -> None:
        if url.scheme() in WEB_SCHEMES:
            QDesktopServices.openUrl(url)  # only ever after an explicit click
        else:
            self.link_activated.emit(url)

    @Slot(QSizeF)
    def _on_document_size_changed(self, size: QSizeF) -> None:
        self.setFixedHeight(self._height_for(size))

    def _height_for(self, size: QSizeF) -> int:
        margins = self.contentsMargins()
        return math.ceil(size.height()) + margins.top() + margins.bottom() + 2 * self.frameWidth()
