// A C file the helper's flags must refuse: an unused variable (-Wall) and
// a comparison of signed and unsigned (-Wextra), each an error (-Werror).
#include <stddef.h>

int planted(int n, size_t m) {
	int unused;
	return n < m;
}
