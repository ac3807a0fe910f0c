// detail.js — one job's details (as gjob show), its dependencies, and its
// log tail following live while the job runs.
import * as api from './api.js';
import { el, fmtDuration, fmtTime, runTime } from './util.js';

const LOG_BYTES = 65536;
const SHOWN = [
  ['id', 'JobId'], ['name', 'Name'], ['user', 'User'], ['project', 'Project'], ['state', 'State'],
  ['reason', 'Reason'], ['reason_detail', 'ReasonDetail'], ['expected_start', 'ExpectedStart'], ['command', 'Command'], ['cwd', 'WorkDir'], ['gpus', 'GPUs'], ['gpu_ids', 'GPUIDs'],
  ['shared', 'Shared'], ['gpu_memory_mb', 'GPUMemoryMB'], ['memory_mb', 'MemoryMB'],
  ['time_limit_secs', 'TimeLimitSecs'], ['priority', 'Priority'], ['submit_time', 'SubmitTime'],
  ['start_time', 'StartTime'], ['end_time', 'EndTime'], ['exit_code', 'ExitCode'], ['exit_signal', 'ExitSignal'],
  ['attempt', 'Attempt'], ['max_retries', 'MaxRetries'], ['retry_of', 'RetryOf'], ['redo_of', 'RedoOf'],
  ['preempt', 'Preemptible'], ['interactive', 'Interactive'], ['idle_secs', 'IdleFor'], ['log_path', 'Log'],
];

// "in 1h 5m", "in 40 s", "now": how far ahead an epoch is.
function fromNow(epoch, now) {
  const s = Math.round(epoch - now);
  if (s <= 0) return 'now';
  if (s < 60) return `in ${s} s`;
  const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
  return `in ${[d ? `${d}d` : '', h ? `${h}h` : '', !d && m ? `${m}m` : ''].filter((x) => x).join(' ') || '1m'}`;
}

// ExpectedStart as gjob show says it: when, on which GPUs; "unknown (why)".
function expected(job) {
  const note = job.expected_start_note;
  if (job.expected_start == null) return `unknown (${note || 'no estimate'})`;
  const gpus = job.expected_gpus && job.expected_gpus.length ? ` on GPU${job.expected_gpus.length > 1 ? 's' : ''} ${job.expected_gpus.join(',')}` : '';
  return `${fmtTime(job.expected_start)} (${fromNow(job.expected_start, Date.now() / 1000)})${gpus}${note ? ` — ${note}` : ''}`;
}

const SIGNALS = { 1: 'HUP', 2: 'INT', 3: 'QUIT', 9: 'KILL', 10: 'USR1', 12: 'USR2', 14: 'ALRM', 15: 'TERM', 24: 'XCPU', 30: 'PWR' };

// gbatch --preemptible, as gjob show says it: "yes, requeue, TERM@60, requeues 2".
function preemption(p) {
  if (!p) return 'no';
  const parts = [p.preemptible ? 'yes' : 'no', p.mode, `${SIGNALS[p.signal] || p.signal}@${p.secs}`,
    `requeues ${p.requeues}`];
  if (p.since) parts.push(`being preempted (${p.action || 'requeue'})`);
  return parts.join(', ');
}

// gjob show's IdleFor=h:mm:ss
function hms(secs) {
  const s = Math.floor(secs), pad = (x) => String(x).padStart(2, '0');
  return `${Math.floor(s / 3600)}:${pad(Math.floor((s % 3600) / 60))}:${pad(s % 60)}`;
}

function value(k, v, job) {
  if (k === 'expected_start') return expected(job);
  if (k === 'preempt') return preemption(v);
  if (k === 'interactive') return v ? 'yes (a galloc session)' : 'no';
  // [gpu.idle_reclaim]: how long its GPUs have been idle, and whether it was warned
  if (k === 'idle_secs') return v == null ? '—' : `${hms(v)}${job.idle_warned ? ' (warned)' : ''}`;
  if (v == null || (Array.isArray(v) && !v.length)) return '—';
  if (k.endsWith('_time')) return fmtTime(v);
  if (k === 'command') return v.map((a) => (typeof a === 'string' ? a : '<bytes>')).join(' ');
  if (Array.isArray(v)) return v.join(',');
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

export class Detail {
  // mayRead(job) → whether the page may ask for its log (owner or admin)
  constructor(root, { jobs, mayRead, onOpen, actions }) {
    this.root = root;
    this.jobs = jobs;
    this.mayRead = mayRead;
    this.onOpen = onOpen;
    this.actions = actions;
    this.id = null;
    this.timer = null;
  }

  async open(id) {
    this.close();
    this.id = id;
    this.root.hidden = false;
    this.root.parentElement.classList.add('detail-open');
    await this.refresh();
    const h = this.root.querySelector('h2');
    if (h) h.focus();
  }

  close() {
    clearTimeout(this.timer);
    this.timer = null;
    this.id = null;
    this.pre = null;
    this.actLabels = null;
    this.root.hidden = true;
    this.root.parentElement.classList.remove('detail-open');
    this.root.replaceChildren();
  }

  skeleton(id) {
    const close = el('button', { type: 'button', class: 'close', 'aria-label': 'Close details' }, '×');
    close.addEventListener('click', () => this.close());
    this.title = el('h2', { tabindex: '-1' });
    this.acts = el('div', { class: 'detail-actions' });
    this.dl = el('dl', { class: 'kv' });
    this.depsHead = el('h3', {});
    this.deps = el('ul', { class: 'deps' });
    this.logHead = el('h3', {}, 'Log');
    this.pre = el('pre', { class: 'log', tabindex: '0', 'aria-label': `Log of job ${id}` });
    this.root.replaceChildren(el('div', { class: 'detail-top' }, el('div', { class: 'detail-head' }, this.title, close), this.acts), this.dl,
      this.depsHead, this.deps, this.logHead, this.pre);
  }

  async refresh() {
    const id = this.id;
    if (id == null) return;
    clearTimeout(this.timer);
    let job;
    try {
      job = (await api.get(`/jobs/${id}`)).job;
    } catch (e) {
      this.pre = null;
      this.actLabels = null;
      this.root.replaceChildren(el('p', { role: 'alert' }, e.message));
      return;
    }
    if (this.id !== id) return;
    const wasAtBottom = !this.pre || this.pre.scrollTop + this.pre.clientHeight >= this.pre.scrollHeight - 4;
    const dl = el('dl');
    for (const [k, label] of SHOWN)
      if (k in job) dl.append(el('dt', {}, label), el('dd', { 'data-key': k }, value(k, job[k], job)));
    if (job.start_time) dl.append(el('dt', {}, 'RunTime'), el('dd', {}, fmtDuration(runTime(job, Date.now() / 1000))));

    const deps = el('ul');
    for (const d of job.depends_on || []) {
      const p = this.jobs().get(d);
      const b = el('button', { type: 'button', class: 'link' }, `#${d}`);
      b.addEventListener('click', () => this.onOpen(d));
      deps.append(el('li', {}, b, ` ${p ? `${p.name} — ${p.state}` : ''}`));
    }
    if (!deps.childElementCount) deps.append(el('li', { class: 'muted' }, 'none'));

    if (!this.pre) this.skeleton(id);
    this.title.textContent = `Job ${id}: ${job.name}`;
    this.depsHead.textContent = `Dependencies${job.dep_mode === 'any' ? ' (any)' : ''}`;
    this.dl.replaceChildren(...dl.childNodes);
    this.deps.replaceChildren(...deps.childNodes);
    const acts = this.actions(job);
    const labels = acts.map((a) => a.label).join(',');
    if (labels !== this.actLabels) {
      this.actLabels = labels;
      this.acts.replaceChildren(...acts.map((a) => {
        const b = el('button', { type: 'button', class: `act act-${a.label.toLowerCase()}` }, a.label);
        b.addEventListener('click', async () => { await this.actions(this.job).find((x) => x.label === a.label)?.run(); this.refresh(); });
        return b;
      }));
    }
    this.job = job;
    const logHead = this.logHead;
    const ended = !['Queued', 'Hold', 'Running'].includes(job.state);
    if (!this.mayRead(job)) {
      this.pre.textContent = 'Only its owner or an admin may read this log: paste your token above.';
    } else if (job.state === 'Queued' || job.state === 'Hold') {
      this.pre.textContent = 'No log yet: the job has not started.';
    } else {
      try {
        const t = await api.logTail(id, LOG_BYTES);
        if (this.id !== id) return;
        logHead.textContent = t.size > LOG_BYTES ? `Log (last ${LOG_BYTES / 1024} KiB of ${Math.round(t.size / 1024)} KiB)` : 'Log';
        this.pre.textContent = t.text || '(empty)';
        if (wasAtBottom) this.pre.scrollTop = this.pre.scrollHeight;
      } catch (e) {
        this.pre.textContent = e.message;
      }
    }
    if (!ended || job.active) this.timer = setTimeout(() => this.refresh(), 2000);
  }
}
