"""The picture on the map page: one file or symbol in the middle, what depends on it on
the left, what it depends on on the right, drawn as SVG on the server.

Three fixed columns need no layout engine (a general one, such as a force-directed
layout, scatters what is here a plain before/after reading order); the drawing is plain SVG
with every label escaped and every node a link, so the picture needs no script to follow.
"""
from dataclasses import dataclass

from markupsafe import Markup, escape

COLUMN_CAP = 14        # nodes drawn per side; the rest are counted in a "+N more" node
ROW_PX = 30
BOX_WIDTH_PX = 300
WIDTH_PX = 980
NODE_HEIGHT_PX = 22
LABEL_CHARS = 38


@dataclass(frozen=True)
class Node:
    label: str
    href: str
    title: str = ""        # shown on hover: the full path or qualified name
    resolution: str = ""   # how sure the edge to the middle node is ("exact", "inferred"...)


def _short(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else "…" + label[-(LABEL_CHARS - 1):]


def _capped(nodes: list[Node], side: str) -> list[Node]:
    if len(nodes) <= COLUMN_CAP:
        return nodes
    more = len(nodes) - (COLUMN_CAP - 1)
    return nodes[:COLUMN_CAP - 1] + [Node(f"+{more} more", "", f"{more} more {side}")]


def neighbourhood_svg(centre: Node, dependents: list[Node], dependencies: list[Node],
                      caption: tuple[str, str]) -> Markup:
    """SVG of `centre` with `dependents` (left, arrows into it) and `dependencies` (right,
    arrows out of it); caption: the two columns' headings."""
    left, right = _capped(dependents, caption[0]), _capped(dependencies, caption[1])
    rows = max(len(left), len(right), 1)
    height = (rows + 2) * ROW_PX
    half = BOX_WIDTH_PX / 2
    column_x = [half + 4, WIDTH_PX / 2, WIDTH_PX - half - 4]

    def row_y(index: int, count: int) -> float:
        """Rows of a column centred on the picture's middle line."""
        return height / 2 + (index - (count - 1) / 2) * ROW_PX

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="neighbourhood" role="img" '
             f'viewBox="0 0 {WIDTH_PX} {height}" width="{WIDTH_PX}" height="{height}">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" '
             'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
             '<path d="M 0 0 L 10 5 L 0 10 z"/></marker></defs>',
             f'<text class="heading" x="{column_x[0]}" y="16" text-anchor="middle">'
             f'{escape(caption[0])} ({len(dependents)})</text>',
             f'<text class="heading" x="{column_x[2]}" y="16" text-anchor="middle">'
             f'{escape(caption[1])} ({len(dependencies)})</text>']
    cx, cy = column_x[1], height / 2 + 8
    for side, nodes in (("l", left), ("r", right)):
        for i, node in enumerate(nodes):
            x, y = column_x[0 if side == "l" else 2], row_y(i, len(nodes)) + 8
            start, end = ((x + half, y), (cx - half, cy)) if side == "l" else \
                ((cx + half, cy), (x - half, y))
            middle = (start[0] + end[0]) / 2
            if node.href:
                parts.append(f'<path class="edge {escape(node.resolution)}" '
                             f'marker-end="url(#arrow)" d="M {start[0]:.1f} {start[1]:.1f} '
                             f'C {middle:.1f} {start[1]:.1f}, {middle:.1f} {end[1]:.1f}, '
                             f'{end[0]:.1f} {end[1]:.1f}"/>')
            parts.append(_node(node, x, y, half, "node"))
    parts.append(_node(centre, cx, cy, half, "node centre"))
    parts.append("</svg>")
    return Markup("".join(parts))


def _node(node: Node, x: float, y: float, half: float, css: str) -> str:
    title = escape(node.title or node.label)
    if node.resolution:
        title = escape(f"{node.title or node.label} (edge: {node.resolution})")
    box = (f'<rect class="{css}" x="{x - half:.1f}" y="{y - NODE_HEIGHT_PX / 2:.1f}" '
           f'width="{2 * half:.1f}" height="{NODE_HEIGHT_PX}" rx="4"/>'
           f'<text x="{x:.1f}" y="{y + 4:.1f}" text-anchor="middle">{escape(_short(node.label))}'
           f'</text><title>{title}</title>')
    if not node.href:
        return f'<g class="more">{box}</g>'
    return f'<a href="{escape(node.href)}">{box}</a>'
