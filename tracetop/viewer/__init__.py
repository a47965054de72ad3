"""The web viewer: static HTML/JS/CSS in static/ (no build step, nothing from the network), served with the
experiment's data by server.py (`tracetop view`) or inlined into one file by report.py (`tracetop report`)."""
