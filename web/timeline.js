// timeline.js — the Timeline section: a Gantt view of GET /timeline, one row
// per GPU from now to now + range: the running jobs until their limits (or
// their estimated end), the reservations and the expected starts of the
// waiting jobs, the current time marked. SVG built with DOM calls only:
// names and users are set as text, never parsed as markup.
import { el } from './util.js';

const NS = 'http://www.w3.org/2000/svg';
const W = 1000, L = 64, R = 12, T = 26, ROW = 28, B = 8;
export const RANGES = [['12h', 12 * 3600], ['48h', 48 * 3600], ['7d', 7 * 86400]];
const KINDS = [
  ['running', 'running (until its limit)'],
  ['estimated', 'running (no limit: until its estimated end)'],
  ['reservation', 'reservation'],
  ['expected', 'waiting: expected start'],
];

function svg(tag, attrs, ...children) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children) if (c != null) e.append(c);
  return e;
}

function when(t) {
  return new Date(t * 1000).toLocaleString([], { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

// The hover text of a segment (a <title>: plain text).
export function segText(s) {
  const end = s.end == null ? 'no end known' : when(s.end);
  if (s.kind === 'reservation')
    return `Reservation ${s.id} for ${s.user}: ${when(s.start)} – ${end} (${s.status})`;
  const what = s.kind === 'expected' ? 'expected to start' : 'running since';
  return `Job ${s.id} ${s.name || ''} (${s.user}), ${s.state}: ${what} ${when(s.start)}, `
    + `${s.kind === 'expected' ? 'expected end' : s.estimated ? 'estimated end' : 'until'} ${end}`;
}

// Hour ticks every 1, 4 or 24 hours on local whole hours (a multiple of
// the step, so a local midnight is one): [epoch, label, major]; a midnight
// is labelled with its day.
function ticks(from, to) {
  const span = to - from;
  const stepH = span <= 13 * 3600 ? 1 : span <= 49 * 3600 ? 4 : 24;
  const out = [];
  const d = new Date(from * 1000);
  d.setMinutes(0, 0, 0);
  d.setHours(Math.floor(d.getHours() / stepH) * stepH);
  for (; d.getTime() / 1000 <= to; d.setHours(d.getHours() + stepH)) {
    const t = d.getTime() / 1000;
    if (t < from) continue;
    const midnight = d.getHours() === 0;
    const label = midnight ? d.toLocaleDateString([], { weekday: 'short', day: 'numeric' })
      : d.toLocaleTimeString([], { hour: 'numeric' });
    out.push([t, label, midnight]);
  }
  return out;
}

export function renderTimeline(root, tl) {
  const from = tl.now, to = tl.to, gpus = tl.gpus || [];
  if (!gpus.length) {
    root.replaceChildren(el('p', { class: 'muted' }, 'No GPUs: nothing to draw.'));
    return;
  }
  const H = T + ROW * Math.max(1, gpus.length) + B;
  const x = (t) => L + ((W - L - R) * (Math.min(Math.max(t, from), to) - from)) / (to - from);
  const nseg = gpus.reduce((a, g) => a + g.segments.length, 0);
  const s = svg('svg', {
    viewBox: `0 0 ${W} ${H}`, role: 'img', class: 'plot gantt', 'data-testid': 'timeline-svg',
    'aria-label': `Timeline of ${gpus.length} GPUs, next ${Math.round((to - from) / 3600)} hours: ${nseg} bars`,
  });
  let free = L + 30;   // labels do not overlap (nor the "now" label)
  for (const [t, label, major] of ticks(from, to)) {
    s.append(svg('line', { x1: x(t), x2: x(t), y1: T - 4, y2: H - B, class: major ? 'grid major' : 'grid' }));
    const half = label.length * 3.6;
    if (x(t) - half < free || x(t) + half > W) continue;
    s.append(svg('text', { x: x(t), y: T - 8, 'text-anchor': 'middle', class: major ? 'tick day' : 'tick' }, label));
    free = x(t) + half + 8;
  }
  gpus.forEach((g, k) => {
    const y = T + ROW * k;
    const row = svg('g', { 'data-gpu-row': String(g.index), class: 'gantt-row' });
    row.append(svg('rect', { x: L, y, width: W - L - R, height: ROW, class: k % 2 ? 'lane alt' : 'lane' }));
    row.append(svg('text', { x: L - 8, y: y + ROW / 2 + 5, 'text-anchor': 'end', class: 'tick' }, `GPU ${g.index}`));
    for (const seg of g.segments) {
      const kind = seg.kind === 'running' && seg.estimated ? 'estimated' : seg.kind;
      const x0 = x(seg.start), x1 = seg.end == null ? x(to) : x(seg.end);
      const pad = seg.kind === 'reservation' ? 2 : seg.kind === 'expected' ? 8 : 5;
      const bar = svg('g', { class: `seg seg-${kind}`, 'data-kind': seg.kind, 'data-id': String(seg.id) },
        svg('title', {}, segText(seg)),
        svg('rect', { x: x0.toFixed(1), y: y + pad, width: Math.max(2, x1 - x0).toFixed(1), height: ROW - 2 * pad, rx: 3 }));
      if (x1 - x0 > 60 && seg.kind !== 'reservation') {
        const t = svg('text', { x: (x0 + 4).toFixed(1), y: y + ROW / 2 + 4, class: 'seg-label' },
          `${seg.id} ${seg.name || ''}`.slice(0, Math.floor((x1 - x0 - 8) / 7)));
        bar.append(t);
      }
      row.append(bar);
    }
    s.append(row);
  });
  s.append(svg('line', { x1: L, x2: L, y1: T - 14, y2: H - B, class: 'now', 'data-testid': 'timeline-now' },
    svg('title', {}, `now: ${when(from)}`)));
  s.append(svg('text', { x: L + 3, y: 10, class: 'tick now-label' }, 'now'));

  const legend = el('ul', { class: 'legend gantt-legend' });
  for (const [k, label] of KINDS)
    legend.append(el('li', {}, el('span', { class: `swatch sw-${k}`, 'aria-hidden': 'true' }), label));
  const parts = [s, legend];
  if (tl.unplaced_count) {
    const names = tl.unplaced.slice(0, 5).map((u) => `${u.id} ${u.name || ''} (${u.note})`).join('; ');
    parts.push(el('p', { class: 'muted', 'data-testid': 'timeline-unplaced' },
      `${tl.unplaced_count} waiting job${tl.unplaced_count > 1 ? 's' : ''} without an expected start: ${names}`
      + `${tl.unplaced_count > 5 ? ' …' : ''}`));
  }
  root.replaceChildren(...parts);
}
