/* attachwire.h — the wire of a runner's attach socket (system mode),
 * shared by gflow-runner (src/runner/attach.c) and `gjob attach`
 * (src/client/attach.c).
 *
 * Runner to viewer: one line — ATTACH_HELLO " job N" when let in, else
 * "gflow: <why>" and the connection closes — then the job's terminal
 * output as it is (a replay of its last 64 KiB first).
 * Viewer to runner: frames of a type byte, a big-endian 16-bit length and
 * that many bytes: keys typed, or a window size (rows, cols: 16-bit
 * big-endian each). Anything else closes the connection. */
#ifndef GF_ATTACHWIRE_H
#define GF_ATTACHWIRE_H

#define ATTACH_HELLO "gflow-attach 1"
#define ATTACH_FRAME_KEYS 'k'
#define ATTACH_FRAME_SIZE 'w'
#define ATTACH_FRAME_MAX 4096	/* largest payload */

#endif
