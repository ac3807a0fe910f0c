/* test_oom.c — the GPU out-of-memory message table (src/common/oom.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "oom.h"

static const char *source_of(const char *text)
{
	const struct gf_oom_pattern *p = gf_oom_find(text, strlen(text));

	return p ? p->source : NULL;
}

static void test_frameworks(void **state)
{
	(void)state;
	assert_string_equal(source_of("Traceback (most recent call last):\n  ...\n"
	    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB "
	    "(GPU 0; 79.15 GiB total capacity; 75.02 GiB already allocated)\n"), "PyTorch");
	assert_string_equal(source_of("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB\n"),
	    "PyTorch");
	assert_string_equal(source_of("tensorflow.python.framework.errors_impl.ResourceExhaustedError: "
	    "OOM when allocating tensor with shape[32,1024,1024]\n"), "TensorFlow");
	assert_string_equal(source_of("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: "
	    "Out of memory while trying to allocate 17179869184 bytes.\n"), "JAX");
	assert_string_equal(source_of("main.cu:12: cudaMalloc: cudaErrorMemoryAllocation\n"), "CUDA");
	assert_string_equal(source_of("RuntimeError: CUDA error: out of memory\n"), "CUDA");
	assert_string_equal(source_of("CUDA_ERROR_OUT_OF_MEMORY: out of memory\n"), "CUDA");
	assert_string_equal(source_of("cuBLAS error: CUBLAS_STATUS_ALLOC_FAILED\n"), "cuBLAS");
	assert_string_equal(source_of("cupy.cuda.memory.OutOfMemoryError: Out of memory allocating\n"),
	    "CuPy");
}

static void test_not_gpu_oom(void **state)
{
	(void)state;
	/* host memory and other errors are not GPU OOM */
	assert_null(source_of("MemoryError\n"));
	assert_null(source_of("Killed\n"));
	assert_null(source_of("bash: fork: Cannot allocate memory\n"));
	assert_null(source_of("RuntimeError: CUDA error: device-side assert triggered\n"));
	assert_null(source_of("cuda out of memory\n"));	/* case matters: not a library's message */
	assert_null(gf_oom_find("", 0));
}

static void test_binary_and_bounds(void **state)
{
	char buf[64];

	(void)state;
	memset(buf, 0, sizeof buf);
	memcpy(buf + 10, "CUDA out of memory", 18);	/* NUL bytes before it */
	assert_non_null(gf_oom_find(buf, sizeof buf));
	/* only n bytes are searched */
	assert_null(gf_oom_find(buf, 20));
	for (const struct gf_oom_pattern *p = gf_oom_patterns; p->text; p++)
		assert_non_null(gf_oom_find(p->text, strlen(p->text)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frameworks),
		cmocka_unit_test(test_not_gpu_oom),
		cmocka_unit_test(test_binary_and_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
