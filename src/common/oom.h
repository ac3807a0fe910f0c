/* oom.h — how a job's failure is told from its log: the table of GPU
 * out-of-memory messages (CUDA runtime and driver, PyTorch, TensorFlow,
 * JAX/XLA, cuBLAS/cuDNN, CuPy) and the reason words failures get. Pure. */
#ifndef GF_OOM_H
#define GF_OOM_H

#include <stddef.h>

/* One entry of the table: a message, and which library prints it. */
struct gf_oom_pattern {
	const char *text;	/* matched case-sensitively, anywhere in a line */
	const char *source;	/* "PyTorch", "TensorFlow", "JAX", "CUDA", … */
};

/* The table, terminated by an entry with text NULL. */
extern const struct gf_oom_pattern gf_oom_patterns[];

/* The first pattern found in the n bytes of text (a log's tail; NUL bytes
 * allowed), or NULL when none is. */
const struct gf_oom_pattern *gf_oom_find(const char *text, size_t n);

/* How many bytes of a log's end are searched. */
#define GF_OOM_TAIL_BYTES 65536

#endif
