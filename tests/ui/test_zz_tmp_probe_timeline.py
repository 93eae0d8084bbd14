import faulthandler
import sys

from tests.ui.test_main_window import *  # noqa
from tests.ui.test_main_window import _open


def test_probe(qtbot, window):
    faulthandler.dump_traceback_later(20, exit=False, file=sys.stderr)
    _open(qtbot, window)
    window.welcome.demo_button.click()
    qtbot.waitUntil(lambda: window.stack.currentWidget() is window.workspace, timeout=60000)
    ws = window.workspace
    qtbot.waitUntil(lambda: ws.browser.model.rowCount() > 5, timeout=10000)
    ws.conversations.select("trip-to-lisbon")
    window.show_tab(SUMMARY_TAB)
    qtbot.waitUntil(lambda: ws.summary.state is not None and ws.summary.state.summary is not None,
                    timeout=30000)
    faulthandler.cancel_dump_traceback_later()
