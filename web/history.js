// history.js — the History section: GPUs in use and jobs queued over the
// last 24 hours (the daemon's ring of samples, GET /history) and each user's
// GPU-hours per day over the last 7 days, drawn as inline SVG.
import { el } from './util.js';

const NS = 'http://www.w3.org/2000/svg';
const W = 640, H = 180, L = 44, R = 10, T = 12, B = 26;
const USER_COLOURS = ['#1a73e8', '#e8710a', '#188038', '#a142f4', '#d93025', '#129eaf', '#b06000', '#c5221f'];

function svg(tag, attrs, ...children) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children) if (c != null) e.append(c);
  return e;
}

function frame(label, yMax, yTicks, xTicks) {
  const s = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': label, class: 'plot' },
    svg('title', {}, label));
  const y = (v) => T + (H - T - B) * (1 - v / (yMax || 1));
  for (const v of yTicks) {
    s.append(svg('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), class: 'grid' }));
    s.append(svg('text', { x: L - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'tick' }, String(v)));
  }
  // a label at the right edge ends there (not cut in half)
  for (const [x, text] of xTicks)
    s.append(svg('text', { x, y: H - 8, 'text-anchor': x > W - R - 30 ? 'end' : 'middle', class: 'tick' }, text));
  return { s, y };
}

function niceTicks(max) {
  if (max <= 4) return [...Array(Math.max(1, Math.ceil(max)) + 1).keys()];
  const step = Math.ceil(max / 4);
  return [0, step, 2 * step, 3 * step, 4 * step];
}

// A step line of samples[col] over [now - span, now].
function timePlot(h, col, label, cls, capCol) {
  const i = h.columns.indexOf(col), cap = capCol ? h.columns.indexOf(capCol) : -1;
  const pts = h.samples;
  let max = 1;
  for (const p of pts) max = Math.max(max, p[i], cap >= 0 ? p[cap] : 0);
  const ticks = niceTicks(max);
  max = ticks[ticks.length - 1];
  const x = (t) => L + ((W - L - R) * (t - (h.now - h.span_secs))) / h.span_secs;
  const xt = [];
  for (let k = 0; k <= 4; k++) {
    const t = h.now - h.span_secs + (k * h.span_secs) / 4;
    xt.push([x(t), k === 4 ? 'now' : new Date(t * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })]);
  }
  const last = pts.length ? pts[pts.length - 1] : null;
  const summary = last ? `${label}, last 24 hours: now ${last[i]}${cap >= 0 ? ` of ${last[cap]}` : ''}, at most ${Math.max(...pts.map((p) => p[i]))}`
    : `${label}: no samples yet`;
  const { s, y } = frame(summary, max, ticks, xt);
  if (pts.length) {
    let d = '';
    pts.forEach((p, k) => {
      const px = x(p[0]).toFixed(1), py = y(p[i]).toFixed(1);
      d += k ? `H${px}V${py}` : `M${px},${py}`;
    });
    d += `H${x(h.now).toFixed(1)}`;
    if (cap >= 0) {
      let c = '';
      pts.forEach((p, k) => { c += `${k ? 'L' : 'M'}${x(p[0]).toFixed(1)},${y(p[cap]).toFixed(1)}`; });
      s.append(svg('path', { d: c, class: 'cap' }));
    }
    s.append(svg('path', { d, class: `line ${cls}` }));
  }
  return s;
}

function hoursPlot(h) {
  const gh = h.gpu_hours, users = Object.keys(gh.users).sort();
  const totals = Array.from({ length: gh.days }, (_, d) => users.reduce((a, u) => a + gh.users[u][d], 0));
  const ticks = niceTicks(Math.max(1, ...totals));
  const max = ticks[ticks.length - 1];
  const bw = (W - L - R) / gh.days;
  const xt = [];
  for (let d = 0; d < gh.days; d++) {
    const end = new Date((gh.from + (d + 1) * 86400) * 1000);
    xt.push([L + bw * (d + 0.5), d === gh.days - 1 ? 'last 24 h' : end.toLocaleDateString([], { month: 'short', day: 'numeric' })]);
  }
  const label = users.length
    ? `GPU-hours per user, last 7 days: ${users.map((u) => `${u} ${gh.users[u].reduce((a, b) => a + b, 0).toFixed(1)}`).join(', ')}`
    : 'GPU-hours per user, last 7 days: none';
  const { s, y } = frame(label, max, ticks, xt);
  for (let d = 0; d < gh.days; d++) {
    let base = 0;
    users.forEach((u, k) => {
      const v = gh.users[u][d];
      if (v <= 0) return;
      const r = svg('rect', {
        x: (L + bw * d + bw * 0.15).toFixed(1), width: (bw * 0.7).toFixed(1),
        y: y(base + v).toFixed(1), height: Math.max(0.5, y(base) - y(base + v)).toFixed(1),
        fill: USER_COLOURS[k % USER_COLOURS.length],
      }, svg('title', {}, `${u}: ${v.toFixed(2)} GPU-hours`));
      s.append(r);
      base += v;
    });
  }
  const legend = el('ul', { class: 'legend' });
  users.forEach((u, k) => {
    const sw = el('span', { class: 'swatch', 'aria-hidden': 'true' });
    sw.style.background = USER_COLOURS[k % USER_COLOURS.length];
    legend.append(el('li', {}, sw, u));
  });
  return [s, legend];
}

// Seconds until the daemon's first sample: soon after it starts (2 s, or its
// interval if shorter), then every interval_secs.
export function firstPointIn(h, startedAt) {
  const iv = h.interval_secs || 60;
  let next = (startedAt || h.now) + Math.min(2, iv);
  if (next < h.now) next += Math.ceil((h.now - next) / iv) * iv;
  return Math.max(1, Math.ceil(next - h.now));
}

// startedAt: the daemon's start (GET /info), to say when an empty history
// gets its first point.
export function renderHistory(root, h, startedAt) {
  if (!h.samples.length) {
    root.replaceChildren(el('p', { class: 'muted collecting', 'data-testid': 'history-collecting' },
      `collecting — first point in ${firstPointIn(h, startedAt)} s`));
    return;
  }
  root.replaceChildren(
    el('figure', { 'data-plot': 'gpus' }, el('figcaption', {}, 'GPUs in use (dashed: GPUs)'),
      timePlot(h, 'gpus_used', 'GPUs in use', 'gpus', 'gpus_total')),
    el('figure', { 'data-plot': 'queued' }, el('figcaption', {}, 'Jobs queued'),
      timePlot(h, 'queued', 'Jobs queued', 'queued')),
    el('figure', { 'data-plot': 'hours' }, el('figcaption', {}, 'GPU-hours per user and day'), ...hoursPlot(h)));
}
