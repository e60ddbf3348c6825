// Token view: runs once per component as gr.HTML's js_on_load (element, trigger, props, server, upload, watch).
// props.value is the compact payload of mrtpo_viz.viz.token_view (a JSON string); props.adv, when set, replaces
// its advantages (the advantage panel updates them without resending the tokens). Everything is drawn here with
// textContent (never innerHTML), so token text cannot inject markup. The template never changes, so a new value
// leaves this DOM alone and only watch() redraws.
const STOPS = __VIRIDIS__;  // [[r, g, b], ...] evenly spaced, from plotly's Viridis (replaced at import)
const root = element.querySelector('.tv');
const q = (sel) => root.querySelector(sel);
const rowsBox = q('.tv-rows'), panel = q('.tv-panel'), legend = q('.tv-legend');
let d = null, toks = [], inSpan = [], pinned = null, cur = [0, 0], draws = 0, lastKey = '';

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}
function rgb(x) {
  x = (Number.isFinite(x) ? Math.min(Math.max(x, 0), 1) : 0) * (STOPS.length - 1);
  const i = Math.min(Math.floor(x), STOPS.length - 2), f = x - i, a = STOPS[i], b = STOPS[i + 1];
  return [0, 1, 2].map((j) => Math.round(a[j] + f * (b[j] - a[j])));
}
const paint = (x) => (x === null || x === undefined ? null : rgb(x / (d.vmax > 0 ? d.vmax : 1)));  // null: not yet
const css = (c) => `rgb(${c[0]},${c[1]},${c[2]})`;
const ink = (c) => (0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2] > 140 ? '#000' : '#fff');
function visible(s) {
  if (s === '') return '\u2205';
  if (/^ +$/.test(s)) return '\u00b7'.repeat(s.length);
  let out = '';
  for (const ch of s) {
    const c = ch.codePointAt(0);
    if (ch === '\n') out += '\u21b5';
    else if (ch === '\t') out += '\u21e5';
    else if (ch === '\r') out += '\u240d';
    else if (c < 0x20 || (c >= 0x7f && c < 0xa0)) out += '\\x' + c.toString(16).padStart(2, '0');
    else if (c >= 0xd800 && c <= 0xdfff) out += '\\u' + c.toString(16);
    else out += ch;
  }
  return out;
}
function sig(x, signed) {
  if (x === null || x === undefined || !Number.isFinite(x)) return '\u2013';
  // 3 significant digits; below 0.001 in exponent form (toPrecision writes 0.00000250 for 2.5e-6)
  const s = x === 0 ? '0' : Math.abs(x) < 1e-3 ? x.toExponential(2) : x.toPrecision(3);
  return signed && x >= 0 ? '+' + s : s;  // ASCII minus, as the tables and plots write it
}
function topNodes(flat) {
  const box = el('span', 'tv-top');
  if (!flat || !flat.length) { box.textContent = '\u2013'; return box; }
  for (let i = 0; i < flat.length; i += 2) {
    const item = el('span', 'tv-tk', `"${visible(d.vocab[flat[i]])}"`);
    item.append(el('span', 'tv-p', ' ' + sig(flat[i + 1])));
    box.append(item, document.createTextNode(' '));  // a space for copy / paste (the margin does the layout)
  }
  return box;
}

function drawLegend() {
  legend.replaceChildren();
  const bar = el('span', 'tv-bar');
  bar.style.background = 'linear-gradient(to right, ' + STOPS.map(css).join(', ') + ')';
  legend.append(el('span', null, '0'), bar, el('span', null, sig(d.vmax)), el('span', null, d.label || ''));
  const hint = 'click a token (or arrows + Enter) to pin it; Esc unpins' + (d.span ? '; underlined: in the verifier\'s relevant span' : '');
  legend.append(el('span', 'tv-hint', hint));
}

function idle(text) {
  panel.className = 'tv-panel tv-idle';
  panel.replaceChildren(el('div', null, text));
}

let parsedFrom = null, parsed = null, advFrom = null, advParsed = null;
function current() {  // the payload: a JSON string (TokenView) or an object (plain gr.HTML)
  const v = props.value;
  if (typeof v !== 'string') return v;
  if (v !== parsedFrom) { parsedFrom = v; try { parsed = v ? JSON.parse(v) : null; } catch (e) { parsed = null; } }
  return parsed;
}
function advantages() {  // props.adv (a JSON string of [[method, value], ...]) wins over the payload's own
  const a = props.adv;
  if (a !== advFrom) { advFrom = a; try { advParsed = a ? JSON.parse(a) : null; } catch (e) { advParsed = null; } }
  return advParsed || (d && d.adv) || null;
}

function render() {
  const t0 = performance.now();
  const v = current();
  q('.tv-h').textContent = props.heading || '';
  q('.tv-title').textContent = (v && v.title) || '';
  if (!v || typeof v !== 'object' || !Array.isArray(v.tokens)) {
    d = null; toks = []; rowsBox.replaceChildren(); legend.replaceChildren();
    idle((props.placeholder) || 'No tokens yet.');
    return;
  }
  const key = (v.ids || v.tokens).join('\u0001');
  d = v;
  const K = d.verifiers.length, T = d.tokens.length, vmax = d.vmax > 0 ? d.vmax : 1;
  if (key !== lastKey) { pinned = null; cur = [0, 0]; }
  lastKey = key;
  const shown = d.tokens.map(visible);
  inSpan = d.verifiers.map((_, k) => {
    const m = new Uint8Array(T), runs = d.span && d.span[k];
    if (runs) for (const [a, b] of runs) m.fill(1, a, b);
    return m;
  });
  toks = [];
  const frag = document.createDocumentFragment();
  for (let k = 0; k < K; k++) {
    const row = el('div', 'tv-row mrtpo-row');  // mrtpo-* and data-score: what today's browser test selects
    const label = el('div', 'tv-row-label', d.verifiers[k]);
    const r = d.rewards && d.rewards[k];
    if (r !== null && r !== undefined) label.append(el('span', 'tv-reward', ` \u00b7 reward ${sig(r)}`));
    const line = el('div', 'tv-toks'), spans = new Array(T);
    line.setAttribute('role', 'row');
    for (let t = 0; t < T; t++) {
      const s = el('span', 'tv-tok mrtpo-tok', shown[t]), score = d.scores[k][t];
      if (score === null || score === undefined) s.classList.add('tv-pending');  // not replayed yet: no colour
      else { const c = rgb(score / vmax); s.style.background = css(c); s.style.color = ink(c); s.dataset.score = score; }
      s.dataset.k = k; s.dataset.t = t;
      s.tabIndex = -1;
      s.setAttribute('role', 'gridcell');
      if (inSpan[k][t]) s.classList.add('tv-span');
      if (d.tokens[t] === '') s.classList.add('tv-empty');
      spans[t] = s;
      line.appendChild(s);
      if (d.tokens[t].includes('\n')) line.appendChild(document.createElement('br'));
    }
    toks.push(spans);
    row.append(label, line);
    frag.appendChild(row);
  }
  rowsBox.replaceChildren(frag);
  drawLegend();
  if (T && K) {
    cur = [Math.min(cur[0], K - 1), Math.min(cur[1], T - 1)];
    toks[cur[0]][cur[1]].tabIndex = 0;
  }
  if (pinned && pinned[0] < K && pinned[1] < T) pin(pinned[0], pinned[1], false); else { pinned = null; idle('Hover or click a token to see its details.'); }
  draws += 1;
  root.dataset.drawn = draws;
  root.dataset.drawMs = (performance.now() - t0).toFixed(2);
  element.__tvDrawnAt = performance.now();
  requestAnimationFrame(() => requestAnimationFrame(() => { element.__tvPaintedAt = performance.now(); root.dataset.painted = draws; }));
}

function show(k, t, isPinned) {
  const K = d.verifiers.length, tok = d.tokens[t];
  panel.className = 'tv-panel';
  const head = el('div', 'tv-p-head');
  const chip = el('span', 'tv-p-tok', visible(tok)), c = paint(d.scores[k][t]);
  if (c) { chip.style.background = css(c); chip.style.color = ink(c); }
  head.append(el('span', null, `token ${t}`), chip);
  if (d.ids) head.append(el('span', 'tv-sub', `id ${d.ids[t]}`));
  head.append(el('span', 'tv-sub', `${JSON.stringify(tok)}`));
  if (isPinned) {
    head.append(el('span', 'tv-badge', 'pinned'));
    const x = el('button', 'tv-x', 'unpin \u2715');
    x.type = 'button';
    x.addEventListener('click', () => unpin());
    head.append(x);
  }
  const parts = [head];
  const wo = [];
  if (d.lp0) wo.push(`log p ${sig(d.lp0[t])}`);
  if (d.ent) wo.push(`entropy ${sig(d.ent[t])} nats`);
  if (wo.length) {
    const line = el('div', 'tv-line');
    line.append(el('b', null, 'without information: '), el('span', null, wo.join(' \u00b7 ')));
    parts.push(line);
  }
  const table = el('table'), hr = el('tr');
  const cols = ['verifier', `relevance (${d.metric || 'score'})`];
  if (d.lp) cols.push('log p with', '\u0394 log p');
  if (d.span) cols.push('in span');
  for (const h of cols) hr.appendChild(el('th', null, h));
  table.appendChild(hr);
  for (let j = 0; j < K; j++) {
    const tr = el('tr'), sw = el('span', 'tv-sw'), name = el('td', 'tv-name');
    const cj = paint(d.scores[j][t]);
    if (cj) sw.style.background = css(cj);
    name.append(sw);
    for (const piece of d.verifiers[j].split(/(?<=[._])/)) name.append(document.createTextNode(piece), el('wbr'));  // break only after . and _
    if (j === k) name.style.fontWeight = '700';
    tr.append(name, el('td', 'tv-n', sig(d.scores[j][t])));
    if (d.lp) {
      const w = d.lp[j][t], o = d.lp0 ? d.lp0[t] : null;
      tr.append(el('td', 'tv-n', sig(w)), el('td', 'tv-n', o === null || w === null ? '\u2013' : sig(w - o, true)));
    }
    if (d.span) tr.append(el('td', null, d.span[j] ? (inSpan[j][t] ? 'yes' : 'no') : 'unknown'));
    table.appendChild(tr);
  }
  parts.push(table);
  if (d.top0 || d.top) {  // top predictions both ways, one line each
    const grid = el('div', 'tv-tops');
    grid.append(el('div', 'tv-tops-h', 'top predictions'));
    if (d.top0) grid.append(el('div', 'tv-sub', 'without information'), topNodes(d.top0[t]));
    if (d.top) for (let j = 0; j < K; j++) grid.append(el('div', 'tv-sub', `with ${d.verifiers[j]}`), topNodes(d.top[j] && d.top[j][t]));
    parts.push(grid);
  }
  const adv = advantages();
  if (adv && adv.length) {
    const line = el('div', 'tv-line tv-adv');
    line.append(el('b', null, 'advantage: '), el('span', null, adv.map(([n, a]) =>
      `${n} ${sig(Array.isArray(a) ? a[t] : a, true)}${Array.isArray(a) ? '' : ' (uniform)'}`).join('  \u00b7  ')));
    parts.push(line);
  }
  panel.replaceChildren(...parts);
}

function clearMarks() {
  for (const s of root.querySelectorAll('.tv-col, .tv-pin')) s.classList.remove('tv-col', 'tv-pin');
}
// views with the same props.link (A and B of the A/B tab) pin and unpin the same position together
const LINK = 'mrtpo-tv-link';
function share(type, k, t) {
  if (props.link) window.dispatchEvent(new CustomEvent(LINK, { detail: { link: props.link, src: element, type, k, t } }));
}
window.addEventListener(LINK, (e) => {
  const m = e.detail;
  if (!m || m.link !== props.link || m.src === element || !d || !toks.length) return;
  if (m.type === 'pin' && m.k < toks.length && m.t < toks[0].length) pin(m.k, m.t, false, false);
  else if (m.type === 'unpin') unpin(false);
});
function pin(k, t, notify = true, shared = true) {
  clearMarks();
  pinned = [k, t];
  for (const row of toks) row[t].classList.add('tv-col');
  toks[k][t].classList.add('tv-pin');
  show(k, t, true);
  if (notify) trigger('select', { index: [k, t], value: d.tokens[t], selected: true, verifier: d.verifiers[k] });
  if (shared) share('pin', k, t);
}
function unpin(shared = true) {
  if (!pinned) return;
  const [k, t] = pinned;
  pinned = null;
  clearMarks();
  idle('Hover or click a token to see its details.');
  if (shared) { toks[k][t].focus(); share('unpin'); }
}
function focusTok(k, t) {
  toks[cur[0]][cur[1]].tabIndex = -1;
  cur = [k, t];
  const s = toks[k][t];
  s.tabIndex = 0;
  s.focus();
}
const target = (e) => (e.target && e.target.closest ? e.target.closest('.tv-tok') : null);

rowsBox.addEventListener('click', (e) => {
  const s = target(e);
  if (!s || !d) return;
  const k = +s.dataset.k, t = +s.dataset.t;
  focusTok(k, t);
  pin(k, t);
});
rowsBox.addEventListener('mouseover', (e) => {
  const s = target(e);
  if (s && d && !pinned) show(+s.dataset.k, +s.dataset.t, false);
});
rowsBox.addEventListener('mouseleave', () => { if (d && !pinned) idle('Hover or click a token to see its details.'); });
rowsBox.addEventListener('focusin', (e) => {
  const s = target(e);
  if (s && d && !pinned) show(+s.dataset.k, +s.dataset.t, false);
});
rowsBox.addEventListener('keydown', (e) => {
  const s = target(e);
  if (!s || !d) return;
  const K = toks.length, T = toks[0].length;
  let k = +s.dataset.k, t = +s.dataset.t;
  switch (e.key) {
    case 'ArrowRight': t = Math.min(t + 1, T - 1); break;
    case 'ArrowLeft': t = Math.max(t - 1, 0); break;
    case 'ArrowDown': k = Math.min(k + 1, K - 1); break;
    case 'ArrowUp': k = Math.max(k - 1, 0); break;
    case 'Home': t = 0; break;
    case 'End': t = T - 1; break;
    case 'Enter': case ' ': e.preventDefault(); pin(k, t); return;
    case 'Escape': e.preventDefault(); unpin(); return;
    default: return;
  }
  e.preventDefault();
  focusTok(k, t);
  if (pinned) pin(k, t, false);
});
panel.addEventListener('keydown', (e) => { if (e.key === 'Escape') unpin(); });

// one string, not a list of quoted names: gr.HTML takes a quoted name in this script for a custom event, and then
// returns an event trigger instead of the prop when an update sets it (Gradio 6.31, HTML.__getattr__)
watch('value heading adv'.split(' '), render);
render();
