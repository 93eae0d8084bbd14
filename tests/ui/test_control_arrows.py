"""Combo and spin boxes under the app's style sheet keep arrows that never cover their text
(issue #39: a combo's arrow overlapped its text and spin-box arrows drew as "-|"), at the two
screen sizes new users have most: 1280x720 and 1366x768. Measured from the style's own geometry
of each control's sub-controls in the Settings dialog, as drawn."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QStyle,
    QStyleOptionComboBox,
    QStyleOptionSpinBox,
)

from desktop_mem.ui.app import application


@pytest.mark.parametrize("size", [(1280, 720), (1366, 768)])
def test_every_combo_and_spin_box_in_settings_keeps_arrows_beside_its_text(
    qtbot: Any, opened_window: Any, size: tuple[int, int]
) -> None:
    application()  # the running QApplication, given the app's style sheet as at start
    assert "QMainWindow" in QApplication.instance().styleSheet()
    opened_window.resize(*size)
    opened_window.open_settings()
    dialog = opened_window.settings_dialog
    qtbot.waitUntil(dialog.isVisible, timeout=5000)
    checked = 0
    for page in range(dialog.tabs.count()):
        dialog.tabs.setCurrentIndex(page)
        qtbot.wait(20)
        for box in dialog.tabs.widget(page).findChildren(QAbstractSpinBox):
            if box.isVisible():
                checked += _spin_arrows_ok(box)
        for box in dialog.tabs.widget(page).findChildren(QComboBox):
            if box.isVisible():
                checked += _combo_arrow_ok(box)
    assert checked >= 3, "the settings show combo and spin boxes"
    dialog.reject()


def _spin_arrows_ok(box: QAbstractSpinBox) -> int:
    opt = QStyleOptionSpinBox()
    box.initStyleOption(opt)
    style = box.style()

    def rect(sub: QStyle.SubControl) -> Any:
        return style.subControlRect(QStyle.ComplexControl.CC_SpinBox, opt, sub, box)

    edit, up, down = (rect(QStyle.SubControl.SC_SpinBoxEditField), rect(QStyle.SubControl.SC_SpinBoxUp),
                      rect(QStyle.SubControl.SC_SpinBoxDown))
    if box.buttonSymbols() == QAbstractSpinBox.ButtonSymbols.NoButtons:
        return 0
    for button in (up, down):
        assert button.width() >= 8 and button.height() >= 5, f"{box.objectName()}: {button}"
        assert not button.intersects(edit), f"{box.objectName()}: arrow {button} over text {edit}"
    assert not up.intersects(down)
    return 1


def _combo_arrow_ok(box: QComboBox) -> int:
    opt = QStyleOptionComboBox()
    box.initStyleOption(opt)
    style, combo = box.style(), QStyle.ComplexControl.CC_ComboBox
    edit = style.subControlRect(combo, opt, QStyle.SubControl.SC_ComboBoxEditField, box)
    arrow = style.subControlRect(combo, opt, QStyle.SubControl.SC_ComboBoxArrow, box)
    assert arrow.width() >= 8, f"{box.objectName()}: arrow {arrow}"
    assert not arrow.intersects(edit), f"{box.objectName()}: arrow {arrow} over text {edit}"
    return 1
