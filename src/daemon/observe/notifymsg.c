/* notifymsg.c — what a notification says: the JSON payload of webhooks
 * (docs/notifications.md) and the plain-text mail, headers included (RFC
 * 5322; text that is not ASCII as RFC 2047 encoded words). Pure: no I/O. */
#include "notifymsg.h"

#include <event2/buffer.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void rfc3339(double t, char *buf, size_t size)
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

const char *const notify_payload_job_fields[] = {
	"id", "name", "user", "state", "reason", "project", "gpus", "gpu_ids", "exit_code", "exit_signal",
	"submit_time", "start_time", "end_time", "time_limit_secs", "array_task_id", "attempt", "max_retries",
	NULL,
};

json_t *notify_payload(const char *host, const char *event, const char *what, json_t *obj)
{
	char ts[40];
	json_t *p;

	rfc3339((double)time(NULL), ts, sizeof ts);
	p = json_pack("{s:s,s:s}", "event", event, "timestamp", ts);
	if (what && obj)
		json_object_set_new(p, what, obj);
	json_object_set_new(p, "scheduler", json_pack("{s:s,s:s}", "host", host, "version", GFLOW_VERSION));
	return p;
}

/* s for a header line: control characters become '?'. */
static void header_text(const char *s, char *out, size_t size)
{
	size_t k = 0;

	for (; *s && k + 1 < size; s++)
		out[k++] = ((unsigned char)*s < ' ' || *s == 0x7f) ? '?' : *s;
	out[k] = '\0';
}

/* Add a header's text: as is when ASCII, else as RFC 2047 encoded words
 * (UTF-8, base64) of at most 45 bytes each, on folded lines. */
static void add_header_value(struct evbuffer *b, const char *s)
{
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), i = 0;
	bool ascii = true;

	for (size_t k = 0; k < n; k++)
		ascii &= p[k] < 0x80;
	if (ascii) {
		evbuffer_add(b, s, n);
		return;
	}
	while (i < n) {
		size_t len = n - i < 45 ? n - i : 45;

		while (i + len < n && (p[i + len] & 0xc0) == 0x80)	/* whole characters */
			len--;
		evbuffer_add_printf(b, "%s=?UTF-8?B?", i ? "\r\n " : "");
		for (size_t k = 0; k < len; k += 3) {
			uint32_t v = (uint32_t)p[i + k] << 16 | (k + 1 < len ? (uint32_t)p[i + k + 1] << 8 : 0) |
				     (k + 2 < len ? p[i + k + 2] : 0);
			char q[4] = { b64[v >> 18], b64[(v >> 12) & 63], k + 1 < len ? b64[(v >> 6) & 63] : '=',
				      k + 2 < len ? b64[v & 63] : '=' };

			evbuffer_add(b, q, 4);
		}
		evbuffer_add(b, "?=", 2);
		i += len;
	}
}

/* "Name <addr>" or "addr" for From/To: only the name may be encoded. */
static void add_mailbox(struct evbuffer *b, const char *s)
{
	const char *lt = strchr(s, '<');
	size_t n = lt ? (size_t)(lt - s) : 0;
	char name[512];

	while (n && s[n - 1] == ' ')
		n--;
	if (!lt || !n || n >= sizeof name) {
		add_header_value(b, s);
		return;
	}
	memcpy(name, s, n);
	name[n] = '\0';
	add_header_value(b, name);
	evbuffer_add_printf(b, " %s", lt);
}

/* A body line's value: control characters (but tabs) become '?'. */
static void add_body_text(struct evbuffer *b, const char *s)
{
	for (; *s; s++) {
		char c = ((unsigned char)*s < ' ' && *s != '\t') || *s == 0x7f ? '?' : *s;

		evbuffer_add(b, &c, 1);
	}
}

static void add_scalars(struct evbuffer *b, json_t *o)
{
	const char *k;
	json_t *v;

	json_object_foreach(o, k, v) {
		char *text;

		if (json_is_null(v))
			continue;
		if (!(text = json_is_string(v) ? strdup(json_string_value(v))
					       : json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT)))
			continue;
		evbuffer_add_printf(b, "  %-16s ", k);
		add_body_text(b, text);
		evbuffer_add(b, "\r\n", 2);
		free(text);
	}
}

char *notify_mail(const char *host, unsigned long long seq, const struct gf_email *m, char *const *to, size_t nto,
		  const char *event, json_t *p)
{
	json_t *job = json_object_get(p, "job"), *gpu = json_object_get(p, "gpu");
	struct evbuffer *b = evbuffer_new();
	char subject[600], what[300], date[64], from[512], name[200];
	time_t t = time(NULL);
	struct tm tm;
	char *out;
	size_t len;

	if (job) {
		header_text(json_string_value(json_object_get(job, "name")) ?
				    json_string_value(json_object_get(job, "name")) : "",
			    name, sizeof name);
		snprintf(what, sizeof what, "job %lld%s%s%s: %s", (long long)json_integer_value(json_object_get(job, "id")),
			 name[0] ? " (" : "", name, name[0] ? ")" : "", event + 4);
	} else if (gpu) {
		snprintf(what, sizeof what, "GPU %lld is available",
			 (long long)json_integer_value(json_object_get(gpu, "index")));
	} else {
		snprintf(what, sizeof what, "%s", event);
	}
	snprintf(subject, sizeof subject, "%.200s%sgflow on %.64s: %.200s", m->subject_prefix ? m->subject_prefix : "",
		 m->subject_prefix ? " " : "", host, what);
	header_text(subject, subject, sizeof subject);
	header_text(m->from, from, sizeof from);
	localtime_r(&t, &tm);
	strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S %z", &tm);
	evbuffer_add_printf(b, "Date: %s\r\nFrom: ", date);
	add_mailbox(b, from);
	evbuffer_add_printf(b, "\r\nTo: ");
	for (size_t i = 0; i < nto; i++) {
		evbuffer_add_printf(b, "%s", i ? ",\r\n " : "");
		add_mailbox(b, to[i]);
	}
	evbuffer_add_printf(b, "\r\nSubject: ");
	add_header_value(b, subject);
	evbuffer_add_printf(b, "\r\nMessage-ID: <gflow.%lld.%d.%llu@%s>\r\n", (long long)t, (int)getpid(),
			    seq, host);
	evbuffer_add_printf(b, "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n"
			       "Content-Transfer-Encoding: 8bit\r\nX-Gflow-Event: %s\r\n\r\n", event);
	evbuffer_add_printf(b, "gflow on %s: ", host);
	add_body_text(b, what);
	evbuffer_add_printf(b, "\r\n\r\nevent: %s\r\ntime: %s\r\n", event,
			    json_string_value(json_object_get(p, "timestamp")));
	static const char *const parts[] = { "job", "gpu", "reservation" };
	for (size_t i = 0; i < 3; i++) {
		json_t *o = json_object_get(p, parts[i]);

		if (json_is_object(o)) {
			evbuffer_add_printf(b, "\r\n%s:\r\n", parts[i]);
			add_scalars(b, o);
		}
	}
	evbuffer_add_printf(b, "\r\n-- \r\ngflow %s on %s\r\n", GFLOW_VERSION, host);
	len = evbuffer_get_length(b);
	out = malloc(len + 1);
	if (!out)
		abort();
	evbuffer_remove(b, out, len);
	out[len] = '\0';
	evbuffer_free(b);
	return out;
}
