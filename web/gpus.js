// gpus.js — one card per GPU from GET /gpus: index, name, state, memory and
// utilisation bars, the jobs on it (with their owners, from the jobs the
// page knows) and processes gflow did not start.
import { el, fmtMB, fmtTime, keepFocus } from './util.js';

// A meter; pressure marks a bar nearly full as a warning (memory: a job
// may run out), never utilisation (a busy GPU is what it is for).
function bar(label, value, max, text, pressure) {
  const pct = max > 0 ? Math.max(0, Math.min(100, (100 * value) / max)) : 0;
  const fill = el('div', { class: `bar-fill bar-${label.toLowerCase()}` });
  fill.style.width = `${pct}%`;
  if (pressure && pct >= 95) fill.classList.add('hot');
  else if (pressure && pct >= 85) fill.classList.add('warm');
  return el('div', { class: 'bar-row' },
    el('span', { class: 'bar-label' }, label),
    el('div', {
      class: 'bar', role: 'meter', 'aria-label': `${label}: ${text}`,
      'aria-valuemin': '0', 'aria-valuemax': String(max), 'aria-valuenow': String(value),
    }, fill),
    el('span', { class: 'bar-text' }, text));
}

function fmtAge(secs) {
  if (secs == null) return '';
  if (secs < 60) return `${secs}s`;
  if (secs < 3600) return `${Math.floor(secs / 60)}m`;
  if (secs < 86400) return `${Math.floor(secs / 3600)}h`;
  return `${Math.floor(secs / 86400)}d`;
}

// A process gflow did not start: pid, owner, command, age, memory, and
// whether it keeps the GPU from gflow's jobs.
function foreignItem(f) {
  const who = f.visible === false ? 'in another pid namespace'
    : [f.user, f.command].filter((x) => x).join(' ') || 'unknown';
  const extra = [f.age_secs != null ? `up ${fmtAge(f.age_secs)}` : '', f.used_mb ? fmtMB(f.used_mb) : '']
    .filter((x) => x).join(', ');
  const why = f.blocks ? 'not started by gflow' : `allowed: ${f.exempt || (f.ignored ? 'ignored' : 'does not block')}`;
  return el('li', { class: f.blocks ? 'foreign' : 'muted', 'data-pid': String(f.pid) },
    `pid ${f.pid} — ${who}${extra ? ` (${extra})` : ''} — ${why}`);
}

// "reserved for alice until Tue 16:00 (R3)": whose window holds the GPU.
function reserved(g) {
  const r = g.reservation;
  if (!r) return '';
  const end = new Date(r.end * 1000);
  const soon = r.end - Date.now() / 1000 < 86400 * 6;
  const until = end.toLocaleString([], soon ? { weekday: 'short', hour: '2-digit', minute: '2-digit' }
    : { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
  return el('p', { class: 'gpu-reservation', 'data-testid': 'gpu-reservation', title: `reservation ${r.id}: ${fmtTime(r.start)} to ${fmtTime(r.end)}` },
    `reserved for ${r.user} until ${until}`);
}

function card(g, jobs, onOpen) {
  const list = el('ul', { class: 'gpu-jobs' });
  for (const gj of g.jobs || []) {
    const j = jobs.get(gj.id);
    const who = j && j.user ? ` (${j.user})` : '';
    const b = el('button', { type: 'button', class: 'link', 'data-focus-key': `gpu-${g.index}-job-${gj.id}` },
      `#${gj.id} ${gj.name}${who}`);
    b.addEventListener('click', () => onOpen(gj.id));
    list.append(el('li', {}, b, gj.shared ? el('span', { class: 'muted' }, ` shared, ${fmtMB(gj.gpu_memory_mb)}`) : ''));
  }
  if (g.foreign) {
    for (const f of g.foreign) list.append(foreignItem(f));
  } else {
    for (const pid of g.unmanaged_pids || [])
      list.append(el('li', { class: 'foreign' }, `pid ${pid} — not started by gflow`));
  }
  for (const x of g.escaped || [])
    list.append(el('li', { class: 'foreign' }, `pid ${x.pid} of job #${x.job} — on a GPU it was not given`));
  if (!g.foreign) {
    for (const pid of g.ignored_pids || [])
      list.append(el('li', { class: 'muted' }, `pid ${pid} — ignored`));
  }
  if (!list.childElementCount) list.append(el('li', { class: 'muted' }, 'nothing running'));
  const util = g.util_pct == null ? null : g.util_pct;
  return el('article', { class: `gpu-card state-${g.state}`, 'data-gpu': String(g.index), 'aria-label': `GPU ${g.index}: ${g.state}` },
    el('header', {},
      el('h3', {}, g.mig_index != null ? `GPU ${g.parent_index}:${g.mig_index} (MIG)` : `GPU ${g.index}`),
      el('span', { class: `badge state-${g.state}`, 'data-testid': 'gpu-state' }, g.state)),
    el('p', { class: 'gpu-name' }, g.name || 'unknown model'),
    bar('Memory', g.used_mb || 0, g.total_mb || 0, `${fmtMB(g.used_mb)} / ${fmtMB(g.total_mb)}`, true),
    bar('Utilisation', util || 0, 100, util == null ? 'unknown' : `${util}%`),
    g.state === 'shared' ? el('p', { class: 'gpu-booked', 'data-testid': 'gpu-booked' },
      `${fmtMB(g.booked_mb ?? (g.jobs || []).reduce((a, x) => a + (x.gpu_memory_mb || 0), 0))} / ${fmtMB(g.total_mb)} booked`) : '',
    reserved(g),
    // the foreign processes are listed below; other reasons (down, …) here
    g.reason && !(g.foreign && g.reason.startsWith('unmanaged(')) ? el('p', { class: 'gpu-reason' }, g.reason) : '',
    list);
}

let shown = null;   // what the cards show now: redrawn only when it changes

export function renderGpus(root, info, jobs, onOpen) {
  const owners = (info.gpus || []).flatMap((g) => (g.jobs || []).map((gj) => (jobs.get(gj.id) || {}).user));
  const sig = JSON.stringify([info, owners]);
  if (sig === shown && root.childElementCount) return;
  shown = sig;
  const cards = (info.gpus || []).map((g) => card(g, jobs, onOpen));
  if (!cards.length) cards.push(el('p', { class: 'muted' }, info.status || 'no GPUs'));
  keepFocus(root, () => root.replaceChildren(...cards));
}
