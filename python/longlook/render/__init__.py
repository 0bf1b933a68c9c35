"""The drawing kit the report, the analyses and the kinds' sections share: colours
(palette), matplotlib figures as inline SVG (figures), which grid dimensions become rows,
columns and facets (layout), display names of arms (names), and the HTML side: `Section`,
the jinja environment and its templates (html).

Ground floor: it reads nothing of core, testbed, stacks, kinds, analyses or report.
The terminal side of the CLI is `console.make_console` (one rich Console factory).
Import the module you need (`from longlook.render.palette import QUIC`); this package
imports none of them, so matplotlib and jinja load only where they are used.
"""
