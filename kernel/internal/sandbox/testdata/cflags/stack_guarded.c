// A function with a buffer on its stack: built with the helper's flags it
// calls __stack_chk_fail when its canary is overwritten
// (-fstack-protector-strong); without them it has no canary.
#include <string.h>

void fill(char *out, size_t n);

int guarded(size_t n) {
	char b[64];
	fill(b, n);
	return b[0];
}
