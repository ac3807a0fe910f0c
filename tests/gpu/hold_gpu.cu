// hold_gpu.cu — a real CUDA process for tests/gpu/run.sh: allocates some
// device memory on the GPUs it can see and holds it for N seconds. Asked
// for more than the GPU has, it fails the way CUDA programs do
// ("cudaErrorMemoryAllocation: out of memory"), for the OutOfMemory:GPU check.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : 60;
	size_t mb = argc > 2 ? (size_t)atoi(argv[2]) : 512;
	void *p = NULL;
	cudaError_t rc = cudaMalloc(&p, mb << 20);

	if (rc != cudaSuccess) {
		fprintf(stderr, "hold_gpu: cudaMalloc: %s: %s\n", cudaGetErrorName(rc), cudaGetErrorString(rc));
		return 1;
	}
	cudaMemset(p, 1, mb << 20);
	cudaDeviceSynchronize();
	printf("holding %zu MB for %d s\n", mb, secs);
	fflush(stdout);
	sleep(secs);
	cudaFree(p);
	return 0;
}
