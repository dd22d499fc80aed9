"""Reading what a notebook run by nbclient showed."""

from __future__ import annotations


def outputs_text(cell) -> str:
    """Everything a code cell showed: streams, the HTML (or text) of displays and results, errors."""
    parts = []
    for out in cell.outputs:
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type in ("display_data", "execute_result"):
            parts.append(out.data.get("text/html", "") or out.data.get("text/plain", ""))
        elif out.output_type == "error":
            parts.append(f"{out.ename}: {out.evalue}")
    return "\n".join(parts)
