"""Token lines at any length: bertviz's head view as a small browser component.

Two columns of tokens (queries left, keys right) in a box that scrolls, as wide as the column
allows, a line from each query to each key it attends to (opacity = weight, colour = head).
Hovering a token shows only its lines, as bertviz does, and names its three strongest; a click
keeps that token until the next click. The data comes from viz/lines.py `line_data`; every
token is set with `textContent`, so nothing the user typed is ever read as HTML. The component
reports nothing back.
"""

from __future__ import annotations

import streamlit as st

ROW_PX = 20  # one token per row
BOX_PX = 600  # the box scrolls beyond this height
WIDTH_PX = 680
LEFT_X = 230  # where the queries end; the keys begin as far from the right edge

_CSS = f"""
.box {{ max-height: {BOX_PX}px; max-width: 100%; width: fit-content; overflow: auto;
        border: 1px solid #ddd; border-radius: 6px; }}
svg {{ display: block; }}
.head {{ display: flex; justify-content: center; margin-bottom: 4px; }}
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
  // sized to the page's base font: projector mode's larger text makes the view larger too
  const scale = (parseFloat(getComputedStyle(document.documentElement).fontSize) || 16) / 16;
  parentElement.querySelectorAll('.box, .head').forEach(el => el.remove());
  if (!data || !data.tokens) return;
  // as wide as the column allows (an 800 px screen leaves ~470 px), the columns of tokens
  // keeping their share of it
  const host = parentElement.host || parentElement;
  const page = host.closest('[data-testid="stVerticalBlock"]') || host;
  const width = Math.min({WIDTH_PX} * scale, page.getBoundingClientRect().width - 4);
  const left = Math.min({LEFT_X} * scale, 0.38 * width), right = width - left;
  const head = document.createElement('div');
  head.className = 'head';
  head.style.width = width + 'px';
  head.style.gap = (right - left + 20) + 'px';
  ['queries', 'keys'].forEach(word => {{
    const b = document.createElement('b'); b.textContent = word; head.appendChild(b);
  }});
  parentElement.appendChild(head);
  const n = data.tokens.length, row = {ROW_PX} * scale;
  const box = document.createElement('div');
  box.className = 'box';
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('width', width);
  svg.style.fontSize = (13 * scale) + 'px';
  svg.setAttribute('height', n * row + 12);
  svg.setAttribute('data-testid', 'token-lines');
  box.appendChild(svg);
  parentElement.appendChild(box);
  const y = i => 6 + row * i + row / 2;
  const byQuery = [...Array(n)].map(() => []), byKey = [...Array(n)].map(() => []);
  for (const [q, k, w, h] of data.lines) {{
    const line = document.createElementNS(NS, 'line');
    line.setAttribute('x1', left + 4); line.setAttribute('y1', y(q));
    line.setAttribute('x2', right - 4); line.setAttribute('y2', y(k));
    line.setAttribute('stroke', data.colours[String(h)] || '#444');
    line.setAttribute('stroke-opacity', Math.max(0.08, w));
    svg.appendChild(line);
    byQuery[q].push(line); byKey[k].push(line);
  }}
  const strongest = [[...Array(n)].map(() => []), [...Array(n)].map(() => [])];
  for (const [q, k, w] of [...data.lines].sort((a, b) => b[2] - a[2])) {{
    strongest[0][q].push(data.tokens[k] + ' ' + w.toFixed(2));
    strongest[1][k].push(data.tokens[q] + ' ' + w.toFixed(2));
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
  [[left, 'end'], [right, 'start']].forEach(([x, anchor], side) => {{
    labels.push(data.tokens.map((token, i) => {{
      const t = document.createElementNS(NS, 'text');
      t.setAttribute('x', x); t.setAttribute('y', y(i));
      t.setAttribute('text-anchor', anchor); t.setAttribute('dominant-baseline', 'middle');
      t.setAttribute('data-side', side ? 'key' : 'query');
      t.textContent = token;
      const title = document.createElementNS(NS, 'title');  // where its strongest lines go
      title.textContent = (side ? byKey : byQuery)[i].length ? token + (side ? ' ← ' : ' → ')
        + strongest[side][i].slice(0, 3).join(', ') : token + ': no line above the cut';
      t.appendChild(title);
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
