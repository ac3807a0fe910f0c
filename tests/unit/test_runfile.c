/* test_runfile.c — the runner/result files, atomic writes, /proc stat fields. */
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
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runfile.h"

static int setup(void **state)
{
	char *dir = strdup("/tmp/test_runfile.XXXXXX");

	assert_non_null(mkdtemp(dir));
	*state = dir;
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", (char *)*state);
	assert_int_equal(system(cmd), 0);
	free(*state);
	return 0;
}

static void put(const char *dir, const char *name, const char *text)
{
	struct gf_err e;

	assert_int_equal(write_file_atomic(dir, name, text, strlen(text), &e), 0);
}

static void runner_round_trip(void **state)
{
	const char *dir = *state;
	struct runner_info in = { .pid = 4242, .start_ticks = 123456789012ULL, .started_at = 1700000000.25 };
	struct runner_info out;
	struct gf_err e;

	assert_int_equal(runfile_write_runner(dir, &in, &e), 0);
	assert_int_equal(runfile_read_runner(dir, &out, &e), 0);
	assert_int_equal(out.pid, 4242);
	assert_true(out.start_ticks == 123456789012ULL);
	assert_true(out.started_at == 1700000000.25);
}

static void runner_never_overwrites_a_claim(void **state)
{
	const char *dir = *state;
	struct runner_info in = { .pid = 7, .start_ticks = 1 }, out;
	char path[256];
	struct gf_err e;

	put(dir, "runner", "pid=0\n");
	assert_int_equal(runfile_write_runner(dir, &in, &e), -1);
	assert_int_equal(errno, EEXIST);
	assert_non_null(strstr(e.msg, "exists"));
	assert_int_equal(runfile_read_runner(dir, &out, &e), 0);
	assert_int_equal(out.pid, 0);
	snprintf(path, sizeof path, "%s/runner.tmp", dir);
	assert_int_equal(access(path, F_OK), -1);
}

/* Kept empty by a recycled run directory, or caught as it is written:
 * none yet (the daemon waits for it). */
static void runner_empty_or_unfinished_reads_as_none(void **state)
{
	const char *dir = *state;
	struct runner_info out = { .pid = 99 };
	struct gf_err e;

	put(dir, "runner", "");
	assert_int_equal(runfile_read_runner(dir, &out, &e), -1);
	assert_int_equal(errno, ENOENT);
	put(dir, "runner", "pid=4242\nstart_ti");
	assert_int_equal(runfile_read_runner(dir, &out, &e), -1);
	assert_int_equal(errno, ENOENT);
}

static ino_t ino_of(const char *dir, const char *name)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (lstat(path, &st))
		return 0;
	return st.st_ino;
}

/* An empty runner file, kept: written in place (the same inode), and
 * exclusively: one not empty (a claim, or zeros) is refused, untouched. */
static void runner_written_in_place_into_a_kept_one(void **state)
{
	const char *dir = *state;
	struct runner_info in = { .pid = 4242, .start_ticks = 77, .started_at = 1.5 }, out;
	char zeros[40] = { 0 };
	struct gf_err e;
	ino_t ino;

	put(dir, "runner", "");
	ino = ino_of(dir, "runner");
	assert_int_equal(runfile_write_runner(dir, &in, &e), 0);
	assert_true(ino_of(dir, "runner") == ino);
	assert_int_equal(runfile_read_runner(dir, &out, &e), 0);
	assert_int_equal(out.pid, 4242);
	assert_true(out.start_ticks == 77);
	in.pid = 7;
	assert_int_equal(runfile_write_runner(dir, &in, &e), -1);
	assert_int_equal(errno, EEXIST);
	assert_int_equal(runfile_read_runner(dir, &out, &e), 0);
	assert_int_equal(out.pid, 4242);
	assert_int_equal(write_file_atomic(dir, "runner", zeros, sizeof zeros, &e), 0);
	assert_int_equal(runfile_write_runner(dir, &in, &e), -1);
	assert_int_equal(errno, EEXIST);
	assert_int_equal(runfile_read_runner(dir, &out, &e), 0);
	assert_int_equal(out.pid, 0);
}

/* A machine that stopped before the runner file's syncs may show it with its
 * size but not its bytes (zeros): still a claim without a pid. */
static void runner_zeros_read_as_pid_0(void **state)
{
	const char *dir = *state;
	struct runner_info out = { .pid = 99 };
	struct gf_err e;
	char zeros[40] = { 0 };

	assert_int_equal(write_file_atomic(dir, "runner", zeros, sizeof zeros, &e), 0);
	assert_int_equal(runfile_read_runner(dir, &out, &e), 0);
	assert_int_equal(out.pid, 0);
}

static void runner_bad_values_rejected(void **state)
{
	const char *dir = *state;
	struct runner_info out;
	struct gf_err e;

	put(dir, "runner", "pid=12x\n");
	assert_int_equal(runfile_read_runner(dir, &out, &e), -1);
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(e.msg, "'pid'"));
	put(dir, "runner", "pid=5\nstart_ticks=-1\n");
	assert_int_equal(runfile_read_runner(dir, &out, &e), -1);
	put(dir, "runner", "pid=5\nfuture_key=whatever\nno equals sign\nstart_ticks=9\n");
	assert_int_equal(runfile_read_runner(dir, &out, &e), 0);
	assert_int_equal(out.pid, 5);
	assert_true(out.start_ticks == 9);
}

static void runner_absent_is_enoent(void **state)
{
	struct runner_info out;
	struct gf_err e;

	assert_int_equal(runfile_read_runner(*state, &out, &e), -1);
	assert_int_equal(errno, ENOENT);
}

/* A result with this exit code written to dir, and read back the same. */
static void write_and_read_back(const char *dir, int code)
{
	struct job_result in = { .exited = 1, .exit_code = code, .ended_by = "exit" }, out;
	struct gf_err e;

	assert_int_equal(runfile_write_result(dir, &in, &e), 0);
	assert_int_equal(runfile_read_result(dir, &out, &e), 0);
	assert_int_equal(out.exit_code, code);
}

/* The file at path still holds its 4 bytes, "mine". */
static void still_mine(const char *path)
{
	char text[256];
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0 && read(fd, text, sizeof text) == 4);
	assert_memory_equal(text, "mine", 4);
	close(fd);
}

/* A run directory's result.tmp, kept empty (rundir.c): the result is
 * written into it and renamed, no inode made. One that is not a plain file
 * of its own (a link, a FIFO, a second name of another file) is never
 * written through: removed and made anew. */
static void result_written_through_a_kept_tmp(void **state)
{
	const char *dir = *state;
	char path[256], target[256];
	ino_t ino;
	int fd;

	put(dir, "result.tmp", "stale words of an earlier job");
	ino = ino_of(dir, "result.tmp");
	write_and_read_back(dir, 3);
	assert_true(ino_of(dir, "result") == ino);
	assert_true(ino_of(dir, "result.tmp") == 0);
	/* a link planted there: not followed, its target untouched */
	snprintf(target, sizeof target, "%s/target", dir);
	snprintf(path, sizeof path, "%s/result.tmp", dir);
	fd = open(target, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0 && write(fd, "mine", 4) == 4);
	close(fd);
	assert_int_equal(symlink(target, path), 0);
	write_and_read_back(dir, 4);
	assert_true(ino_of(dir, "result.tmp") == 0);
	still_mine(target);
	/* a second name of another file: that file is not emptied */
	assert_int_equal(link(target, path), 0);
	write_and_read_back(dir, 5);
	still_mine(target);
	/* a FIFO: not opened for long, replaced */
	unlink(path);
	assert_int_equal(mkfifo(path, 0600), 0);
	write_and_read_back(dir, 6);
}

static void result_round_trip(void **state)
{
	const char *dir = *state;
	struct job_result in = { .exited = 0, .exit_code = 0, .signal = 9, .start = 1700000000.5,
				 .end = 1700000123.75, .ended_by = "cancel", .peak_rss_kb = 123456,
				 .memory_enforced = 1, .oom = 1 };
	struct job_result out;
	struct gf_err e;

	snprintf(in.error, sizeof in.error, "two\nlines\r");
	assert_int_equal(runfile_write_result(dir, &in, &e), 0);
	assert_int_equal(runfile_read_result(dir, &out, &e), 0);
	assert_int_equal(out.exited, 0);
	assert_int_equal(out.signal, 9);
	assert_true(out.start == 1700000000.5 && out.end == 1700000123.75);
	assert_string_equal(out.ended_by, "cancel");
	assert_int_equal(out.peak_rss_kb, 123456);
	assert_int_equal(out.memory_enforced, 1);
	assert_int_equal(out.oom, 1);
	assert_string_equal(out.error, "two lines ");
}

static void result_absent_is_enoent(void **state)
{
	struct job_result out;
	struct gf_err e;

	assert_int_equal(runfile_read_result(*state, &out, &e), -1);
	assert_int_equal(errno, ENOENT);
}

static void result_incomplete_or_bad_rejected(void **state)
{
	const char *dir = *state;
	struct job_result out;
	struct gf_err e;

	put(dir, "result", "exited=1\nexit_code=0\n");
	assert_int_equal(runfile_read_result(dir, &out, &e), -1);
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(e.msg, "ended_by"));
	put(dir, "result", "exited=1\nexit_code=zero\nended_by=exit\n");
	assert_int_equal(runfile_read_result(dir, &out, &e), -1);
	assert_non_null(strstr(e.msg, "'exit_code'"));
	/* an exit status is 0-255 (the daemon keeps it in 16 bits), a signal too */
	put(dir, "result", "exited=1\nexit_code=70000\nended_by=exit\n");
	assert_int_equal(runfile_read_result(dir, &out, &e), -1);
	assert_non_null(strstr(e.msg, "'exit_code'"));
	put(dir, "result", "exited=1\nexit_code=-1\nended_by=exit\n");
	assert_int_equal(runfile_read_result(dir, &out, &e), -1);
	put(dir, "result", "exited=0\nsignal=256\nended_by=exit\n");
	assert_int_equal(runfile_read_result(dir, &out, &e), -1);
	assert_non_null(strstr(e.msg, "'signal'"));
	put(dir, "result", "exited=1\nexit_code=255\nended_by=exit\n");
	assert_int_equal(runfile_read_result(dir, &out, &e), 0);
	assert_int_equal(out.exit_code, 255);
	put(dir, "result", "exited=1\nended_by=a-very-long-ended-by\n");
	assert_int_equal(runfile_read_result(dir, &out, &e), -1);
	put(dir, "result", "newer=1\nexited=1\nexit_code=3\nended_by=exit\n");
	assert_int_equal(runfile_read_result(dir, &out, &e), 0);
	assert_int_equal(out.exit_code, 3);
	assert_string_equal(out.error, "");
}

/* The result told on a socket (--report): whole, in pieces, or not one. */
static void report_framed_and_read_back(void **state)
{
	struct job_result in = { .exited = 1, .exit_code = 7, .start = 1700000000.25, .end = 1700000001.5,
				 .ended_by = "exit", .peak_rss_kb = 42 }, out;
	char msg[1200], buf[1201], *text = NULL;
	struct gf_err e;
	int len;

	(void)state;
	snprintf(in.error, sizeof in.error, "a\nb");
	len = runfile_report_message(&in, msg, sizeof msg);
	assert_true(len > 10 && !strncmp(msg, "result ", 7));
	for (int cut = 0; cut < len; cut++) {	/* any first piece: more to come */
		memcpy(buf, msg, (size_t)cut);
		assert_int_equal(runfile_report_whole(buf, (size_t)cut, sizeof buf, &text), 0);
	}
	memcpy(buf, msg, (size_t)len);
	assert_int_equal(runfile_report_whole(buf, (size_t)len, sizeof buf, &text), 1);
	assert_int_equal(runfile_result_parse(text, "/run/7.1", "report", &out, &e), 0);
	assert_int_equal(out.exited, 1);
	assert_int_equal(out.exit_code, 7);
	assert_true(out.start == 1700000000.25 && out.end == 1700000001.5);
	assert_string_equal(out.ended_by, "exit");
	assert_int_equal(out.peak_rss_kb, 42);
	assert_string_equal(out.error, "a b");
	/* two messages at once, or a byte more, are not one */
	memcpy(buf, msg, (size_t)len);
	memcpy(buf + len, msg, 1);
	assert_int_equal(runfile_report_whole(buf, (size_t)len + 1, sizeof buf, &text), -1);
	/* no room for it: it does not fit */
	assert_int_equal(runfile_report_message(&in, msg, 40), -1);
	assert_int_equal(errno, EINVAL);
}

static void report_garbage_refused(void **state)
{
	static const char *const bad[] = {
		"hello\n", "result\n", "result 0\n", "result -5\nx", "result 12x\n", "result 99999999999999999999\n",
		"result 5000\n", "result 01\nx", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
	};
	char buf[1201], *text;
	struct job_result out;
	struct gf_err e;

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		size_t n = strlen(bad[i]);

		memcpy(buf, bad[i], n);
		assert_int_equal(runfile_report_whole(buf, n, sizeof buf, &text), -1);
	}
	/* whole, but not a result: named as the report */
	strcpy(buf, "result 9\nexited=x\n");
	assert_int_equal(runfile_report_whole(buf, strlen(buf), sizeof buf, &text), 1);
	assert_int_equal(runfile_result_parse(text, "/run/7.1", "report", &out, &e), -1);
	assert_string_equal(e.msg, "/run/7.1/report: bad value for 'exited'");
}

static void atomic_write_replaces_and_leaves_no_tmp(void **state)
{
	const char *dir = *state;
	char path[256], buf[64];
	struct stat st;
	ssize_t n;
	int fd;

	put(dir, "f", "first version, longer\n");
	put(dir, "f", "second\n");
	snprintf(path, sizeof path, "%s/f", dir);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	assert_int_equal(n, 7);
	buf[n] = '\0';
	assert_string_equal(buf, "second\n");
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	snprintf(path, sizeof path, "%s/f.tmp", dir);
	assert_int_equal(access(path, F_OK), -1);
}

static void atomic_write_into_missing_dir_fails(void **state)
{
	struct gf_err e;
	char dir[256];

	snprintf(dir, sizeof dir, "%s/missing", (char *)*state);
	assert_int_equal(write_file_atomic(dir, "f", "x", 1, &e), -1);
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(e.msg, "missing"));
}

/* Links planted in a run directory are never followed: not at the file,
 * not at its .tmp sibling, not at the directory itself. */
static void links_are_never_followed(void **state)
{
	const char *dir = *state;
	struct job_result r = { .exited = 1, .ended_by = "exit" }, out;
	struct runner_info ri = { .pid = 7 };
	char victim[256], link[256], sub[256];
	struct stat st;
	struct gf_err e;

	snprintf(victim, sizeof victim, "%s/victim", dir);
	put(dir, "victim", "precious\n");
	/* result.tmp -> victim: the write replaces the link, the victim stays. */
	snprintf(link, sizeof link, "%s/result.tmp", dir);
	assert_int_equal(symlink(victim, link), 0);
	assert_int_equal(runfile_write_result(dir, &r, &e), 0);
	assert_int_equal(lstat(link, &st), -1);
	/* result -> victim: reading refuses the link. */
	snprintf(link, sizeof link, "%s/result", dir);
	unlink(link);
	assert_int_equal(symlink(victim, link), 0);
	assert_int_equal(runfile_read_result(dir, &out, &e), -1);
	assert_int_equal(errno, ELOOP);
	/* runner -> victim: the exclusive write fails, the victim stays. */
	snprintf(link, sizeof link, "%s/runner", dir);
	assert_int_equal(symlink(victim, link), 0);
	assert_int_equal(runfile_write_runner(dir, &ri, &e), -1);
	assert_int_equal(errno, EEXIST);
	assert_int_equal(stat(victim, &st), 0);
	assert_int_equal(st.st_size, 9);
	/* The run directory itself a link: refused. */
	snprintf(sub, sizeof sub, "%s/run.1", dir);
	assert_int_equal(symlink(dir, sub), 0);
	assert_int_equal(runfile_read_result(sub, &out, &e), -1);
	assert_int_equal(errno, ELOOP);
	assert_non_null(strstr(e.msg, "symbolic link"));
	assert_int_equal(runfile_write_runner(sub, &ri, &e), -1);
}

/* A file of a new run directory: made new, whole; never over what is
 * there, never through a link. */
static void new_file_is_made_once_and_not_through_a_link(void **state)
{
	const char *dir = *state;
	char victim[256], link[256], got[64] = "";
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	struct stat st;
	struct gf_err e;
	FILE *f;

	assert_true(dfd >= 0);
	assert_int_equal(write_file_new_at(dfd, dir, "env", "A=1\0B=2\0", 8, &e), 0);
	snprintf(link, sizeof link, "%s/env", dir);
	assert_non_null(f = fopen(link, "r"));
	assert_int_equal(fread(got, 1, sizeof got, f), 8);
	fclose(f);
	assert_memory_equal(got, "A=1\0B=2\0", 8);
	assert_int_equal(write_file_new_at(dfd, dir, "env", "C=3", 3, &e), -1);
	assert_int_equal(errno, EEXIST);
	assert_non_null(strstr(e.msg, "/env"));
	/* argv -> victim: refused, the victim stays as it was. */
	snprintf(victim, sizeof victim, "%s/victim", dir);
	put(dir, "victim", "precious\n");
	snprintf(link, sizeof link, "%s/argv", dir);
	assert_int_equal(symlink(victim, link), 0);
	assert_int_equal(write_file_new_at(dfd, dir, "argv", "x", 1, &e), -1);
	assert_int_equal(stat(victim, &st), 0);
	assert_int_equal(st.st_size, 9);
	close(dfd);
}

static void proc_fields(void **state)
{
	unsigned long long ppid, ticks, again;
	char name[16];

	(void)state;
	assert_int_equal(proc_stat_field(getpid(), 4, &ppid), 0);
	assert_int_equal((pid_t)ppid, getppid());
	assert_int_equal(proc_start_ticks(getpid(), &ticks), 0);
	assert_true(ticks > 0);
	/* A command name with spaces and parentheses must not shift fields. */
	prctl(PR_GET_NAME, name);
	prctl(PR_SET_NAME, "a) b ) (c");
	assert_int_equal(proc_stat_field(getpid(), 4, &ppid), 0);
	assert_int_equal((pid_t)ppid, getppid());
	assert_int_equal(proc_start_ticks(getpid(), &again), 0);
	assert_true(again == ticks);
	prctl(PR_SET_NAME, name);
	assert_int_equal(proc_stat_field(getpid(), 3, &ppid), -1);	/* the state letter */
	assert_int_equal(proc_stat_field(getpid(), 999, &ppid), -1);
	assert_int_equal(proc_start_ticks(0x3ffffff, &ticks), -1);	/* no such pid */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(runner_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(runner_never_overwrites_a_claim, setup, teardown),
		cmocka_unit_test_setup_teardown(runner_empty_or_unfinished_reads_as_none, setup, teardown),
		cmocka_unit_test_setup_teardown(runner_written_in_place_into_a_kept_one, setup, teardown),
		cmocka_unit_test_setup_teardown(result_written_through_a_kept_tmp, setup, teardown),
		cmocka_unit_test_setup_teardown(runner_zeros_read_as_pid_0, setup, teardown),
		cmocka_unit_test_setup_teardown(runner_bad_values_rejected, setup, teardown),
		cmocka_unit_test_setup_teardown(runner_absent_is_enoent, setup, teardown),
		cmocka_unit_test_setup_teardown(result_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(result_absent_is_enoent, setup, teardown),
		cmocka_unit_test_setup_teardown(result_incomplete_or_bad_rejected, setup, teardown),
		cmocka_unit_test(report_framed_and_read_back),
		cmocka_unit_test(report_garbage_refused),
		cmocka_unit_test_setup_teardown(atomic_write_replaces_and_leaves_no_tmp, setup, teardown),
		cmocka_unit_test_setup_teardown(atomic_write_into_missing_dir_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(links_are_never_followed, setup, teardown),
		cmocka_unit_test_setup_teardown(new_file_is_made_once_and_not_through_a_link, setup, teardown),
		cmocka_unit_test(proc_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
