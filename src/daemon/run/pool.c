/* pool.c — the standby runners waiting for a job: their sockets and pidfds
 * (s->standby_fd, s->standby_pidfd). standby.c makes them and hands them
 * starts; a runner back from the job it served (reap.c's report section)
 * joins them here. It calls nothing of the daemon's. */
#include "run.h"

#include <unistd.h>

int standby_idle(const struct server *s)
{
	int n = 0;

	for (int i = 0; i < GF_STANDBY_MAX; i++)
		n += s->standby_fd[i] >= 0;
	return n;
}

bool standby_room(const struct server *s)
{
	return s->base && standby_idle(s) < GF_STANDBY_MAX;
}

void standby_take_back(struct server *s, const struct standby_chan *c)
{
	for (int i = 0; i < GF_STANDBY_MAX; i++)
		if (s->standby_fd[i] < 0) {
			s->standby_fd[i] = c->fd;
			s->standby_pidfd[i] = c->pidfd;
			s->standby_pid[i] = c->pid;
			return;
		}
	close(c->fd);	/* it reads EOF and exits (exec_reap collects it) */
	if (c->pidfd >= 0)
		close(c->pidfd);
}
