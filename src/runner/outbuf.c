/* outbuf.c — a ring of bytes waiting for a non-blocking fd (struct
 * outbuf, runner.h): the job's output for a slow pane, keys for a job not
 * reading them. Allocated when first needed; what does not fit is dropped.
 * It calls no other file of the runner. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner.h"

/* Queue what fits; the rest is dropped (the log has it all). */
void outbuf_add(struct outbuf *b, const char *data, size_t n)
{
	size_t tail, first;

	if (n > b->max - b->len)
		n = b->max - b->len;
	if (!n || (!b->data && !(b->data = malloc(b->max))))
		return;
	tail = (b->head + b->len) % b->max;
	first = n < b->max - tail ? n : b->max - tail;
	memcpy(b->data + tail, data, first);
	memcpy(b->data, data + first, n - first);
	b->len += n;
}

/* Write what the fd takes now. -1 on a real error (the reader is gone). */
int outbuf_flush(struct outbuf *b, int fd)
{
	while (b->len) {
		size_t chunk = b->len < b->max - b->head ? b->len : b->max - b->head;
		ssize_t n = write(fd, b->data + b->head, chunk);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? 0 : -1;
		b->head = (b->head + (size_t)n) % b->max;
		b->len -= (size_t)n;
	}
	return 0;
}

void outbuf_free(struct outbuf *b)
{
	free(b->data);
	b->data = NULL;
	b->head = b->len = 0;
}
