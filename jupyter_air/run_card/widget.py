"""The card's ipywidgets model; its view (``RunCardView``) ships in jupyter_air's JupyterLab extension."""

from __future__ import annotations

import re

from ipywidgets import Widget
from traitlets import Dict, Unicode

from jupyter_air import __version__

#: The frontend module is the ``jupyter-air`` labextension of the same release (its npm version).
MODULE = "jupyter-air"
_RELEASE = re.match(r"\d+\.\d+\.\d+", __version__)
MODULE_VERSION = f"^{_RELEASE.group(0) if _RELEASE else '0.0.0'}"
WIDGET_VIEW_MIMETYPE = "application/vnd.jupyter.widget-view+json"


class RunCardWidget(Widget):
    """A run card in a cell: the whole state in one synced trait, sent at most a few times a second.

    A plain ``Widget``, not a ``DOMWidget``: no layout model comes with it (one model per card, not two).
    """

    _model_name = Unicode("RunCardModel").tag(sync=True)
    _model_module = Unicode(MODULE).tag(sync=True)
    _model_module_version = Unicode(MODULE_VERSION).tag(sync=True)
    _view_name = Unicode("RunCardView").tag(sync=True)
    _view_module = Unicode(MODULE).tag(sync=True)
    _view_module_version = Unicode(MODULE_VERSION).tag(sync=True)

    card = Dict(help="What the card shows (see jupyter_air.run_card.render.card_json); set as a whole.").tag(sync=True)

    def view_data(self) -> dict:
        """The ``application/vnd.jupyter.widget-view+json`` payload that shows this widget in an output."""
        return {"version_major": 2, "version_minor": 0, "model_id": self.model_id}
