/* jobrow.c — a stored job row read without a JSON tree (jobw.c writes it).
 *
 * Loading 100,000 jobs through json_loads + job_from_json spends most of the
 * daemon's start building and freeing jansson objects. job_from_row reads
 * the row's text in one scan into spans of the fields job_from_json looks
 * at, and fills the job from those spans. It reads only rows it can read
 * exactly as job_from_json would: plain ASCII without \u escapes, fields of
 * the types the daemon writes. Anything else (an old or hand-made row, a
 * broken one) returns NULL, and the caller goes the json_loads way, which
 * also words the errors. Nested values (params, gpu_usage) are parsed by
 * jansson from their own span. */
#include "job.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decimal.h"

enum field {
	F_NAME, F_USER, F_UID, F_PROJECT, F_STATE, F_REASON, F_COMMAND, F_SCRIPT, F_CWD, F_LOG_DIR,
	F_LOG_SEQ, F_ENV_ID, F_GPUS, F_SHARED, F_GPU_MEMORY_MB, F_MEMORY_MB, F_TIME_LIMIT_SECS, F_PRIORITY,
	F_PRIORITY_BY_ADMIN, F_CONDA_ENV, F_NOTIFY_EMAIL, F_NOTIFY_ON, F_DEPENDS_ON, F_DEP_MODE, F_AUTO_CANCEL, F_BEGIN_AT,
	F_ARRAY_TASK_ID, F_GROUP_ID, F_MAX_CONCURRENT, F_MAX_RETRIES, F_ATTEMPT, F_RETRY_OF, F_REDO_OF,
	F_PARAMS, F_COMMAND_TEMPLATE, F_SUBMIT_TIME, F_START_TIME, F_END_TIME, F_EXIT_CODE, F_EXIT_SIGNAL, F_GPU_IDS,
	F_MEMORY_ENFORCED, F_EXECUTOR, F_TMUX_SESSION, F_TMUX_SOCKET, F_ACTIVE, F_RUNNER_PID,
	F_RUNNER_TICKS, F_RUN_SEQ, F_GPU_USAGE, F_CLUSTER, F_SLURM_ID, F_REMOTE_LOG, F_RLIMITS, F_CPUS, F_CPU_IDS, F_INTERACTIVE, F_PREEMPT, F_N
};

static const char *const field_names[F_N] = {
	"name", "user", "uid", "project", "state", "reason", "command", "script", "cwd", "log_dir",
	"log_seq", "env_id", "gpus", "shared", "gpu_memory_mb", "memory_mb", "time_limit_secs", "priority",
	"priority_by_admin", "conda_env", "notify_email", "notify_on", "depends_on", "dep_mode", "auto_cancel", "begin_at",
	"array_task_id", "group_id", "max_concurrent", "max_retries", "attempt", "retry_of", "redo_of",
	"params", "command_template", "submit_time", "start_time", "end_time", "exit_code", "exit_signal", "gpu_ids",
	"memory_enforced", "executor", "tmux_session", "tmux_socket", "active", "runner_pid",
	"runner_ticks", "run_seq", "gpu_usage", "cluster", "slurm_id", "remote_log", "rlimits", "cpus", "cpu_ids", "interactive", "preempt",
};

enum kind { V_ABSENT, V_NULL, V_TRUE, V_FALSE, V_INT, V_REAL, V_STR, V_ARR, V_OBJ };

/* One value: its kind and its text (strings without their quotes). */
struct span {
	enum kind kind;
	const char *p;
	size_t n;
	bool escaped;		/* a string with \ escapes */
};

struct scan {
	const char *p, *end;
	bool bad;		/* not a row this reader takes */
};

/* ---- field names ------------------------------------------------------- */

#define NSLOTS 128

static unsigned name_hash(const char *p, size_t n)
{
	unsigned h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 16777619u;
	return h;
}

/* The bytes that end a string's plain run: its quote, an escape, control
 * characters and bytes beyond ASCII (both refused). */
static bool string_stop[256];

static signed char slots[NSLOTS];
static size_t lens[F_N];	/* strlen of each name: not taken per key of a million rows */
/* after[k + 1]: 1 + the field that followed field k (-1: the row's
 * start) in the last row this thread read (0: none yet). Rows are written
 * by one writer in one order, so the next key is nearly always that one:
 * one compare, no hash. */
static _Thread_local unsigned char after[F_N + 1];

/* The tables, made on first use (job_row_scan_size makes them before
 * another thread scans). */
static void make_tables(void)
{
	static bool made;
	unsigned i;

	if (made)
		return;
	for (int c = 0; c < 256; c++)
		string_stop[c] = c < 0x20 || c >= 0x80 || c == '"' || c == '\\';
	memset(slots, -1, sizeof slots);
	for (int f = 0; f < F_N; f++) {
		lens[f] = strlen(field_names[f]);
		i = name_hash(field_names[f], lens[f]) % NSLOTS;
		while (slots[i] >= 0)
			i = (i + 1) % NSLOTS;
		slots[i] = (signed char)f;
	}
	made = true;
}

/* A key's few bytes, compared in line (a call to memcmp costs more). */
static bool same(const char *a, const char *b, size_t n)
{
	while (n--)
		if (*a++ != *b++)
			return false;
	return true;
}

/* The field a key names, or -1; prev: the row's field before it (-1:
 * none). */
static int field_of(const char *p, size_t n, int prev)
{
	int guess = after[prev + 1] - 1;
	unsigned i;

	if (guess >= 0 && lens[guess] == n && same(field_names[guess], p, n))
		return guess;
	for (i = name_hash(p, n) % NSLOTS; slots[i] >= 0; i = (i + 1) % NSLOTS) {
		int f = slots[i];

		if (lens[f] == n && same(field_names[f], p, n)) {
			after[prev + 1] = (unsigned char)(f + 1);
			return f;
		}
	}
	return -1;
}

/* ---- scanning ---------------------------------------------------------- */

static void ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

/* A string at s->p (on its opening quote). Plain ASCII only; \u escapes
 * are left to jansson. */
static void scan_string(struct scan *s, struct span *v)
{
	const char *p = ++s->p;

	v->kind = V_STR;
	v->escaped = false;
	for (;;) {
		while (p < s->end && !string_stop[(unsigned char)*p])
			p++;
		if (p >= s->end || *p == '"')
			break;
		if (*p != '\\' || p + 1 >= s->end || !p[1] || !strchr("\"\\/bfnrt", p[1])) {
			s->bad = true;
			return;
		}
		v->escaped = true;
		p += 2;
	}
	if (p >= s->end) {
		s->bad = true;
		return;
	}
	v->p = s->p;
	v->n = (size_t)(p - s->p);
	s->p = p + 1;
}

static bool digit(const char *p, const char *end)
{
	return p < end && *p >= '0' && *p <= '9';
}

/* A number by JSON's grammar: integer when it has no fraction or exponent. */
static void scan_number(struct scan *s, struct span *v)
{
	const char *p = s->p;

	v->kind = V_INT;
	if (p < s->end && *p == '-')
		p++;
	if (!digit(p, s->end)) {
		s->bad = true;
		return;
	}
	if (*p == '0')
		p++;
	else
		while (digit(p, s->end))
			p++;
	if (p < s->end && *p == '.') {
		v->kind = V_REAL;
		if (!digit(++p, s->end)) {
			s->bad = true;
			return;
		}
		while (digit(p, s->end))
			p++;
	}
	if (p < s->end && (*p == 'e' || *p == 'E')) {
		v->kind = V_REAL;
		p++;
		if (p < s->end && (*p == '+' || *p == '-'))
			p++;
		if (!digit(p, s->end)) {
			s->bad = true;
			return;
		}
		while (digit(p, s->end))
			p++;
	}
	v->p = s->p;
	v->n = (size_t)(p - s->p);
	s->p = p;
}

static void scan_value(struct scan *s, struct span *v, int depth);

/* An array or object: only its extent is kept (and checked). */
static void scan_nested(struct scan *s, struct span *v, int depth)
{
	const char *start = s->p;
	char close = *s->p == '[' ? ']' : '}';
	struct span item;

	v->kind = close == ']' ? V_ARR : V_OBJ;
	v->p = start;
	if (depth > 32) {
		s->bad = true;
		return;
	}
	s->p++;
	ws(s);
	if (s->p < s->end && *s->p == close) {
		s->p++;
		v->n = (size_t)(s->p - start);
		return;
	}
	for (;;) {
		if (close == '}') {
			if (s->p >= s->end || *s->p != '"')
				break;
			scan_string(s, &item);
			ws(s);
			if (s->bad || s->p >= s->end || *s->p != ':')
				break;
			s->p++;
			ws(s);
		}
		scan_value(s, &item, depth + 1);
		ws(s);
		if (s->bad || s->p >= s->end)
			break;
		if (*s->p == close) {
			s->p++;
			v->n = (size_t)(s->p - start);
			return;
		}
		if (*s->p != ',')
			break;
		s->p++;
		ws(s);
	}
	s->bad = true;
}

static bool literal(struct scan *s, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n))
		return false;
	s->p += n;
	return true;
}

static void scan_value(struct scan *s, struct span *v, int depth)
{
	if (s->p >= s->end) {
		s->bad = true;
		return;
	}
	switch (*s->p) {
	case '"':
		scan_string(s, v);
		return;
	case '[':
	case '{':
		scan_nested(s, v, depth);
		return;
	case 't':
		v->kind = V_TRUE;
		s->bad |= !literal(s, "true");
		return;
	case 'f':
		v->kind = V_FALSE;
		s->bad |= !literal(s, "false");
		return;
	case 'n':
		v->kind = V_NULL;
		s->bad |= !literal(s, "null");
		return;
	default:
		scan_number(s, v);
	}
}

/* The row's top-level object into one span per known field (a key given
 * twice: the last one counts, as in jansson). */
static bool scan_row(const char *text, size_t len, struct span *f)
{
	struct scan s = { text, text + len, false };
	struct span key, v;
	int prev = -1;

	make_tables();
	memset(f, 0, F_N * sizeof *f);
	ws(&s);
	if (s.p >= s.end || *s.p != '{')
		return false;
	s.p++;
	ws(&s);
	if (s.p < s.end && *s.p == '}')
		s.p++;
	else
		for (;;) {
			int k;

			if (s.p >= s.end || *s.p != '"')
				return false;
			scan_string(&s, &key);
			ws(&s);
			if (s.bad || key.escaped || s.p >= s.end || *s.p != ':')
				return false;
			s.p++;
			ws(&s);
			scan_value(&s, &v, 1);
			if (s.bad)
				return false;
			if ((k = field_of(key.p, key.n, prev)) >= 0) {
				f[k] = v;
				prev = k;
			}
			ws(&s);
			if (s.p < s.end && *s.p == ',') {
				s.p++;
				ws(&s);
				continue;
			}
			if (s.p < s.end && *s.p == '}') {
				s.p++;
				break;
			}
			return false;
		}
	ws(&s);
	return s.p == s.end;
}

/* ---- values ------------------------------------------------------------ */

/* A string's text, escapes undone. */
static char *str_dup(const struct span *v)
{
	char *out = malloc(v->n + 1), *o = out;

	if (!out)
		abort();
	if (!v->escaped) {
		memcpy(out, v->p, v->n);
		out[v->n] = 0;
		return out;
	}
	for (size_t i = 0; i < v->n; i++) {
		char c = v->p[i];

		if (c == '\\') {
			static const char from[] = "bfnrt", to[] = "\b\f\n\r\t";
			const char *at = strchr(from, v->p[++i]);

			c = at ? to[at - from] : v->p[i];	/* \" \\ \/ */
		}
		*o++ = c;
	}
	*o = 0;
	return out;
}

static bool get_str(const struct span *v, char **out)
{
	*out = v->kind == V_STR ? str_dup(v) : NULL;
	return true;
}

/* A string field that repeats from job to job: its pooled copy. The
 * last few pooled strings are compared first: rows in a row mostly have
 * the same user, directory and limits, and a compare of the bytes costs
 * less than the pool's hash of them (a start with 1,000,000 jobs). Pooled
 * strings live as long as the daemon, so the pointers stay good. */
#define RECENT 8

static char *shared_of(const struct span *v)
{
	static struct {
		const char *s;
		size_t n;
	} recent[RECENT];
	static unsigned next;
	char buf[256], *t, *out;

	if (!v->escaped)
		for (unsigned i = 0; i < RECENT; i++)
			if (recent[i].s && recent[i].n == v->n && !memcmp(recent[i].s, v->p, v->n))
				return (char *)recent[i].s;
	if (v->escaped || v->n >= sizeof buf) {
		t = str_dup(v);
		out = job_str_shared(t);
		free(t);
		return out;
	}
	memcpy(buf, v->p, v->n);
	buf[v->n] = 0;
	out = job_str_shared(buf);
	if (!memchr(buf, 0, v->n)) {	/* its text is the span's */
		recent[next % RECENT].s = out;
		recent[next % RECENT].n = v->n;
		next++;
	}
	return out;
}

static bool get_shared(const struct span *v, char **out)
{
	*out = v->kind == V_STR ? shared_of(v) : NULL;
	return true;
}

/* The byte-string fields: a string, or absent/null; the {"base64": …}
 * form is left to jansson. */
static bool get_bytes(const struct span *v, char **out, bool shared)
{
	*out = NULL;
	if (v->kind == V_STR)
		*out = shared ? shared_of(v) : str_dup(v);
	return v->kind == V_STR || v->kind == V_ABSENT || v->kind == V_NULL;
}

static bool int_of(const char *p, size_t n, int64_t *out)
{
	char buf[32], *end;
	long long x;

	if (n >= sizeof buf)
		return false;
	if (n && n < 19 && (p[0] == '-' ? n > 1 : true)) {	/* fits in 18 digits: no overflow */
		bool neg = p[0] == '-';
		int64_t v = 0;
		size_t i;

		for (i = neg; i < n && p[i] >= '0' && p[i] <= '9'; i++)
			v = v * 10 + (p[i] - '0');
		if (i == n) {
			*out = neg ? -v : v;
			return true;
		}
	}
	memcpy(buf, p, n);
	buf[n] = 0;
	errno = 0;
	x = strtoll(buf, &end, 10);
	if (errno || *end)
		return false;	/* jansson refuses it too: its own words then */
	*out = x;
	return true;
}

/* get_int of job.c: an integer, else 0. */
static bool get_int(const struct span *v, int64_t *out)
{
	*out = 0;
	return v->kind != V_INT || int_of(v->p, v->n, out);
}

static bool get_num(const struct span *v, double *out)
{
	char buf[64], *end;
	int64_t i;

	*out = 0;
	if (v->kind == V_INT) {
		if (!int_of(v->p, v->n, &i))
			return false;
		*out = (double)i;
	} else if (v->kind == V_REAL) {
		if (v->n >= sizeof buf)
			return false;
		memcpy(buf, v->p, v->n);
		buf[v->n] = 0;
		if (gf_decimal(buf, out) == 0)	/* the times: exact, without strtod's slow path */
			return true;
		errno = 0;
		*out = strtod(buf, &end);
		if (errno || *end)
			return false;
	}
	return true;
}

/* The elements of an array of strings (ints when `ints`), each handed to
 * `each`; false when an element is of another kind. */
static bool each_item(const struct span *a, bool ints, bool (*each)(const struct span *, void *), void *arg)
{
	struct scan s = { a->p + 1, a->p + a->n - 1, false };
	struct span v;

	ws(&s);
	while (s.p < s.end) {
		scan_value(&s, &v, 1);
		if (s.bad || v.kind != (ints ? V_INT : V_STR) || !each(&v, arg))
			return false;
		ws(&s);
		if (s.p < s.end && *s.p == ',')
			s.p++;
		ws(&s);
	}
	return true;
}

struct strv_build {
	char **v;
	size_t n;
};

static bool add_str(const struct span *v, void *arg)
{
	struct strv_build *b = arg;

	b->v[b->n++] = shared_of(v);
	return true;
}

struct ints_build {
	int64_t *v;
	size_t n;
	uint64_t mask;
};

static bool add_int(const struct span *v, void *arg)
{
	struct ints_build *b = arg;
	int64_t x;

	if (!int_of(v->p, v->n, &x))
		return false;
	if (b->v)
		b->v[b->n] = x;
	b->n++;
	if (x >= 0 && x < 64)
		b->mask |= 1ULL << x;
	return true;
}

/* Commas in an array's text bound its length (strings hold no commas that
 * count: a bound is all that is needed). */
static size_t items_bound(const struct span *a)
{
	size_t n = 1;

	for (size_t i = 0; i < a->n; i++)
		n += a->p[i] == ',';
	return n;
}

static json_t *nested(const struct span *v)
{
	return json_loadb(v->p, v->n, 0, NULL);
}

static bool read_fields(struct job *j, struct job_more *m, const struct span *f)
{
	int64_t x;
	char *mode, *exec;
	bool ok = true;

	{
		struct strv_build b = { calloc(items_bound(&f[F_COMMAND]) + 1, sizeof(char *)), 0 };

		if (!b.v)
			abort();
		j->argv = b.v;
		if (f[F_COMMAND].kind != V_ARR || !each_item(&f[F_COMMAND], false, add_str, &b))
			return false;
	}
	ok &= get_shared(&f[F_NAME], &j->name) && get_shared(&f[F_USER], &j->user);
	ok &= get_int(&f[F_UID], &x);
	j->uid = (uid_t)x;
	ok &= get_shared(&f[F_PROJECT], &j->project) && get_shared(&f[F_REASON], &j->reason);
	ok &= get_bytes(&f[F_SCRIPT], &m->script, false) && get_bytes(&f[F_CWD], &j->cwd, true) &&
	      get_bytes(&f[F_LOG_DIR], &m->log_dir, true);
	ok &= get_int(&f[F_LOG_SEQ], &m->log_seq);
	ok &= get_int(&f[F_ENV_ID], &j->env_id);
	ok &= get_int(&f[F_GPUS], &x);
	j->gpus = (int)x;
	j->shared = f[F_SHARED].kind == V_TRUE;
	ok &= get_int(&f[F_GPU_MEMORY_MB], &m->gpu_memory_mb) && get_int(&f[F_MEMORY_MB], &j->memory_mb) &&
	      get_int(&f[F_TIME_LIMIT_SECS], &j->time_limit_secs);
	ok &= get_int(&f[F_PRIORITY], &x);
	j->priority = (int)x;
	j->priority_by_admin = f[F_PRIORITY_BY_ADMIN].kind == V_TRUE;
	ok &= get_shared(&f[F_CONDA_ENV], &m->conda_env) && get_str(&f[F_NOTIFY_EMAIL], &m->notify_email) &&
	      get_str(&f[F_NOTIFY_ON], &m->notify_on);
	if (f[F_DEPENDS_ON].kind == V_ARR && f[F_DEPENDS_ON].n > 2) {
		struct ints_build b = { calloc(items_bound(&f[F_DEPENDS_ON]), sizeof(int64_t)), 0, 0 };

		if (!b.v)
			abort();
		j->deps = b.v;
		ok &= each_item(&f[F_DEPENDS_ON], true, add_int, &b);
		j->ndeps = b.n;
	} else if (f[F_DEPENDS_ON].kind == V_ARR)
		ok &= each_item(&f[F_DEPENDS_ON], true, add_int, &(struct ints_build){ 0 });
	get_str(&f[F_DEP_MODE], &mode);
	j->dep_any = mode && !strcmp(mode, "any");
	free(mode);
	j->auto_cancel = f[F_AUTO_CANCEL].kind != V_FALSE;
	ok &= get_num(&f[F_BEGIN_AT], &m->begin_at);
	ok &= get_int(&f[F_ARRAY_TASK_ID], &x);
	job_split_u32(x, &j->array_task_id32, &m->array_task_id_wide);
	ok &= get_int(&f[F_GROUP_ID], &x);
	job_split_u32(x, &j->group_id32, &m->group_id_wide);
	ok &= get_int(&f[F_MAX_CONCURRENT], &x);
	j->max_concurrent = (int)x;
	ok &= get_int(&f[F_MAX_RETRIES], &x);
	j->max_retries = (int)x;
	ok &= get_int(&f[F_ATTEMPT], &x);
	j->attempt = (int)x;
	ok &= get_int(&f[F_RETRY_OF], &m->retry_of) && get_int(&f[F_REDO_OF], &m->redo_of);
	if (f[F_PARAMS].kind == V_OBJ && f[F_PARAMS].n > 2) {
		json_t *p = nested(&f[F_PARAMS]);

		if (!json_is_object(p)) {
			json_decref(p);
			return false;
		}
		m->params = json_object_size(p) ? p : (json_decref(p), NULL);
	}
	if (f[F_COMMAND_TEMPLATE].kind == V_ARR) {
		json_t *t = nested(&f[F_COMMAND_TEMPLATE]);

		if (!json_is_array(t)) {
			json_decref(t);
			return false;
		}
		m->command_template = t;
	}
	ok &= get_num(&f[F_SUBMIT_TIME], &j->submit_time) && get_num(&f[F_START_TIME], &j->start_time) &&
	      get_num(&f[F_END_TIME], &j->end_time);
	if (f[F_EXIT_SIGNAL].kind == V_INT) {
		j->has_exit = true;
		ok &= get_int(&f[F_EXIT_SIGNAL], &x) && x >= INT16_MIN && x <= INT16_MAX;
		j->exit_signal = (int16_t)x;
	} else if (f[F_EXIT_CODE].kind == V_INT) {
		j->has_exit = true;
		ok &= get_int(&f[F_EXIT_CODE], &x) && x >= INT16_MIN && x <= INT16_MAX;
		j->exit_code = (int16_t)x;
	}
	if (f[F_GPU_IDS].kind == V_ARR) {
		struct ints_build b = { 0 };

		ok &= each_item(&f[F_GPU_IDS], true, add_int, &b);
		j->gpu_mask = b.mask;
	} else if (f[F_GPU_IDS].kind != V_ABSENT && f[F_GPU_IDS].kind != V_NULL)
		return false;	/* job_from_json walks it as it comes */
	j->memory_enforced = f[F_MEMORY_ENFORCED].kind == V_TRUE ? 1 : f[F_MEMORY_ENFORCED].kind == V_FALSE ? 0 : -1;
	get_str(&f[F_EXECUTOR], &exec);
	j->executor = exec && !strcmp(exec, "process") ? EXEC_PROCESS : EXEC_TMUX;
	free(exec);
	ok &= get_str(&f[F_TMUX_SESSION], &j->tmux_session) && get_shared(&f[F_TMUX_SOCKET], &j->tmux_socket);
	j->active = f[F_ACTIVE].kind == V_TRUE;
	ok &= get_int(&f[F_RUNNER_PID], &x);
	j->runner_pid = (pid_t)x;
	ok &= get_int(&f[F_RUNNER_TICKS], &x);
	j->runner_ticks = (unsigned long long)x;
	ok &= get_int(&f[F_RUN_SEQ], &x) && x >= 0 && x <= UINT32_MAX;
	j->run_seq = (uint32_t)x;
	if (f[F_GPU_USAGE].kind == V_OBJ && !(m->gpu_usage = nested(&f[F_GPU_USAGE])))
		return false;
	ok &= get_str(&f[F_CLUSTER], &m->cluster) && get_str(&f[F_SLURM_ID], &m->slurm_id) &&
	      get_str(&f[F_REMOTE_LOG], &m->remote_log);
	ok &= get_shared(&f[F_RLIMITS], &j->rlimits);
	ok &= get_int(&f[F_CPUS], &m->cpus) && get_shared(&f[F_CPU_IDS], &m->cpu_ids);
	if (m->cpus <= 1)
		m->cpus = 0;	/* 1, the default (old rows have no key) */
	m->interactive = f[F_INTERACTIVE].kind == V_TRUE;	/* old rows: absent */
	if (f[F_PREEMPT].kind == V_OBJ) {
		json_t *p = nested(&f[F_PREEMPT]);

		if (!p)
			return false;
		job_preempt_read(m, p);
		json_decref(p);
	}	/* anything else: none, as job_from_json reads it */
	return ok;
}

/* A row scanned (job_row_scan): its fields' spans, pointing into its text. */
struct scanned {
	bool ok;
	struct span f[F_N];
};

size_t job_row_scan_size(void)
{
	make_tables();	/* before any other thread scans */
	return sizeof(struct scanned);
}

void job_row_scan(const char *text, size_t len, void *slot)
{
	struct scanned *r = slot;

	r->ok = text && scan_row(text, len, r->f) && r->f[F_STATE].kind == V_STR;
}

struct job *job_from_scan(const void *slot)
{
	const struct scanned *r = slot;
	struct job_more m = { 0 };
	struct job *j;
	char *state;
	bool ok;
	int st;

	if (!r->ok)
		return NULL;
	get_str(&r->f[F_STATE], &state);
	st = job_state_parse(state);
	free(state);
	if (st < 0)
		return NULL;
	j = job_new();
	j->state = (enum job_state)st;
	ok = read_fields(j, &m, r->f);
	job_more_adopt(j, &m);	/* job_free frees what was read */
	if (!ok) {
		job_free(j);
		return NULL;
	}
	job_share_argv(j);
	return j;
}

struct job *job_from_row(const char *text, size_t len)
{
	struct scanned r;

	job_row_scan(text, len, &r);
	return job_from_scan(&r);
}
