// Loads crash_probe_library.so with dlopen (as the CUDA driver loads the injection) and runs it:
// crash_probe RUN_DIR HOW. The library is found beside this executable.
//
// HOW = malloc_crash: a thread that exists before the library is loaded (so none of the library's
// thread-locals exist on it yet) corrupts the heap once the library recorded its leak: glibc
// aborts inside free(), holding its arena lock, and cuaudit's handler runs on that thread.
// HOW = inside_malloc: the same thread crashes inside malloc itself (this program's own malloc,
// below). Any malloc or calloc on that thread from then on is a handler that allocates: in a real
// allocator it would wait for ever on the lock the crashed call holds. Here it says so and ends the
// process with status 97, so the test fails at once instead of hanging.
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "crash_probe.h"

extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);

namespace {

std::atomic<long> g_crashed_inside_malloc_tid{0};

void refuse_allocation_after_crash() {
  if (g_crashed_inside_malloc_tid.load(std::memory_order_relaxed) != syscall(SYS_gettid)) return;
  const char text[] = "crash_probe: malloc called on the thread that crashed inside malloc (a handler allocates)\n";
  ssize_t ignored = write(2, text, sizeof text - 1);
  (void)ignored;
  _exit(97);
}

}  // namespace

// Exported (ENABLE_EXPORTS): the dynamic loader's own allocations (a dlopen'ed library's
// thread-locals, a new thread's TLS) come here too. realloc and free stay the C library's.
extern "C" void* malloc(size_t bytes) {
  refuse_allocation_after_crash();
  if (bytes == kCrashInsideMalloc) {
    g_crashed_inside_malloc_tid.store(syscall(SYS_gettid), std::memory_order_relaxed);
    *static_cast<volatile int*>(nullptr) = 1;
  }
  return __libc_malloc(bytes);
}
extern "C" void* calloc(size_t count, size_t bytes) {
  refuse_allocation_after_crash();
  return __libc_calloc(count, bytes);
}

namespace {

sem_t g_go;
bool g_crash_inside_malloc = false;

void* corrupt_heap_when_told(void*) {
  while (sem_wait(&g_go) != 0) {
  }
  if (g_crash_inside_malloc) {
    void* volatile p = std::malloc(kCrashInsideMalloc);
    return p;
  }
  void* volatile p = std::malloc(4096);      // past the thread cache: freed under the arena lock
  void* volatile guard = std::malloc(4096);  // keeps p from merging into the top chunk
  std::free(p);
  std::free(p);  // "double free or corruption (!prev)": abort() inside free()
  std::free(guard);
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  g_crash_inside_malloc = argc == 3 && std::strcmp(argv[2], "inside_malloc") == 0;
  const bool malloc_crash = g_crash_inside_malloc || (argc == 3 && std::strcmp(argv[2], "malloc_crash") == 0);
  pthread_t thread;
  if (malloc_crash) {
    sem_init(&g_go, 0, 0);
    pthread_create(&thread, nullptr, corrupt_heap_when_told, nullptr);
  }
  std::string self = argv[0];
  const std::string library = self.substr(0, self.rfind('/') + 1) + "libcrash_probe_library.so";
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::fprintf(stderr, "crash_probe: %s\n", dlerror());
    return 2;
  }
  auto run = reinterpret_cast<int (*)(int, char**)>(dlsym(handle, "crash_probe_main"));
  if (!run) return 2;
  const int status = run(argc, argv);
  if (malloc_crash) {
    sem_post(&g_go);
    pthread_join(thread, nullptr);
  }
  return status;
}
