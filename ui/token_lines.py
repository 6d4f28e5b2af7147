"""Token lines at any length: bertviz's head view as a small browser component.

Two columns of tokens (queries left, keys right) in a box that scrolls, a line from each query
to each key it attends to (opacity = weight, colour = head). Hovering a token shows only its
lines, as bertviz does; a click keeps that token until the next click. The data comes from
viz/lines.py `line_data`; every token is set with `textContent`, so nothing the user typed is
ever read as HTML. The component reports nothing back.
"""

from __future__ import annotations

import streamlit as st

ROW_PX = 20  # one token per row
BOX_PX = 600  # the box scrolls beyond this height
WIDTH_PX = 680
LEFT_X, RIGHT_X = 230, 450  # where the two columns of tokens end and begin

_CSS = f"""
.box {{ max-height: {BOX_PX}px; max-width: 100%; width: fit-content; overflow: auto;
        border: 1px solid #ddd; border-radius: 6px; }}
svg {{ display: block; font-size: 13px; }}
.head {{ width: {WIDTH_PX}px; display: flex; justify-content: center; gap: {RIGHT_X - LEFT_X + 20}px;
         font-size: 14px; margin-bottom: 4px; }}
text {{ cursor: pointer; fill: #222; }}
text.on {{ font-weight: 700; }}
line {{ stroke-width: 2; pointer-events: none; }}
svg.focus line {{ display: none; }}
svg.focus line.on {{ display: inline; }}
"""

_JS = f"""
export default function(component) {{
  const {{ data, parentElement }} = component;
  const NS = 'http://www.w3.org/2000/svg';
  parentElement.querySelectorAll('.box, .head').forEach(el => el.remove());
  if (!data || !data.tokens) return;
  const head = document.createElement('div');
  head.className = 'head';
  ['queries', 'keys'].forEach(word => {{
    const b = document.createElement('b'); b.textContent = word; head.appendChild(b);
  }});
  parentElement.appendChild(head);
  const n = data.tokens.length, row = {ROW_PX};
  const box = document.createElement('div');
  box.className = 'box';
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('width', {WIDTH_PX});
  svg.setAttribute('height', n * row + 12);
  svg.setAttribute('data-testid', 'token-lines');
  box.appendChild(svg);
  parentElement.appendChild(box);
  const y = i => 6 + row * i + row / 2;
  const byQuery = [...Array(n)].map(() => []), byKey = [...Array(n)].map(() => []);
  for (const [q, k, w, h] of data.lines) {{
    const line = document.createElementNS(NS, 'line');
    line.setAttribute('x1', {LEFT_X} + 4); line.setAttribute('y1', y(q));
    line.setAttribute('x2', {RIGHT_X} - 4); line.setAttribute('y2', y(k));
    line.setAttribute('stroke', data.colours[String(h)] || '#444');
    line.setAttribute('stroke-opacity', Math.max(0.08, w));
    svg.appendChild(line);
    byQuery[q].push(line); byKey[k].push(line);
  }}
  let pinned = null;
  const labels = [];
  const focus = (side, i) => {{
    svg.querySelectorAll('.on').forEach(el => el.classList.remove('on'));
    if (side === null) {{ svg.classList.remove('focus'); return; }}
    svg.classList.add('focus');
    labels[side][i].classList.add('on');
    (side === 0 ? byQuery : byKey)[i].forEach(l => l.classList.add('on'));
  }};
  [[{LEFT_X}, 'end'], [{RIGHT_X}, 'start']].forEach(([x, anchor], side) => {{
    labels.push(data.tokens.map((token, i) => {{
      const t = document.createElementNS(NS, 'text');
      t.setAttribute('x', x); t.setAttribute('y', y(i));
      t.setAttribute('text-anchor', anchor); t.setAttribute('dominant-baseline', 'middle');
      t.setAttribute('data-side', side ? 'key' : 'query');
      t.textContent = token;
      t.addEventListener('mouseenter', () => {{ if (!pinned) focus(side, i); }});
      t.addEventListener('mouseleave', () => {{ if (!pinned) focus(null); }});
      t.addEventListener('click', () => {{
        const same = pinned && pinned[0] === side && pinned[1] === i;
        pinned = same ? null : [side, i];
        focus(same ? null : side, i);
      }});
      svg.appendChild(t);
      return t;
    }}));
  }});
}}
"""

_component = st.components.v2.component("attention_lab_token_lines", css=_CSS, js=_JS)


def token_lines(data: dict, key: str) -> None:
    """Draw `line_data(...)` (viz/lines.py) as the scrolling line view."""
    _component(key=key, data=data)
