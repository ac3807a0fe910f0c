/* format.c — display formatting of durations, sizes, times, exit statuses,
 * states and argv lines. */
#include "format.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "bytes.h"

/* v in decimal at p, at least `width` digits: the end. */
static char *put_num(char *p, uint64_t v, int width)
{
	char tmp[24];
	int n = 0;

	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) || n < width);
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* No printf: a listing of 1,000,000 jobs formats one for each row, and
 * musl's printf was a tenth of such a listing's time. */
void fmt_duration(int64_t secs, char *buf, size_t size)
{
	char out[64], *p = out;
	uint64_t u;
	size_t n;

	if (secs < 0)
		secs = 0;
	u = (uint64_t)secs;
	if (u >= 86400) {
		p = put_num(p, u / 86400, 1);
		*p++ = '-';
		p = put_num(p, u / 3600 % 24, 2);
	} else
		p = put_num(p, u / 3600, 1);
	*p++ = ':';
	p = put_num(p, u / 60 % 60, 2);
	*p++ = ':';
	p = put_num(p, u % 60, 2);
	if (!size)
		return;
	n = (size_t)(p - out) < size - 1 ? (size_t)(p - out) : size - 1;
	memcpy(buf, out, n);
	buf[n] = '\0';
}

void fmt_job_elapsed(const json_t *job, double now, char *buf, size_t size)
{
	double start = jnum(job, "start_time", 0), end = jnum(job, "end_time", 0);

	if (start <= 0) {
		snprintf(buf, size, "0:00");
		return;
	}
	if (end <= 0)
		end = now;
	fmt_duration((int64_t)(end - start), buf, size);
}

void fmt_mb(int64_t mb, char *buf, size_t size)
{
	if (mb > 0 && mb % (1024 * 1024) == 0)
		snprintf(buf, size, "%lldT", (long long)(mb / (1024 * 1024)));
	else if (mb > 0 && mb % 1024 == 0)
		snprintf(buf, size, "%lldG", (long long)(mb / 1024));
	else
		snprintf(buf, size, "%lldM", (long long)mb);
}

void fmt_mb_human(int64_t mb, char *buf, size_t size)
{
	if (mb < 1024) {
		snprintf(buf, size, "%lldM", (long long)(mb < 0 ? 0 : mb));
	} else if (mb % 1024 == 0 || mb >= 100 * 1024) {
		snprintf(buf, size, "%.0fG", (double)mb / 1024);
	} else {
		snprintf(buf, size, "%.1fG", (double)mb / 1024);
	}
}

void fmt_local_time(double t, char *buf, size_t size)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (t <= 0 || !localtime_r(&tt, &tm) ||
	    strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		snprintf(buf, size, "-");
}

static const struct {
	int sig;
	const char *name;
} signal_names[] = {
	{ SIGHUP, "SIGHUP" }, { SIGINT, "SIGINT" }, { SIGQUIT, "SIGQUIT" },
	{ SIGILL, "SIGILL" }, { SIGTRAP, "SIGTRAP" }, { SIGABRT, "SIGABRT" },
	{ SIGBUS, "SIGBUS" }, { SIGFPE, "SIGFPE" }, { SIGKILL, "SIGKILL" },
	{ SIGUSR1, "SIGUSR1" }, { SIGSEGV, "SIGSEGV" }, { SIGUSR2, "SIGUSR2" },
	{ SIGPIPE, "SIGPIPE" }, { SIGALRM, "SIGALRM" }, { SIGTERM, "SIGTERM" },
	{ SIGCHLD, "SIGCHLD" }, { SIGCONT, "SIGCONT" }, { SIGSTOP, "SIGSTOP" },
	{ SIGTSTP, "SIGTSTP" }, { SIGTTIN, "SIGTTIN" }, { SIGTTOU, "SIGTTOU" },
	{ SIGURG, "SIGURG" }, { SIGXCPU, "SIGXCPU" }, { SIGXFSZ, "SIGXFSZ" },
	{ SIGVTALRM, "SIGVTALRM" }, { SIGPROF, "SIGPROF" },
	{ SIGWINCH, "SIGWINCH" }, { SIGIO, "SIGIO" }, { SIGSYS, "SIGSYS" },
};

const char *fmt_signal_name(int sig)
{
	size_t i;

	for (i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++)
		if (signal_names[i].sig == sig)
			return signal_names[i].name;
	return NULL;
}

void fmt_exit(const json_t *job, int compact, char *buf, size_t size)
{
	const char *name;
	int sig;

	if (jhas(job, "exit_code")) {
		snprintf(buf, size, "%lld", (long long)jint(job, "exit_code", 0));
		return;
	}
	if (!jhas(job, "exit_signal")) {
		snprintf(buf, size, "-");
		return;
	}
	sig = (int)jint(job, "exit_signal", 0);
	name = fmt_signal_name(sig);
	if (compact && name)
		snprintf(buf, size, "%s", name);
	else if (compact)
		snprintf(buf, size, "signal %d", sig);
	else if (name)
		snprintf(buf, size, "signal %d (%s)", sig, name);
	else
		snprintf(buf, size, "signal %d", sig);
}

void fmt_text(struct sbuf *b, const char *s)
{
	size_t n = strlen(s), need = gf_escape(NULL, 0, s, n, 0);
	char *tmp = xmalloc(need + 1);

	gf_escape(tmp, need + 1, s, n, 0);
	sbuf_add(b, tmp, need);
	free(tmp);
}

char *fmt_escaped(const char *s)
{
	struct sbuf b = { 0 };

	fmt_text(&b, s ? s : "");
	return sbuf_take(&b);
}

void fmt_shell_word(struct sbuf *b, const char *w)
{
	const char *p;
	size_t n = strlen(w), need;
	int safe = *w != '\0';
	char *tmp;

	for (p = w; *p && safe; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "0123456789_@%+=:,./-", *p))
			safe = 0;
	if (safe) {
		sbuf_adds(b, w);
		return;
	}
	if (gf_needs_escape(w, n)) {
		need = gf_escape(NULL, 0, w, n, GF_ESC_SHELL);
		tmp = xmalloc(need + 1);
		gf_escape(tmp, need + 1, w, n, GF_ESC_SHELL);
		sbuf_adds(b, "$'");
		sbuf_add(b, tmp, need);
		sbuf_addc(b, '\'');
		free(tmp);
		return;
	}
	sbuf_addc(b, '\'');
	for (p = w; *p; p++) {
		if (*p == '\'')
			sbuf_adds(b, "'\\''");
		else
			sbuf_addc(b, *p);
	}
	sbuf_addc(b, '\'');
}

char *fmt_argv_line(const json_t *argv)
{
	struct sbuf b = { 0 };
	size_t i;

	for (i = 0; i < json_array_size(argv); i++) {
		char *w = gf_cstr_from_json(json_array_get(argv, i), "word",
		    NULL);

		if (i)
			sbuf_addc(&b, ' ');
		fmt_shell_word(&b, w ? w : "");
		free(w);
	}
	return sbuf_take(&b);
}

char *fmt_bytes_field(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	char *raw, *s;

	if (!v || json_is_null(v))
		return NULL;
	raw = gf_cstr_from_json(v, key, NULL);
	if (!raw)
		return NULL;
	s = fmt_escaped(raw);
	free(raw);
	return s;
}

/* Does msg say "job <id>" (any case; not followed by a digit)? */
static int names_job(const char *msg, const char *id)
{
	const char *p = msg;
	size_t n = strlen(id);

	while ((p = strcasestr(p, "job ")) != NULL) {
		p += 4;
		if (strncmp(p, id, n) == 0 && (p[n] < '0' || p[n] > '9'))
			return 1;
	}
	return 0;
}

void fmt_job_error(struct sbuf *b, const json_t *err, const char *fallback)
{
	json_t *id = json_object_get(err, "id");
	const char *msg = jstr(err, "error");
	char label[64] = "";
	int named = 0;

	if (!msg)
		msg = fallback;
	if (json_is_integer(id)) {
		snprintf(label, sizeof label, "%lld",
		    (long long)json_integer_value(id));
		named = names_job(msg, label);
	} else if (json_is_string(id)) {
		/* a reference the daemon could not resolve ("@~9") */
		snprintf(label, sizeof label, "%s", json_string_value(id));
		named = names_job(msg, label) || strstr(msg, label) != NULL;
	}
	if (*label && !named) {
		sbuf_adds(b, "job ");
		fmt_text(b, label);
		sbuf_adds(b, ": ");
	}
	fmt_text(b, msg);
}

static const struct {
	const char *name, *code;
} states[] = {
	{ "Queued", "PD" }, { "Hold", "H" }, { "Running", "R" },
	{ "Finished", "CD" }, { "Failed", "F" }, { "Cancelled", "CA" },
	{ "Timeout", "TO" },
};

const char *state_canonical(const char *s)
{
	static const struct {
		const char *word, *name;
	} extra[] = {
		{ "pending", "Queued" }, { "completed", "Finished" },
		{ "held", "Hold" }, { "canceled", "Cancelled" },
	};
	size_t i;

	for (i = 0; i < sizeof states / sizeof states[0]; i++)
		if (strcasecmp(s, states[i].name) == 0 ||
		    strcasecmp(s, states[i].code) == 0)
			return states[i].name;
	for (i = 0; i < sizeof extra / sizeof extra[0]; i++)
		if (strcasecmp(s, extra[i].word) == 0)
			return extra[i].name;
	return NULL;
}

const char *state_short(const char *name)
{
	size_t i;

	for (i = 0; name && i < sizeof states / sizeof states[0]; i++)
		if (strcmp(name, states[i].name) == 0)
			return states[i].code;
	return "?";
}

int state_is_ended(const char *name)
{
	return name && (strcmp(name, "Finished") == 0 ||
	    strcmp(name, "Failed") == 0 || strcmp(name, "Cancelled") == 0 ||
	    strcmp(name, "Timeout") == 0);
}

char *fmt_int_list(const json_t *arr)
{
	struct sbuf b = { 0 };
	size_t i;

	for (i = 0; i < json_array_size(arr); i++) {
		json_t *v = json_array_get(arr, i);

		if (i)
			sbuf_addc(&b, ',');
		if (json_is_integer(v))
			sbuf_addf(&b, "%lld", (long long)json_integer_value(v));
		else if (json_is_string(v))
			sbuf_adds(&b, json_string_value(v));
	}
	return sbuf_take(&b);
}
