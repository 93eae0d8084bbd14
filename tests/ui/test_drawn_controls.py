"""Combo and spin boxes draw their arrows apart from their text, at 1280×720 and 1366×768 (issue
#39): with the app's padded, bordered style and no arrow rules, a combo's arrow was drawn over its
text ("All type▾s") and a spin box's buttons were squeezed to a dark "—|".

The fault is in what is drawn, so these tests read the widget's own rendering: the dark pixels
right of the style's text field must be arrows (a chevron or a triangle, no straight bar), and a
combo's (or menu button's) text must stay left of its arrow.
"""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtGui import QImage, qGray
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QComboBox,
    QStyle,
    QStyleOptionSpinBox,
    QToolButton,
    QWidget,
)

from desktop_mem.ui.main_window import MainWindow
from desktop_mem.ui.settings.settings_dialog import SettingsDialog
from desktop_mem.ui.workspace import MEMORIES_TAB, TIMELINE_TAB
from tests.ui.conftest import open_demo

SIZES = ((1280, 720), (1366, 768))
DARK = 140  # gray level under which a pixel is ink (text #1f2328, arrows #57606a; borders are lighter)
LONGEST_BAR = 10  # an arrow is a chevron or a small triangle: a longer straight dark run is a bar ("—|")

Point = tuple[int, int]


def _ink(image: QImage, left: int) -> set[Point]:
    """Dark pixels at x >= left, the outer 1 px frame left out."""
    return {(x, y) for x in range(max(left, 1), image.width() - 1) for y in range(1, image.height() - 1)
            if qGray(image.pixel(x, y)) < DARK}


def _longest_run(points: set[Point]) -> int:
    longest = 0
    for along in (0, 1):
        for a, b in points:
            if ((a - 1, b) if along == 0 else (a, b - 1)) in points:
                continue  # not the start of a run
            n = 1
            while ((a + n, b) if along == 0 else (a, b + n)) in points:
                n += 1
            longest = max(longest, n)
    return longest


def _row_span(points: set[Point], y: int) -> int:
    xs = [x for x, row in points if row == y]
    return max(xs) - min(xs) + 1


def _assert_chevron(points: set[Point], pointing: str, what: str) -> None:
    assert points, f"{what}: no {pointing} arrow drawn"
    assert _longest_run(points) <= LONGEST_BAR, f"{what}: a straight bar where its {pointing} arrow goes"
    top, bottom = min(y for _x, y in points), max(y for _x, y in points)
    assert bottom - top >= 2, f"{what}: the {pointing} arrow is flat"
    wide_top = _row_span(points, top) > _row_span(points, bottom)
    assert wide_top == (pointing == "down"), f"{what}: the arrow does not point {pointing}"


def _check_text_and_arrow(widget: QComboBox | QToolButton, what: str) -> None:
    """A combo, or a button that opens a menu: drawn once as it is and once without its text,
    what is left is its arrow alone, and the text stays left of it."""
    with_text = widget.grab().toImage()
    text = widget.currentText() if isinstance(widget, QComboBox) else widget.text()
    _set_text(widget, "")
    try:
        bare = widget.grab().toImage()
    finally:
        _set_text(widget, text)
    arrow = _ink(bare, 0)
    _assert_chevron(arrow, "down", what)
    text_ink = _ink(with_text, 0) - arrow
    assert text_ink, f"{what}: no text drawn"
    assert max(x for x, _y in text_ink) < min(x for x, _y in arrow) - 2, f"{what}: text runs into the arrow"


def _set_text(widget: QComboBox | QToolButton, text: str) -> None:
    if isinstance(widget, QToolButton):
        widget.setText(text)
    elif widget.isEditable():
        widget.setEditText(text)
    else:
        widget.setItemText(widget.currentIndex(), text)


def _check_spin_box(box: QAbstractSpinBox, what: str) -> None:
    option = QStyleOptionSpinBox()
    box.initStyleOption(option)
    style, control = box.style(), QStyle.ComplexControl.CC_SpinBox
    field = style.subControlRect(control, option, QStyle.SubControl.SC_SpinBoxEditField, box)
    image = box.grab().toImage()
    ink = _ink(image, field.right() + 1)
    if box.property("calendarPopup"):
        _assert_chevron(ink, "down", what)
        return
    middle = style.subControlRect(control, option, QStyle.SubControl.SC_SpinBoxUp, box).bottom()
    _assert_chevron({p for p in ink if p[1] <= middle}, "up", what)
    _assert_chevron({p for p in ink if p[1] > middle}, "down", what)


def _check_visible_controls(root: QWidget, where: str) -> int:
    checked = 0
    for combo in root.findChildren(QComboBox):
        if combo.isVisible() and combo.isEnabled() and combo.currentText():
            _check_text_and_arrow(combo, f"{where}: combo {combo.currentText()!r}")
            checked += 1
    for button in root.findChildren(QToolButton):
        if button.isVisible() and button.menu() is not None and button.text():
            _check_text_and_arrow(button, f"{where}: menu button {button.text()!r}")
            checked += 1
    for box in root.findChildren(QAbstractSpinBox):
        if box.isVisible() and box.isEnabled():
            _check_spin_box(box, f"{where}: {type(box).__name__} {box.text()!r}")
            checked += 1
    return checked


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_combo_and_spin_box_arrows_are_drawn_apart_from_their_text(
        qtbot: Any, app_style: None, opened_window: MainWindow, width: int, height: int) -> None:
    window = opened_window
    ws = open_demo(qtbot, window)
    window.resize(width, height)
    qtbot.waitUntil(lambda: (window.width(), window.height()) == (width, height), timeout=2000)
    checked = 0
    window.show_tab(TIMELINE_TAB)
    qtbot.waitUntil(lambda: ws.timeline.model.rowCount() > 0, timeout=30000)
    ws.timeline.dates_check.setChecked(True)  # its date boxes drawn enabled
    qtbot.wait(50)
    checked += _check_visible_controls(ws.timeline, "Timeline")
    window.show_tab(MEMORIES_TAB)
    qtbot.waitUntil(lambda: ws.browser.model.rowCount() > 0, timeout=30000)
    ws.browser.table.selectRow(0)
    qtbot.waitUntil(lambda: ws.editor.memory is not None, timeout=5000)
    ws.editor.expires_check.setChecked(True)  # its date-time box drawn enabled
    qtbot.wait(50)
    checked += _check_visible_controls(ws.memories_splitter, "Memories")
    dialog = SettingsDialog(window.config, window.runner, window, group="llm")
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    checked += _check_visible_controls(dialog, "Settings")
    dialog.close()
    assert checked >= 8, checked  # the filters' combos and dates, the editor's, the Timeout box
