/* cpuid.c — how long one CPUID instruction takes here: a trap to the
 * hypervisor in a virtual machine, where glibc's start-up runs 68 of them
 * (docs/design.md, "The client is linked statically, with musl"). Prints
 * microseconds per instruction, or "none" where there is no CPUID. */
#include <stdio.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

int main(void)
{
	struct timespec a, b;
	unsigned eax, ebx, ecx, edx, sink = 0;
	const int n = 2000;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < n; i++) {
		__cpuid_count(4, i & 3, eax, ebx, ecx, edx);
		sink += eax ^ ebx ^ ecx ^ edx;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.2f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n / 1e3 + (sink & 0) * 1.0);
	return 0;
}
#else
int main(void)
{
	puts("none");
	return 0;
}
#endif
