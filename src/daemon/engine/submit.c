/* submit.c — a submission's jobs into the table: one transaction stores
 * them (and their environment), records as started those that can start
 * at once, and commits; a single job that starts on the standby runner is
 * held there until that commit is synced (jobs_txn_sync, standby_release).
 * The API decodes and checks the submission before (api_jobs.c). */
#include "engine.h"

#include "trace.h"

int jobs_submit(struct server *s, struct job **jobs, size_t n, const char *env, size_t envlen, int64_t *ids,
		bool *launch_after, struct gf_err *e)
{
	bool queued = false, held;
	int64_t env_id;
	size_t i;

	*launch_after = false;
	/* A job that may start at once, on the standby: its runner prepares
	 * the start while the commit is synced (jobs_txn_sync). */
	held = n == 1 && jobs[0]->state == JS_QUEUED && exec_holds_start(s, jobs[0]);
	if ((held ? jobs_txn_begin_sync_later(s, e) : jobs_txn_begin(s, e)) ||
	    (env_id = store_put_env(s->store, env, envlen, e)) < 0)
		goto fail;
	for (i = 0; i < n; i++) {
		struct job *j = jobs[i];

		jobs[i] = NULL;	/* the table's now, or freed */
		j->env_id = env_id;
		if (n > 1 && i > 0)
			job_set_group_id(j, ids[0]);
		if (jobs_insert(s, j, e))
			goto fail;
		ids[i] = j->id;
		queued |= j->state == JS_QUEUED;
	}
	if (n > 1) {
		struct job *first = jobs_get(s, ids[0]);

		job_set_group_id(first, first->id);
		if (jobs_save(s, first, e))
			goto fail;
	}
	if (queued)
		jobs_start_at_once(s);	/* what can start is recorded in this commit */
	if (jobs_txn_commit(s, e))
		goto fail;
	gf_trace("commit", ids[0]);
	if (jobs_get(s, ids[0])->state == JS_RUNNING) {
		gf_trace("running_commit", ids[0]);
		if (held) {
			s->start_held = true;
			jobs_launch_recorded(s);
			s->start_held = false;
		} else
			*launch_after = true;
	}
	jobs_txn_sync(s);
	if (held) {
		gf_trace("synced", ids[0]);
		standby_release(s);	/* the start goes on */
	}
	server_schedule(s);
	return 0;
fail:
	jobs_txn_rollback(s);
	return -1;
}
