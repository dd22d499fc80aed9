"""The package stays light to import and ships its entry points."""

from __future__ import annotations

import subprocess
import sys


def test_import_does_not_load_heavy_modules():
    # Given a fresh interpreter
    code = (
        "import sys, jupyter_air, jupyter_air.server.extension; "
        "print(sorted(m for m in ('mlflow', 'torch', 'pynvml', 'ray', 'ipywidgets') if m in sys.modules))"
    )
    # When the package and the server extension are imported
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # Then neither MLflow, torch, NVML, Ray nor ipywidgets was imported
    assert out.strip() == "[]"


def test_entry_points():
    import jupyter_air
    from jupyter_air.server.extension import JupyterAir

    assert jupyter_air._jupyter_labextension_paths() == [{"src": "labextension", "dest": "jupyter-air"}]
    assert jupyter_air._jupyter_server_extension_points() == [{"module": "jupyter_air", "app": JupyterAir}]
