// A library whose constructor ends the process with exit(), before libcuaudit-preload.so's own
// constructor has run: the C library's exit must still run the atexit handlers and flush stdio.
#include <cstdio>
#include <cstdlib>

static void said_at_exit() { std::printf("atexit handler ran\n"); }

__attribute__((constructor)) static void end_early() {
  std::printf("buffered output from a library constructor\n");  // stdout is a pipe: buffered
  std::atexit(said_at_exit);
  std::exit(7);
}
