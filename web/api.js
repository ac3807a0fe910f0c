// api.js — the daemon's public JSON API (docs/api.md) as the page uses it.
// The token a user pastes is kept in this tab's sessionStorage and sent only
// in the Authorization header of requests to this origin, never in a URL.
const KEY = 'gflow-token';
let token = sessionStorage.getItem(KEY) || '';
const kept = new Map();   // path -> { etag, body } (getFresh)

export function hasToken() {
  return token !== '';
}

export function setToken(t) {
  token = t.trim();
  kept.clear();
  if (token) sessionStorage.setItem(KEY, token);
  else sessionStorage.removeItem(KEY);
}

function headers(extra) {
  const h = Object.assign({ Accept: 'application/json' }, extra);
  if (token) h.Authorization = `Bearer ${token}`;
  return h;
}

async function errorOf(r) {
  try {
    const body = await r.json();
    if (body && body.error) return new Error(body.error);
  } catch (_) { /* not JSON */ }
  return new Error(`${r.status} ${r.statusText}`);
}

export async function get(path) {
  const r = await fetch(path, { headers: headers(), cache: 'no-store' });
  if (!r.ok) throw await errorOf(r);
  return r.json();
}

// GET with If-None-Match: the daemon tags some answers (GET /jobs?active=1,
// GET /gpus) with an ETag of their bytes; an unchanged one is a 304 with no
// body, and the answer kept from last time is returned again (same object).
export async function getFresh(path) {
  const k = kept.get(path);
  const r = await fetch(path, { headers: headers(k ? { 'If-None-Match': k.etag } : {}), cache: 'no-store' });
  if (r.status === 304 && k) {
    kept.delete(path);    // the most recently used last
    kept.set(path, k);
    return k.body;
  }
  if (!r.ok) throw await errorOf(r);
  const body = await r.json(), etag = r.headers.get('ETag');
  kept.delete(path);
  if (etag) kept.set(path, { etag, body });
  while (kept.size > 8) kept.delete(kept.keys().next().value);   // the oldest (a since= moved on)
  return body;
}

// A job's log tail: { text, size } (the owner's or an admin's only).
export async function logTail(id, bytes) {
  const r = await fetch(`/jobs/${id}/log?tail=${bytes}`, { headers: headers(), cache: 'no-store' });
  if (!r.ok) throw await errorOf(r);
  return { text: await r.text(), size: Number(r.headers.get('X-Gflow-Log-Size') || 0) };
}

export async function post(path, body) {
  const r = await fetch(path, {
    method: 'POST',
    headers: headers({ 'Content-Type': 'application/json' }),
    body: JSON.stringify(body),
  });
  if (!r.ok) throw await errorOf(r);
  return r.json();
}
