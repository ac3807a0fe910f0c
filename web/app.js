// app.js — the dashboard: polls the public API while the tab is visible
// (GPUs and the jobs that are not over every POLL_MS, everything every
// FULL_MS), and wires the GPU cards, the jobs table, the details panel, the
// token form and the theme switch together.
import * as api from './api.js';
import { Detail } from './detail.js';
import { renderGpus } from './gpus.js';
import { firstPointIn, renderHistory } from './history.js';
import { JobTable } from './jobs.js';
import { renderTimeline } from './timeline.js';
import { el } from './util.js';

const POLL_MS = 1500;
const FULL_MS = 30000;
const HISTORY_MS = 30000;
const TIMELINE_MS = 15000;
const FIELDS = 'id,name,user,uid,project,state,st,reason,gpus,gpu_ids,submit_time,start_time,end_time,'
  + 'priority,depends_on,dep_mode,active';
const LIVE = new Set(['Queued', 'Hold', 'Running']);

const $ = (id) => document.getElementById(id);
const jobs = new Map();
let caller = null;          // {uid, admin} of the token, when one is given
let startedAt = null;      // the daemon's start, asked once while the history is empty
let lastTimeline = 0, lastHistory = 0, lastFull = 0, maxSubmit = 0, gpuInfo = { gpus: [] }, busy = false;

function say(msg, bad) {
  const s = $('status');
  s.textContent = msg;
  s.classList.toggle('bad', !!bad);
}

function owns(j) {
  return caller != null && (caller.admin || j.uid === caller.uid);
}

function actions(j) {
  if (!owns(j)) return [];
  const out = [];
  if (LIVE.has(j.state)) out.push({ label: 'Cancel', run: () => cancel([j]) });
  if (j.state === 'Queued') out.push({ label: 'Hold', run: () => act('/jobs/hold', j.id, 'held') });
  if (j.state === 'Hold') out.push({ label: 'Release', run: () => act('/jobs/release', j.id, 'released') });
  return out;
}

async function act(path, ids, what) {
  if (!Array.isArray(ids)) ids = [ids];
  const who = ids.length === 1 ? `Job ${ids[0]}` : `${ids.length} jobs`;
  try {
    const r = await api.post(path, { ids });
    const errs = r.errors || [];
    const deps = (r.dependents || []).length;
    if (errs.length) say(`Job ${errs[0].id ?? ids[0]}: ${errs[0].error}`
      + (errs.length > 1 ? ` (and ${errs.length - 1} more errors)` : ''), true);
    else say(`${who} ${what}${deps ? ` (and ${deps} dependent job${deps > 1 ? 's' : ''})` : ''}.`);
  } catch (e) {
    say(`${who}: ${e.message}`, true);
  }
  await poll(true);
}

// A question in the page (a modal <dialog>): resolves true only when the
// user presses the named button; Escape, Keep or closing it answer no.
function ask(title, what, yes) {
  const d = $('confirm');
  $('confirm-h').textContent = title;
  $('confirm-what').textContent = what;
  $('confirm-yes').textContent = yes;
  d.returnValue = 'no';
  return new Promise((resolve) => {
    d.addEventListener('close', () => resolve(d.returnValue === 'yes'), { once: true });
    d.showModal();
    $('confirm-no').focus();
  });
}

const NAMED = 10;   // jobs named one by one in the question; the rest counted

function jobName(j) {
  return `#${j.id}${j.name ? ` ${j.name}` : ''}${j.user && caller && caller.admin ? ` (${j.user})` : ''}`;
}

async function cancel(list) {
  if (!list.length) return;
  let title, what;
  if (list.length === 1) {
    const j = jobs.get(list[0].id) || list[0];
    title = `Cancel job ${j.id}?`;
    what = `${jobName(j)}${j.state ? `, ${j.state}` : ''}, will be cancelled${j.state === 'Running' ? ' and its processes killed' : ''}.`;
  } else {
    const named = list.slice(0, NAMED).map(jobName).join(', ');
    const running = list.filter((j) => j.state === 'Running').length;
    title = `Cancel ${list.length} jobs?`;
    what = `${named}${list.length > NAMED ? ` and ${list.length - NAMED} more` : ''} will be cancelled`
      + `${running ? ` (${running} running: their processes are killed)` : ''}.`;
  }
  if (!(await ask(title, what, list.length === 1 ? 'Cancel job' : `Cancel ${list.length} jobs`))) {
    say('Nothing cancelled.');
    return;
  }
  await act('/jobs/cancel', list.map((j) => j.id), 'cancelled');
}

// The jobs the filters show that this token may cancel.
function cancellableShown() {
  return table.view.filter((j) => LIVE.has(j.state) && owns(j));
}

const table = new JobTable($('jobs'), {
  onOpen: (id) => detail.open(id),
  actions,
  onCount: (shown, all) => {
    $('job-count').textContent = shown === all ? `${all} jobs` : `${shown} of ${all} jobs`;
    const n = cancellableShown().length, b = $('cancel-shown');
    b.hidden = n < 2;
    b.textContent = `Cancel ${n} shown…`;
    b.setAttribute('aria-label', `Cancel the ${n} live jobs the filters show`);
  },
  onSelect: (ids) => {
    const b = $('cancel-selected');
    b.hidden = ids.size === 0;
    b.textContent = `Cancel ${ids.size} selected…`;
    b.setAttribute('aria-label', `Cancel the ${ids.size} jobs ticked`);
    $('clear-selected').hidden = ids.size === 0;
  },
});
const detail = new Detail($('detail'), { jobs: () => jobs, mayRead: owns, onOpen: (id) => detail.open(id), actions });

function fillSelect(sel, values) {
  const cur = sel.value;
  const opts = [el('option', { value: '' }, 'all'), ...[...values].sort().map((v) => el('option', { value: v }, v || '(none)'))];
  if (sel.options.length === opts.length && [...sel.options].every((o, i) => o.value === opts[i].value)) return;
  sel.replaceChildren(...opts);
  sel.value = cur;
}

function publish() {
  const all = [...jobs.values()];
  table.setJobs(all);
  fillSelect($('f-user'), new Set(all.map((j) => j.user || '')));
  fillSelect($('f-project'), new Set(all.map((j) => j.project || '')));
  renderGpus($('gpus'), gpuInfo, jobs, (id) => detail.open(id));
}

function remember(list) {
  for (const j of list) {
    jobs.set(j.id, j);
    if (j.submit_time > maxSubmit) maxSubmit = j.submit_time;
  }
}

async function poll(force) {
  if (busy || (!force && document.visibilityState === 'hidden')) return;
  busy = true;
  try {
    const now = Date.now();
    if (now - lastFull > FULL_MS) {
      const [all, g] = await Promise.all([api.get(`/jobs?users=all&fields=${FIELDS}`), api.get('/gpus')]);
      jobs.clear();
      remember(all.jobs);
      gpuInfo = g;
      lastFull = now;
    } else {
      const wasLive = [...jobs.values()].filter((j) => LIVE.has(j.state)).map((j) => j.id);
      const [live, fresh, g] = await Promise.all([
        api.getFresh(`/jobs?users=all&active=1&fields=${FIELDS}`),
        api.getFresh(`/jobs?users=all&since=${maxSubmit}&fields=${FIELDS}`),
        api.getFresh('/gpus'),
      ]);
      remember(live.jobs);
      remember(fresh.jobs);
      gpuInfo = g;
      const seen = new Set(live.jobs.map((j) => j.id));
      const over = wasLive.filter((id) => !seen.has(id));
      for (let i = 0; i < over.length; i += 500) {
        const r = await api.get(`/jobs?ids=${over.slice(i, i + 500).join(',')}&fields=${FIELDS}`);
        remember(r.jobs);
      }
    }
    publish();
    if (now - lastTimeline > TIMELINE_MS) {
      lastTimeline = now;
      await loadTimeline();
    }
    if (now - lastHistory > HISTORY_MS) {
      lastHistory = now;
      const h = await api.get('/history');
      if (!h.samples.length) {    // a new daemon: say when, and ask again then
        if (startedAt == null) startedAt = (await api.get('/info')).started_at ?? null;
        const wait = firstPointIn(h, startedAt);
        lastHistory = now - HISTORY_MS + (wait + 1) * 1000;
      }
      renderHistory($('history'), h, startedAt);
    }
    $('updated').textContent = `updated ${new Date().toLocaleTimeString()}`;
    if ($('status').classList.contains('bad') && $('status').dataset.net) say('');
  } catch (e) {
    say(`Cannot reach the daemon: ${e.message}`, true);
    $('status').dataset.net = '1';
  } finally {
    busy = false;
  }
}

async function loadTimeline() {
  const range = $('timeline-range').value;
  renderTimeline($('timeline'), await api.get(`/timeline?range=${encodeURIComponent(range)}`));
}

async function useToken(t) {
  api.setToken(t);
  caller = null;
  if (api.hasToken()) {
    try {
      caller = (await api.get('/info')).caller;
    } catch (e) {
      say(e.message, true);
    }
    if (!caller) {
      api.setToken('');
      say('The daemon does not know this token (gflowd token prints yours).', true);
    }
  }
  $('token-state').textContent = caller ? `acting as uid ${caller.uid}${caller.admin ? ' (admin)' : ''}` : 'read-only';
  $('token-forget').hidden = !caller;
  document.body.classList.toggle('can-act', !!caller);
  table.dirty = true;
  table.schedule();
  if (detail.id != null) detail.open(detail.id);
}

function setupTheme() {
  const saved = localStorage.getItem('gflow-theme');
  if (saved) document.documentElement.dataset.theme = saved;
  const b = $('theme');
  const label = () => {
    const t = document.documentElement.dataset.theme || 'auto';
    b.textContent = `Theme: ${t}`;
  };
  b.addEventListener('click', () => {
    const order = ['auto', 'light', 'dark'];
    const cur = document.documentElement.dataset.theme || 'auto';
    const next = order[(order.indexOf(cur) + 1) % order.length];
    if (next === 'auto') delete document.documentElement.dataset.theme;
    else document.documentElement.dataset.theme = next;
    localStorage.setItem('gflow-theme', next === 'auto' ? '' : next);
    label();
  });
  label();
}

function setup() {
  setupTheme();
  $('token-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const input = $('token');
    const t = input.value;
    input.value = '';
    useToken(t);
  });
  $('token-forget').addEventListener('click', () => useToken(''));
  $('cancel-shown').addEventListener('click', () => cancel(cancellableShown()));
  $('cancel-selected').addEventListener('click', async () => {
    const list = [...table.selected].map((id) => jobs.get(id)).filter((j) => j && LIVE.has(j.state) && owns(j));
    await cancel(list);
    if ($('status').textContent !== 'Nothing cancelled.') table.clearSelection();
  });
  $('clear-selected').addEventListener('click', () => table.clearSelection());
  $('timeline-range').addEventListener('change', () => {
    lastTimeline = Date.now();
    loadTimeline().catch((e) => say(`Timeline: ${e.message}`, true));
  });
  for (const [id, key] of [['f-user', 'user'], ['f-state', 'state'], ['f-project', 'project'], ['f-name', 'name']]) {
    $(id).addEventListener('input', () => table.setFilter({ [key]: $(id).value }));
  }
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && detail.id != null && !$('confirm').open) detail.close();
  });
  document.addEventListener('visibilitychange', () => poll());
  useToken(sessionStorage.getItem('gflow-token') || '').then(() => poll(true));
  setInterval(poll, POLL_MS);
  setInterval(() => table.schedule(), 1000);   // run times tick
}

setup();
