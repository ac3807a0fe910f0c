/* test_attach.c — the runner's attach socket (src/runner/attach.c) over
 * real Unix sockets: the first line and the replay of the last 64 KiB, live
 * output, frames (keys and window sizes, split anyhow), a viewer speaking
 * nonsense dropped, the cap on viewers, a viewer that never reads losing
 * output with a marker and never blocking, the socket removed at the end. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "attach.h"

struct fx {
	char dir[64], path[96];
	struct attach *a;
	char keys[256];
	size_t nkeys;
	unsigned rows, cols;
};

static void on_keys(void *ctx, const char *data, size_t n)
{
	struct fx *f = ctx;

	assert_true(f->nkeys + n <= sizeof f->keys);
	memcpy(f->keys + f->nkeys, data, n);
	f->nkeys += n;
}

static bool can_take(void *ctx)
{
	(void)ctx;
	return true;
}

static void on_size(void *ctx, unsigned rows, unsigned cols)
{
	struct fx *f = ctx;

	f->rows = rows;
	f->cols = cols;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	struct attach_hooks h = { f, on_keys, can_take, on_size };
	struct gf_err e;

	snprintf(f->dir, sizeof f->dir, "/tmp/gf-attach-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof f->path, "%s/7.sock", f->dir);
	f->a = attach_open(f->path, "7", getuid(), getgid(), "me", false, 0, &h, &e);
	assert_non_null(f->a);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	attach_close(f->a, 0);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* One turn of the runner's loop for the attach socket. */
static void pump(struct fx *f)
{
	for (int i = 0; i < 2; i++) {
		struct pollfd fds[ATTACH_MAX_FDS];
		int n = attach_pollfds(f->a, fds);

		if (poll(fds, (nfds_t)n, 5) > 0)
			attach_events(f->a, fds, n);
	}
}

static int viewer(struct fx *f)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", f->path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	pump(f);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

/* Everything the viewer can read now, pumping the runner's side as it goes
 * (malloc'd); *eof when the runner closed it. */
static char *drain(struct fx *f, int fd, size_t *len, bool *eof)
{
	size_t cap = 1 << 16;
	char *buf = malloc(cap);
	int idle = 0;

	*len = 0;
	*eof = false;
	while (idle < 3 && !*eof) {
		ssize_t n;

		if (*len == cap)
			buf = realloc(buf, cap *= 2);
		n = read(fd, buf + *len, cap - *len);
		if (n > 0) {
			*len += (size_t)n;
			idle = 0;
		} else if (n == 0)
			*eof = true;
		else {
			pump(f);
			idle++;
		}
	}
	return buf;
}

static void test_socket_is_private_and_hello_then_replay_of_last_64k(void **state)
{
	struct fx *f = *state;
	static char out[100 << 10];
	const char *hello = ATTACH_HELLO " job 7\n";
	struct stat st;
	size_t len;
	bool eof;
	char *got;
	int fd;

	assert_int_equal(stat(f->path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	for (size_t i = 0; i < sizeof out; i++)
		out[i] = (char)('a' + i % 23);
	attach_output(f->a, out, 40 << 10);
	attach_output(f->a, out + (40 << 10), sizeof out - (40 << 10));
	fd = viewer(f);
	got = drain(f, fd, &len, &eof);
	assert_false(eof);
	assert_int_equal(len, strlen(hello) + (64 << 10));
	assert_memory_equal(got, hello, strlen(hello));
	assert_memory_equal(got + strlen(hello), out + sizeof out - (64 << 10), 64 << 10);
	free(got);
	attach_output(f->a, "live", 4);
	got = drain(f, fd, &len, &eof);
	assert_int_equal(len, 4);
	assert_memory_equal(got, "live", 4);
	free(got);
	close(fd);
}

static void test_frames_keys_and_window_size_split_anyhow(void **state)
{
	struct fx *f = *state;
	const unsigned char frames[] = { 'k', 0, 3, 'l', 's', '\r', 'w', 0, 4, 0, 40, 0, 120, 'k', 0, 1, 'x' };
	size_t len;
	bool eof;
	int fd = viewer(f);

	free(drain(f, fd, &len, &eof));
	for (size_t i = 0; i < sizeof frames; i += 2) {
		assert_int_equal(write(fd, frames + i, sizeof frames - i < 2 ? 1 : 2), sizeof frames - i < 2 ? 1 : 2);
		pump(f);
	}
	assert_int_equal(f->nkeys, 4);
	assert_memory_equal(f->keys, "ls\rx", 4);
	assert_int_equal(f->rows, 40);
	assert_int_equal(f->cols, 120);
	/* Nonsense: an unknown type. The viewer is closed. */
	assert_int_equal(write(fd, "q\0\1z", 4), 4);
	pump(f);
	free(drain(f, fd, &len, &eof));
	assert_true(eof);
	close(fd);
}

static void test_at_most_eight_viewers(void **state)
{
	struct fx *f = *state;
	int fds[ATTACH_MAX_VIEWERS + 1];
	size_t len;
	bool eof;
	char *got;

	for (int i = 0; i <= ATTACH_MAX_VIEWERS; i++)
		fds[i] = viewer(f);
	got = drain(f, fds[ATTACH_MAX_VIEWERS], &len, &eof);
	assert_true(eof);
	assert_true(len > 0 && !strncmp(got, "gflow: job 7 has 8 viewers already", 34));
	free(got);
	got = drain(f, fds[0], &len, &eof);
	assert_false(eof);
	assert_true(!strncmp(got, ATTACH_HELLO, strlen(ATTACH_HELLO)));
	free(got);
	for (int i = 0; i <= ATTACH_MAX_VIEWERS; i++)
		close(fds[i]);
}

static void test_a_viewer_that_never_reads_loses_output_with_a_marker(void **state)
{
	struct fx *f = *state;
	static char chunk[64 << 10];
	size_t len, total = 0;
	bool eof;
	char *got;
	int fd = viewer(f), quick = viewer(f);

	memset(chunk, 'x', sizeof chunk);
	/* 4 MiB while one viewer reads nothing: never blocks, never fails. */
	for (int i = 0; i < 64; i++) {
		attach_output(f->a, chunk, sizeof chunk);
		free(drain(f, quick, &len, &eof));	/* the other one keeps up */
		total += len;
		assert_false(eof);
	}
	assert_true(total >= (size_t)64 * sizeof chunk);
	got = drain(f, fd, &len, &eof);
	assert_false(eof);
	assert_true(len < (size_t)64 * sizeof chunk);
	free(got);
	attach_output(f->a, "after", 5);
	got = drain(f, fd, &len, &eof);
	assert_true(len > 5);
	assert_memory_equal(got + len - 5, "after", 5);
	assert_non_null(strstr(got, "output dropped here"));
	free(got);
	close(fd);
	close(quick);
}

static void test_close_says_eof_and_removes_the_socket(void **state)
{
	struct fx *f = *state;
	size_t len;
	bool eof;
	int fd = viewer(f);

	free(drain(f, fd, &len, &eof));
	attach_output(f->a, "bye", 3);
	attach_close(f->a, 1);
	f->a = NULL;
	assert_int_equal(access(f->path, F_OK), -1);
	assert_int_equal(errno, ENOENT);
	{
		char buf[16];
		ssize_t n = read(fd, buf, sizeof buf);

		/* "bye" if it had not gone out yet, then EOF */
		if (n == 3)
			n = read(fd, buf, sizeof buf);
		assert_int_equal(n, 0);
	}
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_socket_is_private_and_hello_then_replay_of_last_64k, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_frames_keys_and_window_size_split_anyhow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_at_most_eight_viewers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_viewer_that_never_reads_loses_output_with_a_marker, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_close_says_eof_and_removes_the_socket, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
