/* deps.c — the dependents index (each job keeps the ids of the jobs that
 * list it in depends_on), sets and lists of ids, and the cascade queue's
 * data: what is queued, who waits for it, and how a rollback puts it back.
 * Working through the queue is the engine's (engine/cascade.c). */
#include "server.h"

#include <stdlib.h>
#include <string.h>

#include "deps.h"
#include "grow.h"

/* ---- the dependents index --------------------------------------------- */

/* Does c list parent in its depends_on? */
bool cascade_lists(const struct job *c, int64_t parent)
{
	for (size_t k = 0; k < c->ndeps; k++)
		if (c->deps[k] == parent)
			return true;
	return false;
}

void cascade_add_dependent(struct job *p, int64_t id)
{
	struct job_ids *d = p->dependents;

	if (d && d->n && d->id[d->n - 1] == id)
		return;
	if (!d || d->n == d->cap) {
		uint32_t cap = d ? d->cap * 2 : 4;

		if (cap < 4 || !(d = realloc(d, sizeof *d + cap * sizeof *d->id)))
			abort();
		if (!p->dependents)
			d->n = 0;
		d->cap = cap;
		p->dependents = d;
	}
	d->id[d->n++] = id;
}

/* List c under each of its parents. Entries are never removed (a rollback
 * or an edit may leave some that no longer hold): readers check
 * cascade_lists(). */
void cascade_index_deps(struct server *s, const struct job *c)
{
	for (size_t k = 0; k < c->ndeps; k++) {
		struct job *p = jobs_get(s, c->deps[k]);

		if (p)
			cascade_add_dependent(p, c->id);
	}
}

/* A set of job ids, one bit each. */
uint8_t *idset_new(struct server *s)
{
	uint8_t *v = calloc((size_t)s->max_id / 8 + 1, 1);

	if (!v)
		abort();
	return v;
}

/* Adds id; false when it was there already (or is not a job id). */
bool idset_add(struct server *s, uint8_t *v, int64_t id)
{
	if (id <= 0 || id > s->max_id || (v[id / 8] & (1u << (id % 8))))
		return false;
	v[id / 8] |= (uint8_t)(1u << (id % 8));
	return true;
}

static bool idset_has(struct server *s, const uint8_t *v, int64_t id)
{
	return id > 0 && id <= s->max_id && (v[id / 8] & (1u << (id % 8)));
}

void idvec_add(struct idvec *l, int64_t id)
{
	l->v = gf_grow(l->v, &l->cap, l->n + 1, sizeof *l->v, 64);
	l->v[l->n++] = id;
}

/* Append the list to (*out, *nout) and free it. */
static void idvec_move(struct idvec *l, int64_t **out, size_t *nout)
{
	if (l->n) {
		*out = realloc(*out, (*nout + l->n) * sizeof **out);
		if (!*out)
			abort();
		memcpy(*out + *nout, l->v, l->n * sizeof *l->v);
		*nout += l->n;
	}
	free(l->v);
}

/* ---- cascades --------------------------------------------------------- */

/* A request that waits for the cascade of the open transaction; dropped,
 * its done never called, when that transaction is rolled back. */
struct cascade_wait *cascade_wait_new(struct server *s, jobs_done_cb done, void *arg)
{
	struct cascade_wait *w;

	if (!(w = calloc(1, sizeof *w)))
		abort();
	*w = (struct cascade_wait){ .txn_seq = s->txn.seq, .done = done, .arg = arg, .next = s->cwaits };
	s->cwaits = w;
	return w;
}

void cascade_push(struct server *s, int64_t id, int64_t parent, struct cascade_wait *origin)
{
	s->cq = gf_grow(s->cq, &s->cq_cap, s->cq_len + 1, sizeof *s->cq, 256);
	s->cq[s->cq_len++] = (struct cascade_item){ .id = id, .parent = parent, .origin = origin };
	if (origin)
		origin->left++;
}

bool cascade_may_cancel(const struct job *c)
{
	return (c->state == JS_QUEUED || c->state == JS_HOLD) && c->auto_cancel && c->ndeps;
}

/* p ended badly: queue the jobs that wait for it. */
void cascade_push_dependents(struct server *s, const struct job *p, struct cascade_wait *origin)
{
	for (size_t i = 0; i < job_ndependents(p); i++) {
		struct job *c = jobs_get(s, p->dependents->id[i]);

		if (c && cascade_may_cancel(c) && cascade_lists(c, p->id))
			cascade_push(s, c->id, p->id, origin);
	}
}

/* The transaction was rolled back, the queue is as it was when it began:
 * requests that came with the transaction go; the others wait for what is
 * in the queue again. */
void cascade_mark(struct server *s)
{
	s->txn.cq_head = s->cq_head;
	s->txn.cq_len = s->cq_len;
}

void cascade_rollback(struct server *s)
{
	struct cascade_wait **pp;

	s->cq_head = s->txn.cq_head;
	s->cq_len = s->txn.cq_len;

	for (pp = &s->cwaits; *pp;) {
		struct cascade_wait *w = *pp;

		if (w->txn_seq == s->txn.seq) {
			*pp = w->next;
			free(w);
		} else {
			w->left = 0;
			pp = &w->next;
		}
	}
	for (size_t i = s->cq_head; i < s->cq_len; i++)
		if (s->cq[i].origin)
			s->cq[i].origin->left++;
}

bool jobs_would_cycle(struct server *s, int64_t id, const int64_t *deps, size_t ndeps)
{
	/* Walk up from deps, each job once: is id among their ancestors? */
	uint8_t *seen = idset_new(s);
	struct idvec todo = { 0 };
	bool found = false;

	for (size_t i = 0; i < ndeps; i++)
		idvec_add(&todo, deps[i]);
	while (todo.n && !found) {
		int64_t x = todo.v[--todo.n];
		struct job *j;

		found = x == id;
		if (found || !idset_add(s, seen, x) || !(j = jobs_get(s, x)))
			continue;
		for (size_t k = 0; k < j->ndeps; k++)
			idvec_add(&todo, j->deps[k]);
	}
	free(todo.v);
	free(seen);
	return found;
}

/* ---- what a cancel takes with it -------------------------------------- */

void jobs_failed_because(struct server *s, const int64_t *ids, size_t n, int64_t **out, size_t *nout)
{
	uint8_t *seen = idset_new(s);
	struct idvec found = { 0 };

	for (size_t i = 0; i < n; i++)
		idset_add(s, seen, ids[i]);
	/* Breadth first: the roots, then what was found, in order. */
	for (size_t i = 0; i < n + found.n; i++) {
		struct job *p = jobs_get(s, i < n ? ids[i] : found.v[i - n]);

		for (size_t k = 0; p && k < job_ndependents(p); k++) {
			struct job *c = jobs_get(s, p->dependents->id[k]);
			char *end;

			if (c && c->state == JS_CANCELLED && c->reason &&
			    !strncmp(c->reason, "DependencyFailed:", 17) &&
			    strtoll(c->reason + 17, &end, 10) == p->id && !*end && cascade_lists(c, p->id) &&
			    idset_add(s, seen, c->id))
				idvec_add(&found, c->id);
		}
	}
	idvec_move(&found, out, nout);
	free(seen);
}

/* Would c be cancelled when the jobs in `gone` are? */
static bool would_fail(struct server *s, const struct job *c, const uint8_t *gone)
{
	if (!c->dep_any)
		return true;	/* it lists one of them */
	for (size_t k = 0; k < c->ndeps; k++) {
		struct job *p = jobs_get(s, c->deps[k]);

		if (!idset_has(s, gone, c->deps[k]) && p && (!job_state_ended(p->state) || p->state == JS_FINISHED))
			return false;
	}
	return true;
}

void jobs_would_cascade(struct server *s, const int64_t *ids, size_t n, int64_t **out, size_t *nout)
{
	uint8_t *gone = idset_new(s);
	struct idvec found = { 0 };

	for (size_t i = 0; i < n; i++)
		idset_add(s, gone, ids[i]);
	for (size_t i = 0; i < n + found.n; i++) {
		struct job *p = jobs_get(s, i < n ? ids[i] : found.v[i - n]);

		for (size_t k = 0; p && k < job_ndependents(p); k++) {
			struct job *c = jobs_get(s, p->dependents->id[k]);

			if (c && cascade_may_cancel(c) && !idset_has(s, gone, c->id) && cascade_lists(c, p->id) &&
			    would_fail(s, c, gone)) {
				idset_add(s, gone, c->id);
				idvec_add(&found, c->id);
			}
		}
	}
	idvec_move(&found, out, nout);
	free(gone);
}
