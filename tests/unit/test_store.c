/* test_store.c — the SQLite store: rows that cannot be read are handed to
 * the loader as such (not an error that stops the load), the id
 * sequence can be raised past ids found elsewhere, the keyed rows of
 * the fair-use tables (schema 2) are kept, replaced and deleted, a commit
 * can be synced after it is made, and every other is synced before it
 * returns. */
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store.h"

struct fixture {
	char dir[64];
	char db[128];
	struct store *st;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof *f);
	struct gf_err e;

	snprintf(f->dir, sizeof f->dir, "/tmp/test_store.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->db, sizeof f->db, "%s/gflow.db", f->dir);
	f->st = store_open(f->db, &e);
	assert_non_null(f->st);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	store_close(f->st);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static int64_t insert(struct store *st, const char *name)
{
	struct job *j = job_new();
	struct gf_err e;
	int64_t id;

	j->name = strdup(name);
	j->argv = calloc(2, sizeof *j->argv);
	j->argv[0] = strdup("true");
	id = store_insert_job(st, j, &e);
	job_free(j);
	assert_true(id > 0);
	return id;
}

/* Change a row behind the store's back. */
static void set_row(const char *db, int64_t id, const char *data)
{
	sqlite3 *h;
	sqlite3_stmt *q;

	assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(h, "UPDATE jobs SET data = ? WHERE id = ?", -1, &q, NULL), SQLITE_OK);
	sqlite3_bind_text(q, 1, data, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 2, id);
	assert_int_equal(sqlite3_step(q), SQLITE_DONE);
	sqlite3_finalize(q);
	sqlite3_close(h);
}

struct seen {
	int64_t ids[8];
	int good[8];
	char bad[8][220];
	size_t n;
};

/* The loader gets each row's text as stored; "good" here: it is JSON. */
static int collect(void *arg, int64_t id, const char *text, size_t len, const void *slot)
{
	struct seen *s = arg;

	assert_null(slot);	/* no scan given */
	json_t *row = json_loads(text, 0, NULL);

	s->ids[s->n] = id;
	s->good[s->n] = row != NULL && strlen(text) == len;
	snprintf(s->bad[s->n], sizeof s->bad[0], "%s", text);
	json_decref(row);
	s->n++;
	return 0;
}

static void a_row_that_is_not_json_is_handed_over_not_fatal(void **state)
{
	struct fixture *f = *state;
	struct seen s = { 0 };
	struct gf_err e;
	int64_t a = insert(f->st, "a"), b = insert(f->st, "b"), c = insert(f->st, "c");

	set_row(f->db, b, "{\"state\": \"Queued\", trunc");
	assert_int_equal(store_load_jobs(f->st, NULL, 0, collect, &s, &e), 0);
	assert_int_equal(s.n, 3);
	assert_true(s.ids[0] == a && s.ids[1] == b && s.ids[2] == c);
	assert_true(s.good[0] && !s.good[1] && s.good[2]);
	assert_string_equal(s.bad[1], "{\"state\": \"Queued\", trunc");	/* as it is */
}

static int stop_at_second(void *arg, int64_t id, const char *text, size_t len, const void *slot)
{
	(void)id;
	(void)text;
	(void)len;
	(void)slot;
	return ++*(int *)arg == 2;
}

static void the_loader_can_still_stop_the_load(void **state)
{
	struct fixture *f = *state;
	struct gf_err e;
	int calls = 0;

	insert(f->st, "a");
	insert(f->st, "b");
	insert(f->st, "c");
	assert_int_equal(store_load_jobs(f->st, NULL, 0, stop_at_second, &calls, &e), -1);
	assert_int_equal(calls, 2);
	assert_non_null(strstr(e.msg, "job 2"));
}

/* The scan runs in the store's reader thread: what it leaves in a row's
 * slot (here the row's length and a sum of its bytes) reaches the loader
 * with that row, in id order, across batches (more rows than a batch holds,
 * and a row longer than a batch's text). */
struct scan_note {
	size_t len;
	unsigned sum;
};

static void note_row(const char *text, size_t len, void *slot)
{
	struct scan_note *n = slot;

	n->len = len;
	n->sum = 0;
	for (size_t i = 0; i < len; i++)
		n->sum = n->sum * 31 + (unsigned char)text[i];
}

struct walk {
	int64_t next;	/* the id expected next */
	int64_t stop_at;	/* 0: never */
	size_t big;
};

static int check_row(void *arg, int64_t id, const char *text, size_t len, const void *slot)
{
	struct walk *w = arg;
	struct scan_note mine;

	assert_int_equal(id, w->next);
	w->next++;
	assert_int_equal(strlen(text), len);
	note_row(text, len, &mine);
	assert_int_equal(((const struct scan_note *)slot)->len, len);
	assert_int_equal(((const struct scan_note *)slot)->sum, mine.sum);
	if (len > w->big)
		w->big = len;
	return id == w->stop_at;
}

static void rows_and_their_scans_arrive_in_order_across_batches(void **state)
{
	struct fixture *f = *state;
	struct walk w = { .next = 1 };
	struct gf_err e;
	size_t huge = 5u << 20;
	char *big = malloc(huge + 64);
	int64_t n = 2500;

	assert_non_null(big);
	for (int64_t i = 0; i < n; i++)
		insert(f->st, i % 7 ? "a" : "a-longer-name");
	snprintf(big, 64, "{\"state\":\"Queued\",\"name\":\"");
	memset(big + strlen(big), 'x', huge);
	strcpy(big + huge + 30, "\"}");
	set_row(f->db, 1500, big);
	assert_int_equal(store_load_jobs(f->st, note_row, sizeof(struct scan_note), check_row, &w, &e), 0);
	assert_int_equal(w.next, n + 1);
	assert_true(w.big > huge);
	/* stopped in a later batch: nothing after it is handed over */
	w = (struct walk){ .next = 1, .stop_at = 1700 };
	assert_int_equal(store_load_jobs(f->st, note_row, sizeof(struct scan_note), check_row, &w, &e), -1);
	assert_int_equal(w.next, 1701);
	assert_non_null(strstr(e.msg, "job 1700"));
	free(big);
}

/* No thread to be had (here: a user at a process limit of 0): the rows
 * are read in the caller's thread, the same rows in the same order. */
static void without_a_thread_the_caller_reads(void **state)
{
	struct fixture *f = *state;
	int status;
	pid_t pid;

	if (geteuid() != 0)
		skip();
	for (int64_t i = 0; i < 2500; i++)
		insert(f->st, "a");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit none = { 0, 0 };
		struct walk w = { .next = 1 };
		struct gf_err e;

		if (setrlimit(RLIMIT_NPROC, &none) || setgid(65534) || setuid(65534))
			_exit(2);
		if (store_load_jobs(f->st, note_row, sizeof(struct scan_note), check_row, &w, &e) || w.next != 2501)
			_exit(1);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void ids_continue_past_a_raised_floor(void **state)
{
	struct fixture *f = *state;
	struct gf_err e;

	/* Nothing ever inserted: the sequence has no row yet. */
	assert_int_equal(store_max_job_id(f->st), 0);
	assert_int_equal(store_raise_job_id(f->st, 41, &e), 0);
	assert_int_equal(store_max_job_id(f->st), 41);
	assert_int_equal(insert(f->st, "a"), 42);
	/* A lower floor changes nothing. */
	assert_int_equal(store_raise_job_id(f->st, 10, &e), 0);
	assert_int_equal(insert(f->st, "b"), 43);
	assert_int_equal(store_raise_job_id(f->st, 100, &e), 0);
	assert_int_equal(insert(f->st, "c"), 101);
	assert_false(store_full(f->st));
}

static void the_floor_survives_a_reopen(void **state)
{
	struct fixture *f = *state;
	struct gf_err e;

	insert(f->st, "a");
	assert_int_equal(store_raise_job_id(f->st, 7, &e), 0);
	store_close(f->st);
	f->st = store_open(f->db, &e);
	assert_non_null(f->st);
	assert_int_equal(insert(f->st, "b"), 8);
}

struct fair_rows {
	char keys[4][32];
	int64_t vals[4];
	int n;
};

static void collect_row(void *arg, const char *key, json_t *row)
{
	struct fair_rows *v = arg;

	snprintf(v->keys[v->n], sizeof v->keys[0], "%s", key);
	v->vals[v->n++] = json_integer_value(json_object_get(row, "v"));
}

static void fair_use_rows_are_kept_replaced_and_deleted(void **state)
{
	struct fixture *f = *state;
	struct fair_rows v = { 0 };
	struct gf_err e;
	json_t *a = json_pack("{s:i}", "v", 1), *b = json_pack("{s:i}", "v", 2);
	sqlite3 *db;

	assert_int_equal(store_begin(f->st, &e), 0);
	assert_int_equal(store_row_put(f->st, STORE_QUOTAS, "user:bob", a, &e), 0);
	assert_int_equal(store_row_put(f->st, STORE_QUOTAS, "user:alice", a, &e), 0);
	assert_int_equal(store_row_put(f->st, STORE_QUOTAS, "user:alice", b, &e), 0);	/* replaces */
	assert_int_equal(store_row_put(f->st, STORE_USAGE, "carol", b, &e), 0);
	assert_int_equal(store_commit(f->st, &e), 0);
	/* a row that is not an object is skipped, not fatal */
	assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "INSERT INTO quota_overrides(key, data) VALUES ('user:zed', 'nope')", NULL,
				      NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	store_close(f->st);
	f->st = store_open(f->db, &e);
	assert_non_null(f->st);
	assert_int_equal(store_each_row(f->st, STORE_QUOTAS, collect_row, &v, &e), 0);
	assert_int_equal(v.n, 2);
	assert_string_equal(v.keys[0], "user:alice");
	assert_int_equal(v.vals[0], 2);
	assert_string_equal(v.keys[1], "user:bob");
	assert_int_equal(store_begin(f->st, &e), 0);
	assert_int_equal(store_row_put(f->st, STORE_QUOTAS, "user:bob", NULL, &e), 0);	/* deletes */
	assert_int_equal(store_commit(f->st, &e), 0);
	memset(&v, 0, sizeof v);
	assert_int_equal(store_each_row(f->st, STORE_QUOTAS, collect_row, &v, &e), 0);
	assert_int_equal(v.n, 1);
	memset(&v, 0, sizeof v);
	assert_int_equal(store_each_row(f->st, STORE_USAGE, collect_row, &v, &e), 0);
	assert_int_equal(v.n, 1);
	assert_string_equal(v.keys[0], "carol");
	memset(&v, 0, sizeof v);
	assert_int_equal(store_each_row(f->st, STORE_RESERVATIONS, collect_row, &v, &e), 0);
	assert_int_equal(v.n, 0);
	json_decref(a);
	json_decref(b);
}

static void env_is(struct store *st, int64_t id, const char *want, size_t wlen)
{
	char *blob = NULL;
	size_t len = 0;
	struct gf_err e;

	assert_int_equal(store_get_env(st, id, &blob, &len, &e), 0);
	assert_int_equal(len, wlen);
	assert_memory_equal(blob, want, wlen);
	free(blob);
}

/* The environment last written is read back from memory, any other from
 * the table; the same environment twice in a row is stored once; one
 * rolled back is neither read nor reused. */
static void environments_round_trip(void **state)
{
	struct fixture *f = *state;
	static const char a[] = "A=1\0PATH=/bin", b[] = "B=2";
	char *blob = NULL;
	size_t len;
	int64_t ia, ib, ic;
	struct gf_err e;

	assert_int_equal(store_begin(f->st, &e), 0);
	assert_true((ia = store_put_env(f->st, a, sizeof a, &e)) > 0);
	assert_int_equal(store_put_env(f->st, a, sizeof a, &e), ia);
	assert_true((ib = store_put_env(f->st, b, sizeof b, &e)) > ia);
	assert_int_equal(store_commit(f->st, &e), 0);
	env_is(f->st, ib, b, sizeof b);		/* from memory */
	env_is(f->st, ia, a, sizeof a);		/* from the table */
	assert_int_equal(store_begin(f->st, &e), 0);
	assert_true((ic = store_put_env(f->st, a, sizeof a, &e)) > ib);
	store_rollback(f->st);
	assert_int_equal(store_get_env(f->st, ic, &blob, &len, &e), -1);
	assert_null(blob);
	assert_int_equal(store_begin(f->st, &e), 0);
	assert_true((ic = store_put_env(f->st, a, sizeof a, &e)) > ib);	/* written again, not reused */
	assert_int_equal(store_commit(f->st, &e), 0);
	env_is(f->st, ic, a, sizeof a);
	store_close(f->st);
	f->st = store_open(f->db, &e);
	assert_non_null(f->st);
	env_is(f->st, ib, b, sizeof b);
	env_is(f->st, ic, a, sizeof a);
}

/* A transaction synced later: its commit is written and read back at
 * once, reported unsynced until store_sync; a rolled-back one leaves
 * nothing due; plain transactions after either are as before. */
static void a_commit_synced_later(void **state)
{
	struct fixture *f = *state;
	struct gf_err e;
	int64_t a, b;

	assert_false(store_unsynced(f->st));
	assert_int_equal(store_sync(f->st, &e), 0);	/* nothing due: nothing done */
	assert_int_equal(store_begin_sync_later(f->st, &e), 0);
	a = insert(f->st, "later");
	assert_int_equal(store_commit(f->st, &e), 0);
	assert_true(store_unsynced(f->st));
	assert_int_equal(store_sync(f->st, &e), 0);
	assert_false(store_unsynced(f->st));
	assert_int_equal(store_begin_sync_later(f->st, &e), 0);
	insert(f->st, "rolled back");
	store_rollback(f->st);
	assert_false(store_unsynced(f->st));
	assert_int_equal(store_begin(f->st, &e), 0);
	b = insert(f->st, "plain");
	assert_int_equal(store_commit(f->st, &e), 0);
	assert_false(store_unsynced(f->st));
	store_close(f->st);
	f->st = store_open(f->db, &e);
	assert_non_null(f->st);
	struct seen s = { 0 };
	assert_int_equal(store_load_jobs(f->st, NULL, 0, collect, &s, &e), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.ids[0], a);
	assert_int_equal(s.ids[1], b);
}

/* ---- the log synced at each commit ------------------------------------
 *
 * A VFS over the default one that counts the syncs of write-ahead logs:
 * a log it opens keeps the default's methods but for xSync. */
static sqlite3_vfs *real_vfs;
static sqlite3_vfs counting_vfs;
static const sqlite3_io_methods *real_io;	/* a log's */
static sqlite3_io_methods wal_io;
static int wal_syncs;
static bool wal_sync_fails;	/* the disk refuses: each sync of a log fails */

static int wal_sync(sqlite3_file *f, int flags)
{
	wal_syncs++;
	return wal_sync_fails ? SQLITE_IOERR_FSYNC : real_io->xSync(f, flags);
}

static int counting_open(sqlite3_vfs *v, sqlite3_filename name, sqlite3_file *f, int flags, int *out)
{
	int rc = real_vfs->xOpen(real_vfs, name, f, flags, out);

	(void)v;
	if (rc != SQLITE_OK || !f->pMethods || !(flags & SQLITE_OPEN_WAL))
		return rc;
	if (!real_io) {
		real_io = f->pMethods;
		wal_io = *real_io;
		wal_io.xSync = wal_sync;
	}
	assert_ptr_equal(f->pMethods, real_io);	/* every log's are the same */
	f->pMethods = &wal_io;
	return rc;
}

static void count_wal_syncs(void)
{
	if (real_vfs)
		return;
	real_vfs = sqlite3_vfs_find(NULL);
	counting_vfs = *real_vfs;
	counting_vfs.zName = "counting";
	counting_vfs.xOpen = counting_open;
	assert_int_equal(sqlite3_vfs_register(&counting_vfs, 1), SQLITE_OK);
}

/* The connection stays at synchronous=NORMAL (no statement per
 * transaction sets it), so the store syncs the log itself: a plain commit
 * and a write outside any transaction are synced before they return, a
 * commit synced later only at store_sync, a rollback never. */
static void each_commit_is_synced_before_it_returns(void **state)
{
	struct fixture *f = *state;
	struct gf_err e;
	int before;

	count_wal_syncs();
	store_close(f->st);
	f->st = store_open(f->db, &e);	/* now through the counting VFS */
	assert_non_null(f->st);
	/* The first commit to a log begun again also syncs its new header
	 * (SQLite's own): counted from the second on. */
	assert_int_equal(store_begin(f->st, &e), 0);
	insert(f->st, "first");
	assert_int_equal(store_commit(f->st, &e), 0);
	assert_true(wal_syncs >= 1);
	before = wal_syncs;
	assert_int_equal(store_begin(f->st, &e), 0);
	insert(f->st, "plain");
	assert_int_equal(wal_syncs, before);
	assert_int_equal(store_commit(f->st, &e), 0);
	assert_int_equal(wal_syncs, before + 1);
	assert_false(store_unsynced(f->st));

	assert_int_equal(store_set_setting(f->st, "k", "v", &e), 0);	/* a write on its own */
	assert_int_equal(wal_syncs, before + 2);

	assert_int_equal(store_begin_sync_later(f->st, &e), 0);
	insert(f->st, "later");
	assert_int_equal(store_commit(f->st, &e), 0);
	assert_int_equal(wal_syncs, before + 2);
	assert_true(store_unsynced(f->st));
	assert_int_equal(store_sync(f->st, &e), 0);
	assert_int_equal(wal_syncs, before + 3);

	assert_int_equal(store_begin(f->st, &e), 0);
	insert(f->st, "rolled back");
	store_rollback(f->st);
	assert_int_equal(wal_syncs, before + 3);
	assert_false(store_unsynced(f->st));

	/* A plain commit after one synced later is synced again. */
	assert_int_equal(store_begin(f->st, &e), 0);
	insert(f->st, "plain again");
	assert_int_equal(store_commit(f->st, &e), 0);
	assert_int_equal(wal_syncs, before + 4);
}

/* In a child: a commit (later: one synced later, then store_sync_or_stop)
 * whose log cannot be synced. What it says on stderr into out; its exit
 * status, or -1 when it returned. */
static int commit_unsyncable(struct fixture *f, bool later, char *out, size_t size)
{
	int fds[2], st;
	ssize_t n, got = 0;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct gf_err e;

		dup2(fds[1], 2);
		store_close(f->st);
		f->st = store_open(f->db, &e);	/* through the counting VFS */
		if (!f->st || (later ? store_begin_sync_later(f->st, &e) : store_begin(f->st, &e)))
			_exit(90);
		insert(f->st, "never known to be on disk");
		wal_sync_fails = true;
		if (store_commit(f->st, &e))
			_exit(91);
		if (later)
			store_sync_or_stop(f->st);
		_exit(92);	/* it went on: the test fails */
	}
	close(fds[1]);
	while (got < (ssize_t)size - 1 && (n = read(fds[0], out + got, size - 1 - (size_t)got)) > 0)
		got += n;
	out[got] = '\0';
	close(fds[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A commit that is written but cannot be synced is past undoing: the
 * daemon stops and says why, whether the commit syncs itself or its
 * caller syncs it later. (Under LeakSanitizer the status is its own.) */
static void a_commit_that_cannot_be_synced_stops_the_daemon(void **state)
{
	struct fixture *f = *state;
	char out[1024];
	int rc;

	count_wal_syncs();
	for (int later = 0; later < 2; later++) {
		rc = commit_unsyncable(f, later, out, sizeof out);
		assert_true(rc != 0 && rc < 90);
		assert_non_null(strstr(out, "stopping: a change may not be on disk"));
		assert_non_null(strstr(out, "syncing the write-ahead log"));
	}
}

/* The hook that syncs each commit replaces SQLite's own checkpoint (every
 * 1000 pages): the store checkpoints, so the log goes back to its start
 * and does not grow with every commit. */
static void the_log_is_checkpointed(void **state)
{
	struct fixture *f = *state;
	char wal[160];
	struct stat st;
	struct gf_err e;

	snprintf(wal, sizeof wal, "%s-wal", f->db);
	for (int i = 0; i < 3000; i++) {
		assert_int_equal(store_begin_sync_later(f->st, &e), 0);
		insert(f->st, "a job among many");
		assert_int_equal(store_commit(f->st, &e), 0);
	}
	assert_int_equal(store_sync(f->st, &e), 0);
	assert_int_equal(stat(wal, &st), 0);
	/* 3000 commits of 2 pages or more, were none checkpointed: 24 MiB */
	assert_true(st.st_size < 8 * 1024 * 1024);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(a_row_that_is_not_json_is_handed_over_not_fatal, setup, teardown),
		cmocka_unit_test_setup_teardown(each_commit_is_synced_before_it_returns, setup, teardown),
		cmocka_unit_test_setup_teardown(the_log_is_checkpointed, setup, teardown),
		cmocka_unit_test_setup_teardown(a_commit_that_cannot_be_synced_stops_the_daemon, setup, teardown),
		cmocka_unit_test_setup_teardown(the_loader_can_still_stop_the_load, setup, teardown),
		cmocka_unit_test_setup_teardown(rows_and_their_scans_arrive_in_order_across_batches, setup, teardown),
		cmocka_unit_test_setup_teardown(without_a_thread_the_caller_reads, setup, teardown),
		cmocka_unit_test_setup_teardown(ids_continue_past_a_raised_floor, setup, teardown),
		cmocka_unit_test_setup_teardown(the_floor_survives_a_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(fair_use_rows_are_kept_replaced_and_deleted, setup, teardown),
		cmocka_unit_test_setup_teardown(environments_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(a_commit_synced_later, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
