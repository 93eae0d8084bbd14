"""Layouts and labels that shrink: rows that wrap, and a one-line label that elides.

Filter bars and button rows are laid out in a `FlowLayout`, so a pane's minimum width is its
widest single control, not the sum of a row (the window must fit a 1280×720 screen). Long
one-line texts (the last commit, a memory's title) are an `ElidedLabel` with the full text in a
tooltip.
"""

from __future__ import annotations

from PySide6.QtCore import QMargins, QPoint, QRect, QSize, Qt
from PySide6.QtGui import QPainter, QPaintEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLayout, QLayoutItem, QSizePolicy, QWidget


class FlowLayout(QLayout):
    """Lays items left to right and wraps to a new line when the width runs out.

    An item whose horizontal policy can expand (a search box) takes the rest of its line.
    """

    def __init__(self, parent: QWidget | None = None, spacing: int = 6) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._spacing = spacing
        self.setContentsMargins(QMargins(0, 0, 0, 0))

    def addItem(self, item: QLayoutItem) -> None:  # noqa: N802 - Qt override
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:  # noqa: N802
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:  # noqa: N802
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:  # noqa: N802
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # noqa: N802
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802
        return self._arrange(QRect(0, 0, width, 0), apply=False)

    def setGeometry(self, rect: QRect) -> None:  # noqa: N802
        super().setGeometry(rect)
        self._arrange(rect, apply=True)

    def sizeHint(self) -> QSize:  # noqa: N802
        width = sum(self._hint(i).width() for i in self._visible()) + self._spacing * max(
            len(self._visible()) - 1, 0)
        height = max((self._hint(i).height() for i in self._visible()), default=0)
        m = self.contentsMargins()
        return QSize(width + m.left() + m.right(), height + m.top() + m.bottom())

    def minimumSize(self) -> QSize:  # noqa: N802
        size = QSize()
        for item in self._visible():
            size = size.expandedTo(item.minimumSize())
        m = self.contentsMargins()
        return size + QSize(m.left() + m.right(), m.top() + m.bottom())

    def _visible(self) -> list[QLayoutItem]:
        return [i for i in self._items if not i.isEmpty()]

    @staticmethod
    def _hint(item: QLayoutItem) -> QSize:
        return item.sizeHint().expandedTo(item.minimumSize())

    @classmethod
    def _width(cls, item: QLayoutItem) -> int:
        """The width an item takes on a line before the spare is shared: a growing item (a search
        field) asks for its minimum only, since it gets the rest of its line anyway; its hint
        pushed the last filter onto a line of its own."""
        minimum = item.minimumSize().width()
        if item.expandingDirections() & Qt.Orientation.Horizontal and minimum > 0:
            return minimum
        return cls._hint(item).width()

    def _lines(self, width: int) -> list[list[QLayoutItem]]:
        lines: list[list[QLayoutItem]] = [[]]
        used = 0
        for item in self._visible():
            w = self._width(item)
            if lines[-1] and used + self._spacing + w > width:
                lines.append([])
                used = 0
            used += (self._spacing if lines[-1] else 0) + w
            lines[-1].append(item)
        return [line for line in lines if line]

    def _arrange(self, rect: QRect, *, apply: bool) -> int:
        m = self.contentsMargins()
        area = rect.adjusted(m.left(), m.top(), -m.right(), -m.bottom())
        y = area.y()
        for line in self._lines(area.width()):
            height = max(self._hint(i).height() for i in line)
            if apply:
                self._place_line(line, area, y, height)
            y += height + self._spacing
        return y - self._spacing - rect.y() + m.bottom() if y > area.y() else m.top() + m.bottom()

    def _place_line(self, line: list[QLayoutItem], area: QRect, y: int, height: int) -> None:
        widths = [min(self._width(i), area.width()) for i in line]
        spare = area.width() - sum(widths) - self._spacing * (len(line) - 1)
        growers = [n for n, i in enumerate(line) if i.expandingDirections() & Qt.Orientation.Horizontal]
        if spare > 0 and growers:
            for n in growers:
                widths[n] += spare // len(growers)
        x = area.x()
        for item, w in zip(line, widths, strict=True):
            h = height if item.expandingDirections() & Qt.Orientation.Vertical else self._hint(item).height()
            item.setGeometry(QRect(QPoint(x, y + (height - h) // 2), QSize(w, h)))
            x += w + self._spacing


class ElidedLabel(QLabel):
    """One line of text that ends in "…" when narrow; the whole text is in the tooltip."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setToolTip(text)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt override
        super().setText(text)
        self.setToolTip(text)

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        return QSize(self.fontMetrics().horizontalAdvance("…") * 4, super().minimumSizeHint().height())

    def paintEvent(self, _event: QPaintEvent) -> None:  # noqa: N802
        painter = QPainter(self)
        rect = self.contentsRect()
        text = self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight, rect.width())
        painter.drawText(rect, int(self.alignment()), text)


def group(parent: QWidget, *parts: QWidget | str) -> QWidget:
    """Controls that wrap together in a FlowLayout (a label and its field); str parts are labels."""
    box = QWidget(parent)
    row = QHBoxLayout(box)
    row.setContentsMargins(0, 0, 0, 0)
    row.setSpacing(4)
    for part in parts:
        row.addWidget(QLabel(part, box) if isinstance(part, str) else part)
    return box
