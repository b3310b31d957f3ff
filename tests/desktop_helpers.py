"""What the desktop tests share: the real window on a real store, and waiting for it."""
import pytest


@pytest.fixture
def window(qtbot, mem):
    from tidemind_desktop.main_window import MainWindow

    w = MainWindow(mem, poll_ms=200)
    qtbot.addWidget(w)
    w.show()
    settle(w, qtbot)
    yield w
    w.close()


def settle(w, qtbot, timeout=60000):
    """Wait until every read and decision asked of the window has come back and been applied."""
    qtbot.waitUntil(lambda: not w.busy, timeout=timeout)


def opened(w, qtbot, node_id):
    w.open_node(node_id)
    settle(w, qtbot)
    assert w.node_view.node_id == node_id


def click(w, name):
    from PySide6.QtWidgets import QPushButton

    w.findChild(QPushButton, name).click()
