#!/usr/bin/env bash
# Redraws the README's images from the committed example: the plot (abtrack's SVG -> PNG) and the
# rendered A/B document (Markdown -> HTML -> a headless Chromium screenshot).
# Needs: librsvg2-bin, python3-markdown, chromium (Debian packages). Run from the repository root.
set -euo pipefail
doc=examples/occupancy/OCCUPANCY_AB.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rsvg-convert -w 760 examples/occupancy/OCCUPANCY_AB.svg -o docs/img/occupancy-plot.png
cp examples/occupancy/OCCUPANCY_AB.svg "$tmp/"
/usr/bin/python3 - "$doc" "$tmp/doc.html" <<'PY'
import re, sys, markdown
text = open(sys.argv[1], encoding="utf-8").read()
body = markdown.markdown(text, extensions=["tables", "fenced_code"])
css = """body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;font-size:14px;line-height:1.5;
color:#1f2328;max-width:1180px;margin:24px 30px}h1,h2{border-bottom:1px solid #d0d7de;padding-bottom:.3em}
table{border-collapse:collapse;margin:12px 0;font-size:12px}th,td{border:1px solid #d0d7de;padding:4px 8px}
tr:nth-child(2n){background:#f6f8fa}code{background:#eff1f3;padding:.1em .3em;border-radius:4px;font-size:12px}
pre{background:#f6f8fa;padding:10px;overflow:auto}img{max-width:100%}"""
open(sys.argv[2], "w", encoding="utf-8").write(f"<!doctype html><meta charset=utf-8><style>{css}</style>{body}")
PY
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1240,2300 \
  --screenshot="$tmp/shot.png" "file://$tmp/doc.html" >/dev/null 2>&1
cp "$tmp/shot.png" docs/img/occupancy-ab.png
