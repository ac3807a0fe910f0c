/* share.h — gctl quota and gctl reserve (share.c). */
#ifndef GF_CLIENT_SHARE_H
#define GF_CLIENT_SHARE_H

/* argv[0] is "quota" / "reserve"; return an exit status. */
int share_quota(int argc, char **argv);
int share_reserve(int argc, char **argv);

#endif
