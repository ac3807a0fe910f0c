/* store.c — SQLite persistence: schema, migrations, prepared statements,
 * and what a failed write is called (a full disk says so). */
#include "store.h"
#include "jobw.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

enum {
	ST_INSERT_JOB, ST_UPDATE_JOB, ST_PUT_ENV, ST_GET_ENV, ST_SET, ST_DEL, ST_GET, ST_ADD_SAMPLE, ST_TRIM_SAMPLES,
	ST_BEGIN, ST_COMMIT, ST_ROW_PUT, ST_ROW_DEL = ST_ROW_PUT + STORE_NTABLES, ST_N = ST_ROW_DEL + STORE_NTABLES
};

static const char *const table_name[STORE_NTABLES] = {
	[STORE_QUOTAS] = "quota_overrides", [STORE_RESERVATIONS] = "reservations", [STORE_USAGE] = "usage",
};

#define ROW_PUT(t) "INSERT INTO " t "(key, data) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET data = excluded.data"
#define ROW_DEL(t) "DELETE FROM " t " WHERE key = ?"

static const char *const stmt_sql[ST_N] = {
	[ST_INSERT_JOB] = "INSERT INTO jobs(data) VALUES (?)",
	[ST_UPDATE_JOB] = "UPDATE jobs SET data = ? WHERE id = ?",
	[ST_PUT_ENV] = "INSERT INTO envs(data) VALUES (?)",
	[ST_GET_ENV] = "SELECT data FROM envs WHERE id = ?",
	[ST_SET] = ("INSERT INTO settings(key, value) VALUES (?, ?) "
		    "ON CONFLICT(key) DO UPDATE SET value = excluded.value"),
	[ST_DEL] = "DELETE FROM settings WHERE key = ?",
	[ST_GET] = "SELECT value FROM settings WHERE key = ?",
	[ST_ROW_PUT + STORE_QUOTAS] = ROW_PUT("quota_overrides"),
	[ST_ROW_PUT + STORE_RESERVATIONS] = ROW_PUT("reservations"),
	[ST_ROW_PUT + STORE_USAGE] = ROW_PUT("usage"),
	[ST_ROW_DEL + STORE_QUOTAS] = ROW_DEL("quota_overrides"),
	[ST_ROW_DEL + STORE_RESERVATIONS] = ROW_DEL("reservations"),
	[ST_ROW_DEL + STORE_USAGE] = ROW_DEL("usage"),
	[ST_ADD_SAMPLE] = "INSERT OR REPLACE INTO history(t, gpus_used, gpus_total, queued, running, held) "
			  "VALUES (?, ?, ?, ?, ?, ?)",
	[ST_TRIM_SAMPLES] = "DELETE FROM history WHERE t < ?",
	[ST_BEGIN] = "BEGIN IMMEDIATE",
	[ST_COMMIT] = "COMMIT",
};

/* Each entry migrates from version i to i+1. */
static const char *const migrations[] = {
	"CREATE TABLE jobs(id INTEGER PRIMARY KEY AUTOINCREMENT, data TEXT NOT NULL);"
	"CREATE TABLE envs(id INTEGER PRIMARY KEY AUTOINCREMENT, data BLOB NOT NULL);"
	"CREATE TABLE settings(key TEXT PRIMARY KEY, value TEXT NOT NULL);",
	/* 2: fair use (quota.c, reserve.c, fairshare.c), each row a JSON object. */
	("CREATE TABLE quota_overrides(key TEXT PRIMARY KEY, data TEXT NOT NULL);"
	 "CREATE TABLE reservations(key TEXT PRIMARY KEY, data TEXT NOT NULL);"
	 "CREATE TABLE usage(key TEXT PRIMARY KEY, data TEXT NOT NULL);"),
	/* 3: the dashboard's history ring (history.c). */
	("CREATE TABLE history(t REAL PRIMARY KEY, gpus_used INTEGER NOT NULL, gpus_total INTEGER NOT NULL,"
	 " queued INTEGER NOT NULL, running INTEGER NOT NULL, held INTEGER NOT NULL);"),
};
#define SCHEMA_VERSION ((int)(sizeof migrations / sizeof migrations[0]))

struct store {
	sqlite3 *db;
	char *path;
	bool full;		/* the last failure was a full disk */
	sqlite3_stmt *st[ST_N];
	char *last_env;
	size_t last_env_len;
	int64_t last_env_id;
	bool sync_later;	/* the open transaction's commit leaves the sync to store_sync */
	bool unsynced;		/* a commit is written but not yet synced */
};

static int step_done(struct store *s, sqlite3_stmt *q, struct gf_err *e, const char *what);

/* A write refused for want of space, by SQLite's word or the system's. */
static bool out_of_space(struct store *s, int rc)
{
	int sys = sqlite3_system_errno(s->db);

	return (rc & 0xff) == SQLITE_FULL || sys == ENOSPC || sys == EDQUOT;
}

static int fail_rc(struct store *s, int rc, struct gf_err *e, const char *what, const char *msg)
{
	s->full = out_of_space(s, rc);
	if (s->full)
		return gf_err_set(e, "disk full: cannot record the change in %s (free some space)", s->path);
	return what ? gf_err_set(e, "store: %s: %s", what, msg) : gf_err_set(e, "store: %s", msg);
}

static int db_fail(struct store *s, struct gf_err *e, const char *what)
{
	return fail_rc(s, sqlite3_extended_errcode(s->db), e, what, sqlite3_errmsg(s->db));
}

static int exec_sql(struct store *s, const char *sql, struct gf_err *e)
{
	char *msg = NULL;
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, &msg);

	if (rc != SQLITE_OK) {
		fail_rc(s, sqlite3_extended_errcode(s->db), e, NULL, msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

/* The value a PRAGMA reads (`fallback` when it gives none). */
static int pragma_int(struct store *s, const char *sql, int fallback)
{
	sqlite3_stmt *q;
	int v = fallback;

	if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
		return fallback;
	if (sqlite3_step(q) == SQLITE_ROW)
		v = sqlite3_column_int(q, 0);
	sqlite3_finalize(q);
	return v;
}

static int user_version(struct store *s)
{
	return pragma_int(s, "PRAGMA user_version", -1);
}

static int migrate(struct store *s, struct gf_err *e)
{
	int v = user_version(s);
	char sql[64];

	if (v < 0)
		return db_fail(s, e, "reading schema version");
	if (v > SCHEMA_VERSION)
		return gf_err_set(e, "store: database schema version %d is newer than this gflowd (%d)",
				  v, SCHEMA_VERSION);
	for (; v < SCHEMA_VERSION; v++) {
		if (exec_sql(s, "BEGIN IMMEDIATE", e))
			return -1;
		snprintf(sql, sizeof sql, "PRAGMA user_version = %d", v + 1);
		if (exec_sql(s, migrations[v], e) || exec_sql(s, sql, e)) {
			store_rollback(s);
			return -1;
		}
		if (exec_sql(s, "COMMIT", e))
			return -1;
	}
	return 0;
}

/* The write-ahead log, given room ahead: SQLite appends each commit to it
 * until a checkpoint (every ~1000 pages) sends it back to its start, and a
 * sync of a file that grew must also commit its new size (a journal commit
 * of the file system), which costs several times the sync of blocks that
 * are already there. So the log is extended to the size it reaches anyway,
 * with zeros, once: SQLite ends the log at the first frame whose checksum
 * and salt do not match, as it does for the old frames a restarted log
 * leaves behind. Only ever done past what is in the file, never through a
 * link, and only where the file system has 16 times that room free (a
 * nearly full or tiny one keeps its space); a failure is harmless (commits
 * are as before). */
#define WAL_ROOM (1100 * 4096 + 32)

static void wal_make_room(const char *path)
{
	char wal[4096 + 8], zeros[65536];
	struct stat st;
	struct statvfs vfs;
	int fd;

	if (snprintf(wal, sizeof wal, "%s-wal", path) >= (int)sizeof wal)
		return;
	fd = open(wal, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	memset(zeros, 0, sizeof zeros);
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < WAL_ROOM && fstatvfs(fd, &vfs) == 0 &&
	    (unsigned long long)vfs.f_bavail * vfs.f_frsize >= 16ULL * WAL_ROOM) {
		off_t at = st.st_size;

		while (at < WAL_ROOM) {
			size_t n = WAL_ROOM - at < (off_t)sizeof zeros ? (size_t)(WAL_ROOM - at) : sizeof zeros;
			ssize_t w = pwrite(fd, zeros, n, at);

			if (w <= 0)
				break;
			at += w;
		}
		(void)!fdatasync(fd);
	}
	close(fd);	/* SQLite holds no lock on the log itself */
}

/* The log's own file, synced as SQLite syncs it at a FULL commit: its
 * journal pointer is the write-ahead log in WAL mode. */
static int wal_xsync(struct store *s)
{
	sqlite3_file *wal = NULL;
	int rc = sqlite3_file_control(s->db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &wal);

	if (rc == SQLITE_OK && (!wal || !wal->pMethods))
		rc = SQLITE_ERROR;
	if (rc == SQLITE_OK)
		rc = wal->pMethods->xSync(wal, SQLITE_SYNC_NORMAL);
	return rc;
}

/* Each commit, once SQLite has written it to the log: the connection is at
 * synchronous=NORMAL, which leaves the log unsynced, and it is synced here
 * before the commit returns, as FULL would sync it — unless the transaction
 * was begun with store_begin_sync_later, whose caller syncs it (store_sync).
 * (One level for good: SQLite reads it only outside a transaction, and
 * setting it there around each such transaction cost two statements.) A
 * commit that cannot be synced is past undoing: the daemon stops, and the
 * next one reads the store as it is. The hook also takes over SQLite's
 * checkpoint every WAL_CHECKPOINT_PAGES (sqlite3_wal_hook replaces it). */
#define WAL_CHECKPOINT_PAGES 1000

static int on_commit(void *arg, sqlite3 *db, const char *name, int pages)
{
	struct store *s = arg;

	s->unsynced = true;
	if (!s->sync_later)
		store_sync_or_stop(s);
	if (pages >= WAL_CHECKPOINT_PAGES)
		sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	return SQLITE_OK;
}

struct store *store_open(const char *path, struct gf_err *e)
{
	struct store *s = calloc(1, sizeof *s);

	if (!s || !(s->path = strdup(path)))
		abort();
	if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		gf_err_set(e, "cannot open the store %s: %s", path,
			   s->db ? sqlite3_errmsg(s->db) : "out of memory");
		store_close(s);
		return NULL;
	}
	sqlite3_busy_timeout(s->db, 5000);
	sqlite3_wal_hook(s->db, on_commit, s);
	if (exec_sql(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;", e) ||
	    migrate(s, e)) {
		gf_err_prefix(e, "%s", path);
		store_close(s);
		return NULL;
	}
	wal_make_room(path);
	for (int i = 0; i < ST_N; i++)
		if (sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i], NULL) !=
		    SQLITE_OK) {
			db_fail(s, e, "preparing statements");
			store_close(s);
			return NULL;
		}
	return s;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	for (int i = 0; i < ST_N; i++)
		sqlite3_finalize(s->st[i]);
	sqlite3_close(s->db);
	free(s->last_env);
	free(s->path);
	free(s);
}

bool store_full(const struct store *s)
{
	return s->full;
}

#define NO_ROOM_BYTES (64 * 1024)

bool store_no_room(const struct store *s)
{
	struct statvfs vfs;
	unsigned long long free_blocks;

	if (s->full)
		return true;
	if (statvfs(s->path, &vfs))
		return false;
	free_blocks = geteuid() == 0 ? vfs.f_bfree : vfs.f_bavail;	/* root may use the reserve */
	return free_blocks * vfs.f_frsize < NO_ROOM_BYTES;
}

int store_begin(struct store *s, struct gf_err *e)
{
	s->full = false;
	return step_done(s, s->st[ST_BEGIN], e, "beginning a transaction");
}

int store_begin_sync_later(struct store *s, struct gf_err *e)
{
	s->sync_later = true;
	if (store_begin(s, e) == 0)
		return 0;
	s->sync_later = false;
	return -1;
}

int store_commit(struct store *s, struct gf_err *e)
{
	if (step_done(s, s->st[ST_COMMIT], e, "committing")) {
		store_rollback(s);
		return -1;
	}
	s->sync_later = false;
	return 0;
}

bool store_unsynced(const struct store *s)
{
	return s->unsynced;
}

int store_sync(struct store *s, struct gf_err *e)
{
	int rc;

	if (!s->unsynced)
		return 0;
	if ((rc = wal_xsync(s)) != SQLITE_OK)
		return fail_rc(s, rc, e, "syncing the write-ahead log", sqlite3_errstr(rc));
	s->unsynced = false;
	return 0;
}

void store_sync_or_stop(struct store *s)
{
	struct gf_err e;

	if (store_sync(s, &e)) {
		fprintf(stderr, "gflowd: %s; stopping: a change may not be on disk\n", e.msg);
		exit(1);
	}
}

void store_rollback(struct store *s)
{
	if (!sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	s->sync_later = false;
	/* The cached env may name a row that was just rolled back. */
	free(s->last_env);
	s->last_env = NULL;
	s->last_env_id = 0;
}

/* Run a prepared write statement to completion and reset it. */
static int step_done(struct store *s, sqlite3_stmt *q, struct gf_err *e, const char *what)
{
	int rc = sqlite3_step(q);

	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	if (rc != SQLITE_DONE)
		return db_fail(s, e, what);
	return 0;
}

/* A malloc'd copy of n bytes (never NULL: out of memory aborts). */
static char *copy_bytes(const void *p, size_t n)
{
	char *c = malloc(n ? n : 1);

	if (!c)
		abort();
	if (n)
		memcpy(c, p, n);
	return c;
}

int64_t store_put_env(struct store *s, const char *blob, size_t len, struct gf_err *e)
{
	sqlite3_stmt *q = s->st[ST_PUT_ENV];

	if (s->last_env && s->last_env_len == len && !memcmp(s->last_env, blob, len))
		return s->last_env_id;
	sqlite3_bind_blob64(q, 1, blob, len, SQLITE_STATIC);
	if (step_done(s, q, e, "saving the environment"))
		return -1;
	free(s->last_env);
	s->last_env = copy_bytes(blob, len);
	s->last_env_len = len;
	s->last_env_id = sqlite3_last_insert_rowid(s->db);
	return s->last_env_id;
}

int store_get_env(struct store *s, int64_t id, char **blob, size_t *len, struct gf_err *e)
{
	sqlite3_stmt *q = s->st[ST_GET_ENV];
	int rc;

	if (s->last_env && id == s->last_env_id) {	/* the row last written: a job just submitted */
		*blob = copy_bytes(s->last_env, s->last_env_len);
		*len = s->last_env_len;
		return 0;
	}
	sqlite3_bind_int64(q, 1, id);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		const void *p = sqlite3_column_blob(q, 0);
		int n = sqlite3_column_bytes(q, 0);

		*blob = copy_bytes(p, (size_t)n);
		*len = (size_t)n;
	}
	sqlite3_reset(q);
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? gf_err_set(e, "store: environment %lld is missing", (long long)id)
					 : db_fail(s, e, "reading an environment");
	return 0;
}

static char *job_row(const struct job *j)
{
	return jobw_row(j);	/* no tree per saved job */
}

int64_t store_insert_job(struct store *s, struct job *j, struct gf_err *e)
{
	sqlite3_stmt *q = s->st[ST_INSERT_JOB];
	char *text = job_row(j);
	int rc;

	sqlite3_bind_text(q, 1, text, -1, SQLITE_STATIC);
	rc = step_done(s, q, e, "saving a job");
	free(text);
	if (rc)
		return -1;
	j->id = sqlite3_last_insert_rowid(s->db);
	return j->id;
}

int store_update_job(struct store *s, const struct job *j, struct gf_err *e)
{
	sqlite3_stmt *q = s->st[ST_UPDATE_JOB];
	char *text = job_row(j);
	int rc;

	sqlite3_bind_text(q, 1, text, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 2, j->id);
	rc = step_done(s, q, e, "updating a job");
	free(text);
	return rc;
}

int64_t store_max_job_id(struct store *s)
{
	sqlite3_stmt *q;
	int64_t v = 0;

	if (sqlite3_prepare_v2(s->db, "SELECT seq FROM sqlite_sequence WHERE name = 'jobs'", -1, &q,
			       NULL) != SQLITE_OK)
		return 0;
	if (sqlite3_step(q) == SQLITE_ROW)
		v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return v;
}

int store_raise_job_id(struct store *s, int64_t floor, struct gf_err *e)
{
	char sql[400];

	if (floor <= store_max_job_id(s))
		return 0;
	/* AUTOINCREMENT hands out max(seq, largest id) + 1; sqlite_sequence
	 * has a row for the table only once something was inserted. */
	snprintf(sql, sizeof sql,
		 "BEGIN IMMEDIATE;"
		 "UPDATE sqlite_sequence SET seq = %1$lld WHERE name = 'jobs';"
		 "INSERT INTO sqlite_sequence(name, seq) SELECT 'jobs', %1$lld "
		 "WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'jobs');"
		 "COMMIT",
		 (long long)floor);
	if (exec_sql(s, sql, e)) {
		store_rollback(s);
		return -1;
	}
	return 0;
}

/* ---- loading the jobs: a reader thread and the caller, in step ----------
 * The rows are read (sqlite3_step, the row's bytes copied into a batch) in
 * a thread of the store's own, while the caller's thread makes jobs of the
 * batch before: on two cores a start reads and makes at once. The scan
 * (when the caller gives one) is shared: the reader scans its batch's rows
 * while the caller is still busy with the other batch, and the caller
 * scans the rest itself, so neither waits for long. Two batches take
 * turns; the connection is the reader's alone until it is joined. */
#define BATCH_ROWS 1024
#define BATCH_TEXT (4u << 20)	/* bytes of row text a batch holds (one longer row: its own batch) */

struct batch {
	size_t n;
	int64_t id[BATCH_ROWS];
	size_t off[BATCH_ROWS], len[BATCH_ROWS];
	char *text;
	size_t cap, used;
	unsigned char *slots;
	size_t scanned;		/* rows the reader scanned: [0, scanned) */
	atomic_bool full;	/* the reader's batch for the caller (changed under the lock) */
	bool last;		/* no rows after this batch's */
	int rc;			/* SQLITE_DONE, or the error that ended the reading */
};

struct loader {
	sqlite3_stmt *q;
	store_job_scan scan;
	size_t slot_size;
	struct batch b[2];
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;		/* the caller wants no more */
};

/* Fills b from the query; the row stepped to last (not yet copied) is kept
 * for the next batch: its bytes stay good until the next step. */
static void fill_batch(struct loader *l, struct batch *b, int *rc)
{
	b->n = b->used = 0;
	while (*rc == SQLITE_ROW && b->n < BATCH_ROWS) {
		const char *text = (const char *)sqlite3_column_text(l->q, 1);
		size_t len = text ? (size_t)sqlite3_column_bytes(l->q, 1) : 0;

		if (b->used + len + 1 > b->cap) {
			if (b->n)
				return;		/* the next batch's first */
			b->cap = len + 1 > BATCH_TEXT ? len + 1 : BATCH_TEXT;
			free(b->text);
			if (!(b->text = malloc(b->cap)))
				abort();
		}
		b->id[b->n] = sqlite3_column_int64(l->q, 0);
		b->off[b->n] = b->used;
		b->len[b->n] = len;
		memcpy(b->text + b->used, text ? text : "", len);
		b->text[b->used + len] = '\0';
		b->used += len + 1;
		b->n++;
		*rc = sqlite3_step(l->q);
	}
}

static void *reader(void *arg)
{
	struct loader *l = arg;
	int rc = sqlite3_step(l->q);

	for (int k = 0;; k ^= 1) {
		struct batch *b = &l->b[k];
		bool stop;

		pthread_mutex_lock(&l->mu);
		while (b->full && !l->stop)
			pthread_cond_wait(&l->cv, &l->mu);
		stop = l->stop;
		pthread_mutex_unlock(&l->mu);
		if (stop)
			return NULL;
		fill_batch(l, b, &rc);
		/* Scanned here while the caller is busy with the other batch. */
		for (b->scanned = 0; l->scan && b->scanned < b->n && atomic_load(&l->b[k ^ 1].full); b->scanned++)
			l->scan(b->text + b->off[b->scanned], b->len[b->scanned],
				b->slots + b->scanned * l->slot_size);
		pthread_mutex_lock(&l->mu);
		b->last = rc != SQLITE_ROW;
		b->rc = rc;
		b->full = true;
		pthread_cond_broadcast(&l->cv);
		pthread_mutex_unlock(&l->mu);
		if (b->last)
			return NULL;
	}
}

int store_load_jobs(struct store *s, store_job_scan scan, size_t slot_size, store_job_cb cb, void *arg,
		    struct gf_err *e)
{
	struct loader l = { .scan = scan, .slot_size = scan ? slot_size : 0 };
	int rc = 0, cache = pragma_int(s, "PRAGMA cache_size", -2000), end = SQLITE_DONE, step = 0;
	bool more = true, threaded;
	pthread_t th;
	char sql[64];

	/* Reading every row once needs no page cache: a full one (2 MiB by
	 * default) would be interleaved with the jobs being made and stay in
	 * the daemon's memory for good. The default is back for the rest. */
	if (exec_sql(s, "PRAGMA cache_size = -64", e))
		return -1;
	if (sqlite3_prepare_v2(s->db, "SELECT id, data FROM jobs ORDER BY id", -1, &l.q, NULL) != SQLITE_OK)
		return db_fail(s, e, "loading jobs");
	for (int k = 0; k < 2; k++)
		if (!(l.b[k].slots = malloc(BATCH_ROWS * (l.slot_size ? l.slot_size : 1))))
			abort();
	pthread_mutex_init(&l.mu, NULL);
	pthread_cond_init(&l.cv, NULL);
	/* No thread to be had (a process limit): the rows are read here. */
	if (!(threaded = pthread_create(&th, NULL, reader, &l) == 0))
		step = sqlite3_step(l.q);
	for (int k = 0; more && !rc; k ^= 1) {
		struct batch *b = &l.b[k];

		if (!threaded) {
			fill_batch(&l, b, &step);
			b->scanned = 0;
			b->last = step != SQLITE_ROW;
			b->rc = step;
		} else {
			pthread_mutex_lock(&l.mu);
			while (!b->full)
				pthread_cond_wait(&l.cv, &l.mu);
			pthread_mutex_unlock(&l.mu);
		}
		for (size_t i = 0; i < b->n && !rc; i++) {
			unsigned char *slot = l.slot_size ? b->slots + i * l.slot_size : NULL;

			if (scan && i >= b->scanned)
				scan(b->text + b->off[i], b->len[i], slot);
			if ((rc = cb(arg, b->id[i], b->text + b->off[i], b->len[i], slot)))
				gf_err_set(e, "store: cannot load job %lld", (long long)b->id[i]);
		}
		more = !b->last;
		end = b->rc;
		pthread_mutex_lock(&l.mu);
		b->full = false;
		l.stop = rc != 0;
		pthread_cond_broadcast(&l.cv);
		pthread_mutex_unlock(&l.mu);
	}
	if (threaded)
		pthread_join(th, NULL);
	pthread_cond_destroy(&l.cv);
	pthread_mutex_destroy(&l.mu);
	for (int k = 0; k < 2; k++) {
		free(l.b[k].text);
		free(l.b[k].slots);
	}
	if (!rc && end != SQLITE_DONE)
		rc = db_fail(s, e, "loading jobs");	/* the step's error is the connection's */
	sqlite3_finalize(l.q);
	if (rc)
		return -1;
	snprintf(sql, sizeof sql, "PRAGMA cache_size = %d", cache);
	return exec_sql(s, sql, e);
}

int store_set_setting(struct store *s, const char *key, const char *value, struct gf_err *e)
{
	sqlite3_stmt *q = s->st[value ? ST_SET : ST_DEL];

	sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
	if (value)
		sqlite3_bind_text(q, 2, value, -1, SQLITE_STATIC);
	return step_done(s, q, e, "saving a setting");
}

int store_each_setting(struct store *s, const char *prefix, store_setting_cb cb, void *arg, struct gf_err *e)
{
	sqlite3_stmt *q;
	int rc;

	if (sqlite3_prepare_v2(s->db, "SELECT key, value FROM settings WHERE substr(key, 1, length(?1)) = ?1 "
				      "ORDER BY key", -1, &q, NULL) != SQLITE_OK)
		return db_fail(s, e, "reading settings");
	sqlite3_bind_text(q, 1, prefix, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW)
		cb(arg, (const char *)sqlite3_column_text(q, 0), (const char *)sqlite3_column_text(q, 1));
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? 0 : db_fail(s, e, "reading settings");
}

char *store_get_setting(struct store *s, const char *key)
{
	sqlite3_stmt *q = s->st[ST_GET];
	char *v = NULL;

	sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(q) == SQLITE_ROW)
		v = strdup((const char *)sqlite3_column_text(q, 0));
	sqlite3_reset(q);
	return v;
}

int store_row_put(struct store *s, enum store_table t, const char *key, const json_t *data, struct gf_err *e)
{
	sqlite3_stmt *q = s->st[data ? ST_ROW_PUT + t : ST_ROW_DEL + t];
	char *text = data ? json_dumps(data, JSON_COMPACT) : NULL;
	int rc;

	if (data && !text)
		abort();
	sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
	if (text)
		sqlite3_bind_text(q, 2, text, -1, SQLITE_STATIC);
	rc = step_done(s, q, e, table_name[t]);
	free(text);
	return rc;
}

int store_each_row(struct store *s, enum store_table t, store_row_cb cb, void *arg, struct gf_err *e)
{
	char sql[80];
	sqlite3_stmt *q;
	int rc;

	snprintf(sql, sizeof sql, "SELECT key, data FROM %s ORDER BY key", table_name[t]);
	if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
		return db_fail(s, e, table_name[t]);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(q, 0);
		json_t *row = json_loads((const char *)sqlite3_column_text(q, 1), 0, NULL);

		if (row && json_is_object(row))
			cb(arg, key, row);
		else
			fprintf(stderr, "gflowd: %s: row '%s' is not a JSON object: left as it is, not used\n",
				table_name[t], key);
		json_decref(row);
	}
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? 0 : db_fail(s, e, table_name[t]);
}

int store_add_sample(struct store *s, const struct store_sample *x, double keep_from, struct gf_err *e)
{
	sqlite3_stmt *q = s->st[ST_ADD_SAMPLE], *trim = s->st[ST_TRIM_SAMPLES];

	s->full = false;
	sqlite3_bind_double(q, 1, x->t);
	sqlite3_bind_int64(q, 2, x->gpus_used);
	sqlite3_bind_int64(q, 3, x->gpus_total);
	sqlite3_bind_int64(q, 4, x->queued);
	sqlite3_bind_int64(q, 5, x->running);
	sqlite3_bind_int64(q, 6, x->held);
	if (step_done(s, q, e, "recording a history sample"))
		return -1;
	sqlite3_bind_double(trim, 1, keep_from);
	return step_done(s, trim, e, "trimming the history");
}

int store_each_sample(struct store *s, double from, store_sample_cb cb, void *arg, struct gf_err *e)
{
	sqlite3_stmt *q;
	int rc;

	if (sqlite3_prepare_v2(s->db, "SELECT t, gpus_used, gpus_total, queued, running, held FROM history "
				      "WHERE t >= ? ORDER BY t", -1, &q, NULL) != SQLITE_OK)
		return db_fail(s, e, "reading the history");
	sqlite3_bind_double(q, 1, from);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_sample x = {
			.t = sqlite3_column_double(q, 0),
			.gpus_used = sqlite3_column_int64(q, 1),
			.gpus_total = sqlite3_column_int64(q, 2),
			.queued = sqlite3_column_int64(q, 3),
			.running = sqlite3_column_int64(q, 4),
			.held = sqlite3_column_int64(q, 5),
		};

		cb(arg, &x);
	}
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? 0 : db_fail(s, e, "reading the history");
}
