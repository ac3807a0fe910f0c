// app.js — the dashboard: polls the public API while the tab is visible
// (GPUs and the jobs that are not over every POLL_MS, everything every
// FULL_MS), and wires the GPU cards, the jobs table, the details panel, the
// token form and the theme switch together.
import * as api from './api.js';
import { Detail } from './detail.js';
import { renderGpus } from './gpus.js';
import { renderHistory } from './history.js';
import { JobTable } from './jobs.js';
import { el } from './util.js';

const POLL_MS = 1500;
const FULL_MS = 30000;
const HISTORY_MS = 30000;
const FIELDS = 'id,name,user,uid,project,state,st,reason,gpus,gpu_ids,submit_time,start_time,end_time,'
  + 'priority,depends_on,dep_mode,active';
const LIVE = new Set(['Queued', 'Hold', 'Running']);

const $ = (id) => document.getElementById(id);
const jobs = new Map();
let caller = null;          // {uid, admin} of the token, when one is given
let lastHistory = 0, lastFull = 0, maxSubmit = 0, gpuInfo = { gpus: [] }, busy = false;

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
  if (LIVE.has(j.state)) out.push({ label: 'Cancel', run: () => act('/jobs/cancel', j.id, 'cancelled') });
  if (j.state === 'Queued') out.push({ label: 'Hold', run: () => act('/jobs/hold', j.id, 'held') });
  if (j.state === 'Hold') out.push({ label: 'Release', run: () => act('/jobs/release', j.id, 'released') });
  return out;
}

async function act(path, id, what) {
  try {
    const r = await api.post(path, { ids: [id] });
    const errs = r.errors || [];
    if (errs.length) say(`Job ${id}: ${errs[0].error}`, true);
    else say(`Job ${id} ${what}.`);
  } catch (e) {
    say(`Job ${id}: ${e.message}`, true);
  }
  await poll(true);
}

const table = new JobTable($('jobs'), {
  onOpen: (id) => detail.open(id),
  actions,
  onCount: (shown, all) => { $('job-count').textContent = shown === all ? `${all} jobs` : `${shown} of ${all} jobs`; },
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
        api.get(`/jobs?users=all&active=1&fields=${FIELDS}`),
        api.get(`/jobs?users=all&since=${maxSubmit}&fields=${FIELDS}`),
        api.get('/gpus'),
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
    if (now - lastHistory > HISTORY_MS) {
      lastHistory = now;
      renderHistory($('history'), await api.get('/history'));
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
  for (const [id, key] of [['f-user', 'user'], ['f-state', 'state'], ['f-project', 'project'], ['f-name', 'name']]) {
    $(id).addEventListener('input', () => table.setFilter({ [key]: $(id).value }));
  }
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && detail.id != null) detail.close();
  });
  document.addEventListener('visibilitychange', () => poll());
  useToken(sessionStorage.getItem('gflow-token') || '').then(() => poll(true));
  setInterval(poll, POLL_MS);
  setInterval(() => table.schedule(), 1000);   // run times tick
}

setup();
