// jobs.js — the jobs table: gqueue's columns, filters (user, state, project,
// name), sorting, a box to tick on each job the page may cancel (several
// cancelled at once), and virtual rows (only the rows in view are in the
// document, so 10,000 jobs scroll as fast as 10).
import { el, fmtDuration, keepFocus, runTime } from './util.js';

const ROW_H = 34;   // px; matches .jt-row in style.css
const OVERSCAN = 8;

const COLUMNS = [
  { key: 'id', label: 'JOBID', sort: (j) => j.id },
  { key: 'name', label: 'NAME', sort: (j) => j.name || '' },
  { key: 'user', label: 'USER', sort: (j) => j.user || '' },
  { key: 'project', label: 'PROJECT', sort: (j) => j.project || '' },
  { key: 'st', label: 'ST', sort: (j) => j.st || '' },
  { key: 'time', label: 'TIME', sort: (j, now) => runTime(j, now) ?? -1 },
  { key: 'gpus', label: 'NODES', sort: (j) => j.gpus || 0 },
  { key: 'nodelist', label: 'NODELIST(REASON)', sort: (j) => nodelist(j) },
];

function nodelist(j) {
  if (j.state === 'Running') return (j.gpu_ids || []).join(',') || '—';
  return j.reason ? `(${j.reason})` : '';
}

function cellText(c, j, now) {
  switch (c.key) {
    case 'time': return fmtDuration(runTime(j, now)) || '0:00';   // not started: as gqueue
    case 'nodelist': return nodelist(j);
    case 'project': return j.project || '';
    default: return j[c.key] == null ? '' : String(j[c.key]);
  }
}

export class JobTable {
  // actions(job) → [{label, run}] (empty when the page may not act on it)
  // onSelect(ids): the rows ticked changed (a Set of job ids; only jobs the
  // page may cancel have a box).
  constructor(root, { onOpen, actions, onCount, onSelect }) {
    this.onOpen = onOpen;
    this.actions = actions;
    this.onCount = onCount;
    this.onSelect = onSelect;
    this.selected = new Set();
    this.all = [];
    this.view = [];
    this.filter = { user: '', state: '', project: '', name: '' };
    this.sortKey = 'id';
    this.sortDir = 1;
    this.dirty = true;

    this.head = el('div', { class: 'jt-row jt-head', role: 'row' });
    for (const c of COLUMNS) {
      const b = el('button', { type: 'button', class: 'jt-sort', 'data-key': c.key }, c.label);
      b.addEventListener('click', () => this.sortBy(c.key));
      this.head.append(el('div', { class: `jt-cell c-${c.key}`, role: 'columnheader', 'aria-sort': 'none' }, b));
    }
    this.head.append(el('div', { class: 'jt-cell c-act', role: 'columnheader' }, el('span', { class: 'sr-only' }, 'Actions')));
    this.spacer = el('div', { class: 'jt-spacer', role: 'rowgroup' });
    // One scrolling box; the header row sticks to its top.
    this.table = this.body = el('div', {
      class: 'jt jt-body', role: 'table', tabindex: '0', 'aria-label': 'Jobs', 'aria-rowcount': '0',
    }, el('div', { class: 'jt-headgroup', role: 'rowgroup' }, this.head), this.spacer);
    root.replaceChildren(this.table);
    this.body.addEventListener('scroll', () => this.schedule());
    new ResizeObserver(() => this.schedule()).observe(this.body);
    this.markSort();
  }

  setJobs(jobs) {
    this.all = jobs;
    if (this.selected.size) {   // a ticked job that can no longer be cancelled is let go
      const byId = new Map(jobs.map((j) => [j.id, j]));
      let changed = false;
      for (const id of this.selected) {
        const j = byId.get(id);
        if (!j || !this.actions(j).some((a) => a.label === 'Cancel')) {
          this.selected.delete(id);
          changed = true;
        }
      }
      if (changed && this.onSelect) this.onSelect(this.selected);
    }
    this.dirty = true;
    this.schedule();
  }

  setFilter(f) {
    Object.assign(this.filter, f);
    this.dirty = true;
    this.schedule();
  }

  sortBy(key) {
    this.sortDir = this.sortKey === key ? -this.sortDir : 1;
    this.sortKey = key;
    this.markSort();
    this.dirty = true;
    this.schedule();
  }

  markSort() {
    for (const h of this.head.querySelectorAll('[role=columnheader]')) {
      const b = h.querySelector('.jt-sort');
      h.setAttribute('aria-sort', b && b.dataset.key === this.sortKey
        ? (this.sortDir > 0 ? 'ascending' : 'descending') : 'none');
    }
  }

  schedule() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => { this.pending = false; this.render(); });
  }

  refilter(now) {
    const f = this.filter;
    const name = f.name.toLowerCase();
    const col = COLUMNS.find((c) => c.key === this.sortKey);
    this.view = this.all.filter((j) => (!f.user || j.user === f.user) && (!f.state || j.state === f.state)
      && (!f.project || (j.project || '') === f.project) && (!name || (j.name || '').toLowerCase().includes(name)));
    const keyed = this.view.map((j) => [col.sort(j, now), j]);
    const dir = this.sortDir;
    keyed.sort((a, b) => (a[0] < b[0] ? -dir : a[0] > b[0] ? dir : a[1].id - b[1].id));
    this.view = keyed.map((x) => x[1]);
    this.table.setAttribute('aria-rowcount', String(this.view.length + 1));
    this.spacer.style.height = `${this.view.length * ROW_H}px`;
    if (this.onCount) this.onCount(this.view.length, this.all.length);
  }

  render() {
    const now = Date.now() / 1000;
    if (this.dirty) {
      this.dirty = false;
      this.refilter(now);
    }
    const top = Math.max(0, this.body.scrollTop - ROW_H), h = this.body.clientHeight || 600;
    const first = Math.max(0, Math.floor(top / ROW_H) - OVERSCAN);
    const last = Math.min(this.view.length, Math.ceil((top + h) / ROW_H) + OVERSCAN);
    // Rows stay the same elements while their job is in view, changed in
    // place: a click or the focus is never lost to a live update.
    const cache = this.rows || new Map(), next = new Map(), rows = [];
    for (let i = first; i < last; i++) {
      const j = this.view[i];
      const r = cache.get(j.id) || this.newRow(j.id);
      this.fill(r, j, i, now);
      next.set(j.id, r);
      rows.push(r.el);
    }
    this.rows = next;
    const cur = this.spacer.children;
    if (cur.length !== rows.length || rows.some((r, k) => cur[k] !== r))
      keepFocus(this.spacer, () => this.spacer.replaceChildren(...rows));
  }

  newRow(id) {
    const r = { el: el('div', { role: 'row', 'data-job': String(id) }), cells: [], act: null, actSig: null, idx: -1 };
    for (const c of COLUMNS) {
      if (c.key === 'id') {
        const b = el('button', {
          type: 'button', class: 'link', 'aria-label': `Job ${id} details`, 'data-focus-key': `id-${id}`,
        });
        b.addEventListener('click', () => this.onOpen(id));
        r.el.append(el('div', { class: 'jt-cell c-id', role: 'cell' }, b));
        r.cells.push(b);
      } else {
        const cell = el('div', { class: `jt-cell c-${c.key}`, role: 'cell' });
        r.el.append(cell);
        r.cells.push(cell);
      }
    }
    r.act = el('div', { class: 'jt-cell c-act', role: 'cell' });
    r.el.append(r.act);
    return r;
  }

  fill(r, j, i, now) {
    const cls = `jt-row st-${j.st}${i % 2 ? ' odd' : ''}`;
    if (r.el.className !== cls) r.el.className = cls;
    if (r.idx !== i) {
      r.idx = i;
      r.el.style.transform = `translateY(${i * ROW_H}px)`;
      r.el.setAttribute('aria-rowindex', String(i + 2));
    }
    COLUMNS.forEach((c, k) => {
      const t = cellText(c, j, now);
      if (r.cells[k].textContent !== t) {
        r.cells[k].textContent = t;
        if (c.key !== 'id') r.cells[k].title = t;
      }
    });
    const acts = this.actions(j);
    const selectable = acts.some((a) => a.label === 'Cancel');
    const sig = `${selectable ? 'select,' : ''}${acts.map((a) => a.label).join(',')}`;
    if (sig !== r.actSig) {
      r.actSig = sig;
      const id = j.id;
      r.sel = null;
      if (selectable) {
        r.sel = el('input', {
          type: 'checkbox', class: 'jt-select', 'aria-label': `Select job ${id}`, 'data-focus-key': `select-${id}`,
        });
        r.sel.addEventListener('change', (e) => this.select(id, e.target.checked));
      }
      keepFocus(r.act, () => r.act.replaceChildren(...(r.sel ? [r.sel] : []), ...acts.map((a) => {
        const b = el('button', {
          type: 'button', class: `act act-${a.label.toLowerCase()}`, 'aria-label': `${a.label} job ${id}`,
          'data-focus-key': `${a.label}-${id}`,
        }, a.label);
        b.addEventListener('click', () => this.actions(this.jobOf(id)).find((x) => x.label === a.label)?.run());
        return b;
      })));
    }
    if (r.sel && r.sel.checked !== this.selected.has(j.id)) r.sel.checked = this.selected.has(j.id);
  }

  select(id, on) {
    if (on) this.selected.add(id);
    else this.selected.delete(id);
    if (this.onSelect) this.onSelect(this.selected);
  }

  clearSelection() {
    this.selected.clear();
    for (const r of (this.rows || new Map()).values()) if (r.sel) r.sel.checked = false;
    if (this.onSelect) this.onSelect(this.selected);
  }

  jobOf(id) {
    return this.all.find((j) => j.id === id) || { id };
  }
}
