/* oom.c — the table of GPU out-of-memory messages and the search of a log's
 * tail for them (see oom.h). Documented in docs/design.md. */
#include "oom.h"

#include <string.h>

const struct gf_oom_pattern gf_oom_patterns[] = {
	/* torch.OutOfMemoryError / torch.cuda.OutOfMemoryError / RuntimeError */
	{ "CUDA out of memory", "PyTorch" },
	{ "torch.OutOfMemoryError", "PyTorch" },
	{ "torch.cuda.OutOfMemoryError", "PyTorch" },
	/* tf.errors.ResourceExhaustedError */
	{ "OOM when allocating tensor", "TensorFlow" },
	{ "ResourceExhaustedError", "TensorFlow" },
	/* jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory */
	{ "RESOURCE_EXHAUSTED: Out of memory", "JAX" },
	{ "RESOURCE_EXHAUSTED: Failed to allocate", "JAX" },
	/* the CUDA runtime and driver APIs, cuBLAS, cuDNN, CuPy, Numba */
	{ "CUDA error: out of memory", "CUDA" },
	{ "cudaErrorMemoryAllocation", "CUDA" },
	{ "CUDA_ERROR_OUT_OF_MEMORY", "CUDA" },
	{ "CUBLAS_STATUS_ALLOC_FAILED", "cuBLAS" },
	{ "CUDNN_STATUS_ALLOC_FAILED", "cuDNN" },
	{ "cupy.cuda.memory.OutOfMemoryError", "CuPy" },
	{ NULL, NULL },
};

const struct gf_oom_pattern *gf_oom_find(const char *text, size_t n)
{
	for (const struct gf_oom_pattern *p = gf_oom_patterns; p->text; p++) {
		size_t len = strlen(p->text);

		if (len <= n && memmem(text, n, p->text, len))
			return p;
	}
	return NULL;
}
