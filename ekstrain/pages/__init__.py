"""Self-contained HTML pages of what the tool knows: the render (``build/<stack>/index.html``), a timeline
(``ekstrain simulate --timeline MIX --html FILE``) and the planner's candidates (``ekstrain plan search|evaluate
... --html FILE``). Each page is one file that opens offline: inline CSS, charts drawn by matplotlib's SVG
backend and embedded inline, no scripts, no network URLs (docs/index.md)."""
