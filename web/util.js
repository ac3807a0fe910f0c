// util.js — small DOM and formatting helpers shared by the page's modules.

// el('div', {class: 'x', 'aria-label': 'y'}, child, 'text', ...)
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v != null) e.setAttribute(k, v);
  for (const c of children) if (c !== '' && c != null) e.append(c);
  return e;
}

export function fmtMB(mb) {
  if (mb == null) return '—';
  if (mb >= 1024) return `${(mb / 1024).toFixed(mb >= 10240 ? 0 : 1)}G`;
  return `${mb}M`;
}

// H:MM:SS or D-HH:MM:SS, as gqueue shows a run time.
export function fmtDuration(secs) {
  if (secs == null || !isFinite(secs) || secs < 0) return '';
  secs = Math.floor(secs);
  const d = Math.floor(secs / 86400), h = Math.floor((secs % 86400) / 3600);
  const m = Math.floor((secs % 3600) / 60), s = secs % 60;
  const mmss = `${String(m).padStart(2, '0')}:${String(s).padStart(2, '0')}`;
  return d ? `${d}-${String(h).padStart(2, '0')}:${mmss}` : `${h}:${mmss}`;
}

export function fmtTime(epoch) {
  if (!epoch) return '—';
  return new Date(epoch * 1000).toLocaleString();
}

// The run time of a job now (as gqueue's TIME column).
export function runTime(j, now) {
  if (!j.start_time) return null;
  return (j.end_time || now) - j.start_time;
}

// Re-render inside root with fn() without losing keyboard focus: the
// element that had it is found again by its data-focus-key and focused.
export function keepFocus(root, fn) {
  const a = document.activeElement;
  const key = a && root.contains(a) ? a.getAttribute('data-focus-key') : null;
  fn();
  if (key) {
    const again = root.querySelector(`[data-focus-key="${CSS.escape(key)}"]`);
    if (again) again.focus({ preventScroll: true });
  }
}
