// A C file the helper's flags must refuse: a read longer than the buffer
// it fills, which the C library's _FORTIFY_SOURCE checks turn into a
// warning (an error under -Werror) where the sizes are known.
#include <unistd.h>

int planted(int fd) {
	char b[4];
	if (read(fd, b, 8) != 8)
		return -1;
	return b[0];
}
