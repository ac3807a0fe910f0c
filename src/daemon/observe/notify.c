/* notify.c — notifications: what is announced (job changes, idle GPUs,
 * reservations, start-up), to which targets ([[notifications.webhooks]],
 * [[notifications.emails]], a job's own --notify-email), and their
 * delivery by worker threads with libcurl (see notify.h).
 *
 * The loop thread builds every message and queues it; workers only move
 * bytes. Shared between them, under n->mu: the queue, the counters and
 * the results of test requests. A finished test request is handed back
 * to the loop through a pipe. */
#include "observe.h"

#include <errno.h>
#include <event2/buffer.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "curlapi.h"
#include "events.h"
#include "notifymsg.h"

#define QUEUE_MAX 1024		/* deliveries waiting, retries included */
#define BACKOFF_MAX 300.0	/* seconds between two attempts, at most */
#define DROP_LOG_SECS 10	/* a full queue is logged at most this often */

enum kind { WEBHOOK, EMAIL };

struct ntest;

struct delivery {
	struct delivery *next;
	enum kind kind;
	size_t target;		/* index in cfg.webhooks / cfg.emails */
	char *event;
	char *data;		/* the JSON payload, or the whole mail */
	char **rcpt;		/* mail: recipient addresses */
	size_t nrcpt;
	int attempt;		/* attempts made */
	double not_before;
	struct ntest *test;	/* a test request's, or NULL */
	size_t slot;
};

struct result {
	char target[48];
	char where[256];
	int ok;			/* 1 sent, 0 failed, -1 skipped */
	char detail[256];
};

struct ntest {
	struct notify *n;
	struct evhttp_request *req;	/* NULL once its connection closed */
	struct evhttp_connection *conn;
	char event[32];
	struct result *res;
	size_t nres, pending;
	struct ntest *next;		/* in n->tests */
	bool done;
};

struct notify {
	struct server *s;
	struct curlapi curl;		/* libcurl, loaded by notify_init */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t *threads;
	int nthreads;
	bool stop;
	struct delivery *head, *tail;
	size_t queued;
	unsigned long long sent, failed, dropped;
	time_t drop_logged;
	unsigned long long drop_logged_count;
	char **where_hook, **where_mail;	/* targets as logs show them (no secrets) */
	char host[256];
	uint64_t gpu_idle;		/* idle GPUs at the last look */
	bool gpu_seen;
	unsigned long long msg_seq;
	int pipe[2];			/* workers → loop: a test request is done */
	struct event *pipe_ev;
	struct ntest *tests;		/* waiting test requests */
};

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	if (!d)
		abort();
	return d;
}

static void delivery_free(struct delivery *d)
{
	if (!d)
		return;
	free(d->event);
	free(d->data);
	for (size_t i = 0; i < d->nrcpt; i++)
		free(d->rcpt[i]);
	free(d->rcpt);
	free(d);
}

/* A URL as logs may show it: no user:pass, no query. */
static char *shown_url(const char *url)
{
	const char *scheme_end = strstr(url, "://"), *host, *at, *q;
	char buf[256];

	host = scheme_end ? scheme_end + 3 : url;
	at = strchr(host, '@');
	q = host + strcspn(host, "?#");
	if (at && at < q)
		host = at + 1;
	snprintf(buf, sizeof buf, "%.*s%.*s", (int)(scheme_end ? scheme_end + 3 - url : 0), url,
		 (int)(q - host > 200 ? 200 : q - host), host);
	return xstrdup(buf);
}

static void target_names(struct notify *n, const struct delivery *d, char *name, size_t size,
			 const char **where)
{
	snprintf(name, size, "%s %zu", d->kind == WEBHOOK ? "webhook" : "email", d->target + 1);
	*where = d->kind == WEBHOOK ? n->where_hook[d->target] : n->where_mail[d->target];
}

/* ---- the queue (under n->mu) --------------------------------------------- */

static void log_drops(struct notify *n)
{
	time_t t = time(NULL);

	if (n->dropped == n->drop_logged_count || t - n->drop_logged < DROP_LOG_SECS)
		return;
	fprintf(stderr, "gflowd: notifications: the queue is full (%d waiting): dropped %llu of the oldest "
		"(%llu in all)\n", QUEUE_MAX, n->dropped - n->drop_logged_count, n->dropped);
	n->drop_logged = t;
	n->drop_logged_count = n->dropped;
}

static void push_locked(struct notify *n, struct delivery *d)
{
	/* Full: the oldest delivery that is not a test request's goes. */
	while (n->queued >= QUEUE_MAX && !d->test) {
		struct delivery **pp = &n->head, *old;

		while (*pp && (*pp)->test)
			pp = &(*pp)->next;
		if (!(old = *pp))
			break;
		*pp = old->next;
		if (n->tail == old) {
			n->tail = NULL;
			for (struct delivery *x = n->head; x; x = x->next)
				n->tail = x;
		}
		n->queued--;
		n->dropped++;
		delivery_free(old);
	}
	log_drops(n);
	d->next = NULL;
	if (n->tail)
		n->tail->next = d;
	else
		n->head = d;
	n->tail = d;
	n->queued++;
	pthread_cond_signal(&n->cv);
}

static void enqueue(struct notify *n, struct delivery *d)
{
	pthread_mutex_lock(&n->mu);
	push_locked(n, d);
	pthread_mutex_unlock(&n->mu);
}

/* The first delivery due now, or NULL and *wake (0: none waits). */
static struct delivery *take_due(struct notify *n, double *wake)
{
	double t = now_mono();

	*wake = 0;
	for (struct delivery **pp = &n->head, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->next) {
		struct delivery *d = *pp;

		if (d->not_before <= t) {
			*pp = d->next;
			if (n->tail == d)
				n->tail = prev;
			n->queued--;
			return d;
		}
		if (!*wake || d->not_before < *wake)
			*wake = d->not_before;
	}
	return NULL;
}

/* ---- delivery (worker threads, without the lock) ------------------------- */

static size_t discard(char *p, size_t size, size_t nmemb, void *arg)
{
	(void)p, (void)arg;
	return size * nmemb;
}

static int abort_if_stopping(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	struct notify *n = arg;
	bool stop;

	(void)a, (void)b, (void)c, (void)d;
	pthread_mutex_lock(&n->mu);
	stop = n->stop;
	pthread_mutex_unlock(&n->mu);
	return stop;
}

/* Sockets close on exec: a runner forked meanwhile (exec.c) must not keep
 * a connection to an endpoint open for its job's life. */
static curl_socket_t open_cloexec(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	(void)arg, (void)purpose;
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

struct reader {
	const char *p;
	size_t left;
};

static size_t read_mail(char *buf, size_t size, size_t nmemb, void *arg)
{
	struct reader *r = arg;
	size_t k = size * nmemb < r->left ? size * nmemb : r->left;

	memcpy(buf, r->p, k);
	r->p += k;
	r->left -= k;
	return k;
}

/* The address of "Name <addr>", or s itself. */
static void bare_addr(const char *s, char *out, size_t size)
{
	const char *lt = strchr(s, '<');

	if (lt)
		snprintf(out, size, "<%.*s>", (int)strcspn(lt + 1, ">"), lt + 1);
	else
		snprintf(out, size, "<%s>", s);
}

/* One attempt. 0 when delivered; detail says what happened either way. */
static int deliver(struct notify *n, const struct delivery *d, char *detail, size_t size)
{
	const struct gf_config *cfg = &n->s->cfg;
	struct curl_slist *hdrs = NULL, *rcpt = NULL;
	char errbuf[CURL_ERROR_SIZE] = "", line[1024], url[2048];
	struct reader r = { d->data, strlen(d->data) };
	int timeout, rc = -1;
	CURLcode cc;
	long code = 0;
	CURL *c = n->curl.easy_init();

	if (!c) {
		snprintf(detail, size, "cannot start a transfer (libcurl)");
		return -1;
	}
	n->curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	n->curl.easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	n->curl.easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	n->curl.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, abort_if_stopping);
	n->curl.easy_setopt(c, CURLOPT_XFERINFODATA, n);
	n->curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	n->curl.easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_cloexec);
	if (d->kind == WEBHOOK) {
		const struct gf_webhook *w = &cfg->webhooks[d->target];

		timeout = w->timeout_secs;
		n->curl.easy_setopt(c, CURLOPT_URL, w->url);
		n->curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
		hdrs = n->curl.slist_append(hdrs, "Content-Type: application/json");
		hdrs = n->curl.slist_append(hdrs, "User-Agent: gflow/" GFLOW_VERSION);
		hdrs = n->curl.slist_append(hdrs, "Expect:");
		for (size_t i = 0; i < w->n_headers; i++) {
			snprintf(line, sizeof line, "%s: %s", w->header_names[i], w->header_values[i]);
			hdrs = n->curl.slist_append(hdrs, line);
		}
		n->curl.easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
		n->curl.easy_setopt(c, CURLOPT_POSTFIELDS, d->data);
		n->curl.easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(d->data));
	} else {
		const struct gf_email *m = &cfg->emails[d->target];
		const char *q = strchr(m->smtp_url, '?');

		timeout = m->timeout_secs;
		snprintf(url, sizeof url, "%.*s", (int)(q ? q - m->smtp_url : (long)strlen(m->smtp_url)),
			 m->smtp_url);
		n->curl.easy_setopt(c, CURLOPT_URL, url);
		n->curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
		if (q && !strcmp(q, "?tls=required"))
			n->curl.easy_setopt(c, CURLOPT_USE_SSL, (long)CURLUSESSL_ALL);
		else if (q)
			n->curl.easy_setopt(c, CURLOPT_USE_SSL, (long)CURLUSESSL_TRY);
		bare_addr(m->from, line, sizeof line);
		n->curl.easy_setopt(c, CURLOPT_MAIL_FROM, line);
		for (size_t i = 0; i < d->nrcpt; i++) {
			bare_addr(d->rcpt[i], line, sizeof line);
			rcpt = n->curl.slist_append(rcpt, line);
		}
		n->curl.easy_setopt(c, CURLOPT_MAIL_RCPT, rcpt);
		n->curl.easy_setopt(c, CURLOPT_READFUNCTION, read_mail);
		n->curl.easy_setopt(c, CURLOPT_READDATA, &r);
		n->curl.easy_setopt(c, CURLOPT_UPLOAD, 1L);
		n->curl.easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r.left);
	}
	n->curl.easy_setopt(c, CURLOPT_TIMEOUT, (long)timeout);
	n->curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT, (long)(timeout < 10 ? timeout : 10));
	cc = n->curl.easy_perform(c);
	n->curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	if (cc != CURLE_OK)
		snprintf(detail, size, "%s", errbuf[0] ? errbuf : n->curl.easy_strerror(cc));
	else if (d->kind == WEBHOOK && (code < 200 || code > 299))
		snprintf(detail, size, "HTTP %ld", code);
	else {
		snprintf(detail, size, d->kind == WEBHOOK ? "HTTP %ld" : "accepted (SMTP %ld)", code);
		rc = 0;
	}
	n->curl.slist_free_all(hdrs);
	n->curl.slist_free_all(rcpt);
	n->curl.easy_cleanup(c);
	return rc;
}

/* Under the lock: a test delivery's result; the request goes back to the
 * loop when it was the last. */
static void test_result(struct notify *n, struct delivery *d, int ok, const char *detail)
{
	struct result *r = &d->test->res[d->slot];

	r->ok = ok;
	snprintf(r->detail, sizeof r->detail, "%s", detail);
	if (--d->test->pending == 0) {
		d->test->done = true;
		if (write(n->pipe[1], "x", 1) < 0 && errno != EAGAIN)
			fprintf(stderr, "gflowd: notifications: %s\n", strerror(errno));
	}
}

static void *worker(void *arg)
{
	struct notify *n = arg;
	char detail[256], name[48];
	const char *where;

	pthread_mutex_lock(&n->mu);
	for (;;) {
		struct delivery *d = NULL;
		double wake;
		int max_retries;

		while (!n->stop && !(d = take_due(n, &wake))) {
			if (wake) {
				struct timespec ts;
				double left = wake - now_mono();

				clock_gettime(CLOCK_REALTIME, &ts);
				ts.tv_sec += (time_t)left;
				ts.tv_nsec += (long)((left - (double)(time_t)left) * 1e9);
				if (ts.tv_nsec >= 1000000000L)
					ts.tv_sec++, ts.tv_nsec -= 1000000000L;
				pthread_cond_timedwait(&n->cv, &n->mu, &ts);
			} else {
				pthread_cond_wait(&n->cv, &n->mu);
			}
		}
		if (n->stop) {
			delivery_free(d);
			break;
		}
		pthread_mutex_unlock(&n->mu);
		int rc = deliver(n, d, detail, sizeof detail);
		pthread_mutex_lock(&n->mu);
		d->attempt++;
		max_retries = d->kind == WEBHOOK ? n->s->cfg.webhooks[d->target].max_retries
						 : n->s->cfg.emails[d->target].max_retries;
		if (d->test) {
			/* its caller gets the result; the counts are of real events */
		} else if (rc == 0) {
			n->sent++;
		} else if (n->stop) {
			/* abandoned: the daemon is stopping */
		} else if (d->attempt <= max_retries) {
			double wait = 1.0;

			for (int i = 1; i < d->attempt && wait < BACKOFF_MAX; i++)
				wait *= 2;
			d->not_before = now_mono() + (wait < BACKOFF_MAX ? wait : BACKOFF_MAX);
			push_locked(n, d);
			continue;
		} else {
			n->failed++;
			target_names(n, d, name, sizeof name, &where);
			fprintf(stderr, "gflowd: notification %s to %s (%s) failed after %d attempt%s: %s\n", d->event,
				name, where, d->attempt, d->attempt == 1 ? "" : "s", detail);
		}
		if (d->test)
			test_result(n, d, rc == 0, detail);
		delivery_free(d);
	}
	pthread_mutex_unlock(&n->mu);
	return NULL;
}

/* ---- what goes to which target (the loop thread) -------------------------- */

static bool listed(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i], s))
			return true;
	return false;
}

/* Does a target with these events and filter_users want this? A target
 * with filter_users gets only events of the users listed: events without a
 * user (GPUs, start-up) do not reach it. */
static bool wants(char *const *events, size_t nev, char *const *users, size_t nusers, const char *event,
		  const char *user)
{
	return (!nev || listed(events, nev, event)) && (!nusers || (user && listed(users, nusers, user)));
}

static struct delivery *new_delivery(enum kind kind, size_t target, const char *event, char *data)
{
	struct delivery *d = calloc(1, sizeof *d);

	if (!d)
		abort();
	d->kind = kind;
	d->target = target;
	d->event = xstrdup(event);
	d->data = data;
	return d;
}

static struct delivery *mail_delivery(struct notify *n, size_t target, char *const *to, size_t nto,
				      const char *event, json_t *p)
{
	struct delivery *d = new_delivery(EMAIL, target, event,
					  notify_mail(n->host, ++n->msg_seq, &n->s->cfg.emails[target], to, nto, event, p));

	d->rcpt = calloc(nto ? nto : 1, sizeof *d->rcpt);
	if (!d->rcpt)
		abort();
	for (size_t i = 0; i < nto; i++)
		d->rcpt[d->nrcpt++] = xstrdup(to[i]);
	return d;
}

/* Queue event p (stolen) for every target that wants it; job mail also
 * to the job's own recipients. */
static void dispatch(struct notify *n, const char *event, const char *user, const struct job *j, json_t *p)
{
	const struct gf_config *cfg = &n->s->cfg;
	char *json = NULL;

	for (size_t i = 0; i < cfg->n_webhooks; i++) {
		const struct gf_webhook *w = &cfg->webhooks[i];

		if (!wants(w->events, w->n_events, w->filter_users, w->n_filter_users, event, user))
			continue;
		if (!json && !(json = json_dumps(p, JSON_COMPACT)))
			abort();
		enqueue(n, new_delivery(WEBHOOK, i, event, xstrdup(json)));
	}
	for (size_t i = 0; i < cfg->n_emails; i++) {
		const struct gf_email *m = &cfg->emails[i];

		if (m->n_to && wants(m->events, m->n_events, m->filter_users, m->n_filter_users, event, user))
			enqueue(n, mail_delivery(n, i, m->to, m->n_to, event, p));
	}
	if (j && jm(j)->notify_email && cfg->n_emails && gf_events_list_has(jm(j)->notify_on, event)) {
		char *list = xstrdup(jm(j)->notify_email), *save = NULL, *to[64];
		size_t nto = 0;

		for (char *a = strtok_r(list, ",", &save); a && nto < 64; a = strtok_r(NULL, ",", &save))
			to[nto++] = a;
		if (nto)
			enqueue(n, mail_delivery(n, 0, to, nto, event, p));
		free(list);
	}
	free(json);
	json_decref(p);
}

/* ---- hooks ----------------------------------------------------------------- */

int notify_check_job(struct server *s, const struct job *j, struct gf_err *e)
{
	if (jm(j)->notify_on && !jm(j)->notify_email)
		return gf_err_set(e, "'notify_on' needs 'notify_email': per-job notifications are mail");
	if (!jm(j)->notify_email)
		return 0;
	(void)s;
	if (gf_mail_check_list(jm(j)->notify_email, e) || (jm(j)->notify_on && gf_events_check_list(jm(j)->notify_on, e)))
		return -1;
	return 0;
}

bool notify_mail_transport(const struct server *s)
{
	return s->cfg.notifications_enabled && s->cfg.n_emails;
}

const char *notify_no_transport_warning(void)
{
	return "no mail transport: gflowd's config has no [[notifications.emails]] with [notifications] "
	       "enabled = true, so this job's --notify-email is kept but no mail is sent until an admin adds one";
}

static const char *job_event(int before, const struct job *j, bool updated)
{
	if (before < 0)
		return "job_submitted";
	if (before == (int)j->state)
		return updated ? "job_updated" : NULL;
	switch (j->state) {
	case JS_RUNNING:
		return "job_started";
	case JS_HOLD:
		return "job_held";
	case JS_QUEUED:
		return before == JS_HOLD ? "job_released" : NULL;
	case JS_FINISHED:
		return "job_completed";
	case JS_FAILED:
		return "job_failed";
	case JS_CANCELLED:
		return "job_cancelled";
	case JS_TIMEOUT:
		return "job_timeout";
	default:
		return NULL;
	}
}

void notify_job_event(struct server *s, const struct job *j, const char *event)
{
	json_t *o;

	if (!s->notify || !j || !event)
		return;
	o = job_to_json_only(j, NULL, (char *const *)notify_payload_job_fields);
	if (!strcmp(event, "job_idle"))
		idle_annotate(s, j, o);	/* idle_secs, idle_warned (share/idle.c) */
	dispatch(s->notify, event, j->user, j, notify_payload(s->notify->host, event, "job", o));
}

void notify_job_change(struct server *s, const struct job *j, int before_state, bool updated)
{
	notify_job_event(s, j, job_event(before_state, j, updated));
}

void notify_gpus(struct server *s)
{
	struct notify *n = s->notify;
	uint64_t idle = 0;

	if (!n)
		return;
	for (size_t g = 0; g < s->nviews; g++) {
		const struct gpu_view *v = &s->views[g];

		if (v->allowed && !v->down && !v->exclusive && !v->nshared && !v->nunmanaged && !v->nescaped &&
		    v->index >= 0 && v->index < 64)
			idle |= UINT64_C(1) << v->index;
	}
	for (int i = 0; n->gpu_seen && i < 64; i++)
		if ((idle & ~n->gpu_idle) & (UINT64_C(1) << i))
			dispatch(n, "gpu_available", NULL, NULL,
				 notify_payload(n->host, "gpu_available", "gpu", json_pack("{s:i}", "index", i)));
	n->gpu_idle = idle;
	n->gpu_seen = s->have_snap;
}

void notify_reservation(struct server *s, const char *event, const char *owner, json_t *reservation)
{
	if (!s->notify)
		return;
	dispatch(s->notify, event, owner, NULL, notify_payload(s->notify->host, event, "reservation", json_incref(reservation)));
}

void notify_online(struct server *s)
{
	if (s->notify)
		dispatch(s->notify, "scheduler_online", NULL, NULL, notify_payload(s->notify->host, "scheduler_online", NULL, NULL));
}

json_t *notify_json(struct server *s)
{
	struct notify *n = s->notify;
	json_t *o = json_pack("{s:b,s:I,s:I}", "enabled", s->cfg.notifications_enabled, "webhooks",
			      (json_int_t)s->cfg.n_webhooks, "emails", (json_int_t)s->cfg.n_emails);

	if (n) {
		pthread_mutex_lock(&n->mu);
		json_object_set_new(o, "queued", json_integer((json_int_t)n->queued));
		json_object_set_new(o, "sent", json_integer((json_int_t)n->sent));
		json_object_set_new(o, "failed", json_integer((json_int_t)n->failed));
		json_object_set_new(o, "dropped", json_integer((json_int_t)n->dropped));
		pthread_mutex_unlock(&n->mu);
	}
	return o;
}

void notify_print_status(json_t *info)
{
	json_t *o = json_object_get(info, "notifications");

	if (!json_is_object(o))
		return;
	if (!json_is_true(json_object_get(o, "enabled"))) {
		printf("  notify:    off\n");
		return;
	}
	if (!json_object_get(o, "sent")) {
		printf("  notify:    on, but no webhook or email target is configured\n");
		return;
	}
	printf("  notify:    %lld sent, %lld failed, %lld dropped, %lld queued (%lld webhook%s, %lld email "
	       "target%s)\n",
	       (long long)json_integer_value(json_object_get(o, "sent")),
	       (long long)json_integer_value(json_object_get(o, "failed")),
	       (long long)json_integer_value(json_object_get(o, "dropped")),
	       (long long)json_integer_value(json_object_get(o, "queued")),
	       (long long)json_integer_value(json_object_get(o, "webhooks")),
	       json_integer_value(json_object_get(o, "webhooks")) == 1 ? "" : "s",
	       (long long)json_integer_value(json_object_get(o, "emails")),
	       json_integer_value(json_object_get(o, "emails")) == 1 ? "" : "s");
}

/* ---- gctl notify test -------------------------------------------------------- */

static void reply_json(struct evhttp_request *req, int code, json_t *body)
{
	struct evbuffer *b = evbuffer_new();
	char *text = json_dumps(body, JSON_COMPACT);

	evbuffer_add_printf(b, "%s\n", text ? text : "{}");
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
	evhttp_send_reply(req, code, code < 300 ? "OK" : "Error", b);
	evbuffer_free(b);
	free(text);
	json_decref(body);
}

static void reply_error(struct evhttp_request *req, int code, const char *msg)
{
	reply_json(req, code, json_pack("{s:s}", "error", msg));
}

static void test_conn_closed(struct evhttp_connection *conn, void *arg)
{
	struct ntest *t = arg;

	(void)conn;
	t->req = NULL;
	t->conn = NULL;
}

/* Answer (when its caller still listens) and free a test request. */
static void test_answer(struct ntest *t, int code, const char *error)
{
	if (t->req) {
		json_t *res = json_array();

		evhttp_connection_set_closecb(t->conn, NULL, NULL);
		for (size_t i = 0; i < t->nres; i++) {
			struct result *r = &t->res[i];

			json_array_append_new(res, json_pack("{s:s,s:s,s:s,s:s}", "target", r->target, "where",
							     r->where, "result", r->ok > 0 ? "sent" : r->ok < 0 ? "skipped" : "failed",
							     "detail", r->detail));
		}
		if (error) {
			json_decref(res);
			reply_error(t->req, code, error);
		} else
			reply_json(t->req, code, json_pack("{s:s,s:o}", "event", t->event, "results", res));
	}
	free(t->res);
	free(t);
}

static void on_test_done(evutil_socket_t fd, short what, void *arg)
{
	struct notify *n = arg;
	struct ntest *done = NULL;
	char buf[64];

	(void)what;
	while (read(fd, buf, sizeof buf) > 0)
		;
	pthread_mutex_lock(&n->mu);
	for (struct ntest **pp = &n->tests; *pp;) {
		struct ntest *t = *pp;

		if (t->done) {
			*pp = t->next;
			t->next = done;
			done = t;
		} else
			pp = &t->next;
	}
	pthread_mutex_unlock(&n->mu);
	while (done) {
		struct ntest *t = done;

		done = t->next;
		test_answer(t, 200, NULL);
	}
}

void notify_api_test(struct server *s, struct evhttp_request *req, bool admin, json_t *body)
{
	struct notify *n = s->notify;
	const struct gf_config *cfg = &s->cfg;
	json_t *ev = json_object_get(body, "event"), *p, *job;
	const char *event = "job_completed", *k;
	struct ntest *t;
	struct delivery **made;
	json_t *v;
	char user[64];
	size_t i, nt = cfg->n_webhooks + cfg->n_emails;

	json_object_foreach(body, k, v) {
		if (strcmp(k, "event")) {
			char msg[160];

			snprintf(msg, sizeof msg, "unknown field '%.60s' in request", k);
			reply_error(req, 400, msg);
			return;
		}
	}
	if (ev && !json_is_null(ev)) {
		if (!json_is_string(ev) || !gf_event_known(json_string_value(ev), false)) {
			reply_error(req, 400, "'event' must be one of job_submitted, job_updated, job_started, "
					      "job_completed, job_failed, job_cancelled, job_timeout, job_held, "
					      "job_released, job_gpu_memory_exceeded, job_idle, gpu_available, reservation_created, "
					      "reservation_cancelled, "
					      "scheduler_online");
			return;
		}
		event = json_string_value(ev);
	}
	if (!admin) {
		reply_error(req, 403, "only an admin (root, the daemon's user, [daemon] admin_group) may send test "
				      "notifications");
		return;
	}
	if (!cfg->notifications_enabled) {
		reply_error(req, 409, "notifications are off: set [notifications] enabled = true in gflowd's config");
		return;
	}
	if (!n || !nt) {
		reply_error(req, 409, "no target: add [[notifications.webhooks]] or [[notifications.emails]] to "
				      "gflowd's config");
		return;
	}
	t = calloc(1, sizeof *t);
	if (!t || !(t->res = calloc(nt, sizeof *t->res)))
		abort();
	t->n = n;
	t->req = req;
	t->conn = evhttp_request_get_connection(req);
	snprintf(t->event, sizeof t->event, "%s", event);
	t->nres = nt;
	job_user_name(s->uid, user, sizeof user);
	job = json_pack("{s:i,s:s,s:s,s:s,s:b}", "id", 0, "name", "gflow-notify-test", "user", user, "state",
			"Finished", "test", true);
	p = notify_payload(n->host, event, !strncmp(event, "job_", 4) ? "job" : NULL, job);
	json_object_set_new(p, "test", json_true());
	if (strncmp(event, "job_", 4))
		json_decref(job);
	evhttp_connection_set_closecb(t->conn, test_conn_closed, t);
	made = calloc(nt, sizeof *made);
	if (!made)
		abort();
	for (i = 0; i < nt; i++) {
		struct result *r = &t->res[i];
		bool hook = i < cfg->n_webhooks;
		size_t idx = hook ? i : i - cfg->n_webhooks;

		snprintf(r->target, sizeof r->target, "%s %zu", hook ? "webhook" : "email", idx + 1);
		snprintf(r->where, sizeof r->where, "%s", hook ? n->where_hook[idx] : n->where_mail[idx]);
		if (!hook && !cfg->emails[idx].n_to) {
			r->ok = -1;
			snprintf(r->detail, sizeof r->detail, "no fixed recipients (to): used for per-job mail only");
			continue;
		}
		if (hook) {
			char *json = json_dumps(p, JSON_COMPACT);

			if (!json)
				abort();
			made[i] = new_delivery(WEBHOOK, idx, event, json);
		} else
			made[i] = mail_delivery(n, idx, cfg->emails[idx].to, cfg->emails[idx].n_to, event, p);
		made[i]->test = t;
		made[i]->slot = i;
		t->pending++;
	}
	pthread_mutex_lock(&n->mu);
	t->next = n->tests;
	n->tests = t;
	for (i = 0; i < nt; i++)
		if (made[i])
			push_locked(n, made[i]);
	if (!t->pending) {
		t->done = true;
		if (write(n->pipe[1], "x", 1) < 0 && errno != EAGAIN)
			fprintf(stderr, "gflowd: notifications: %s\n", strerror(errno));
	}
	pthread_mutex_unlock(&n->mu);
	free(made);
	json_decref(p);
}

/* ---- start and stop ------------------------------------------------------------ */

int notify_init(struct server *s, struct gf_err *e)
{
	const struct gf_config *cfg = &s->cfg;
	struct notify *n;

	if (!cfg->notifications_enabled || (!cfg->n_webhooks && !cfg->n_emails))
		return 0;
	n = calloc(1, sizeof *n);
	if (!n)
		return gf_err_set(e, "out of memory");
	if (curlapi_load(&n->curl, e)) {
		free(n);
		return -1;
	}
	n->s = s;
	pthread_mutex_init(&n->mu, NULL);
	pthread_cond_init(&n->cv, NULL);
	if (gethostname(n->host, sizeof n->host - 1) < 0 || !n->host[0])
		snprintf(n->host, sizeof n->host, "localhost");
	n->where_hook = calloc(cfg->n_webhooks + 1, sizeof *n->where_hook);
	n->where_mail = calloc(cfg->n_emails + 1, sizeof *n->where_mail);
	if (!n->where_hook || !n->where_mail)
		abort();
	for (size_t i = 0; i < cfg->n_webhooks; i++)
		n->where_hook[i] = shown_url(cfg->webhooks[i].url);
	for (size_t i = 0; i < cfg->n_emails; i++)
		n->where_mail[i] = shown_url(cfg->emails[i].smtp_url);
	s->notify = n;
	if (pipe2(n->pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		n->pipe[0] = n->pipe[1] = -1;
		return gf_err_set(e, "notifications: pipe: %s", strerror(errno));
	}
	n->pipe_ev = event_new(s->base, n->pipe[0], EV_READ | EV_PERSIST, on_test_done, n);
	event_add(n->pipe_ev, NULL);
	n->threads = calloc((size_t)cfg->notify_max_concurrent, sizeof *n->threads);
	if (!n->threads)
		abort();
	for (int i = 0; i < cfg->notify_max_concurrent; i++) {
		int rc = pthread_create(&n->threads[i], NULL, worker, n);

		if (rc)
			return gf_err_set(e, "notifications: cannot start a worker thread: %s", strerror(rc));
		n->nthreads++;
	}
	return 0;
}

void notify_close(struct server *s)
{
	struct notify *n = s->notify;

	if (!n)
		return;
	pthread_mutex_lock(&n->mu);
	n->stop = true;
	pthread_cond_broadcast(&n->cv);
	pthread_mutex_unlock(&n->mu);
	for (int i = 0; i < n->nthreads; i++)
		pthread_join(n->threads[i], NULL);
	free(n->threads);
	while (n->head) {
		struct delivery *d = n->head;

		n->head = d->next;
		delivery_free(d);
	}
	while (n->tests) {
		struct ntest *t = n->tests;

		n->tests = t->next;
		test_answer(t, 503, "gflowd is stopping: the test was not finished");
	}
	if (n->pipe_ev)
		event_free(n->pipe_ev);
	if (n->pipe[0] >= 0)
		close(n->pipe[0]), close(n->pipe[1]);
	for (size_t i = 0; i < s->cfg.n_webhooks; i++)
		free(n->where_hook[i]);
	for (size_t i = 0; i < s->cfg.n_emails; i++)
		free(n->where_mail[i]);
	free(n->where_hook);
	free(n->where_mail);
	pthread_mutex_destroy(&n->mu);
	pthread_cond_destroy(&n->cv);
	free(n);
	s->notify = NULL;
	curlapi_release();
}
