// Loads crash_probe_library.so with dlopen (as the CUDA driver loads the injection) and runs it:
// crash_probe RUN_DIR HOW. The library is found beside this executable.
//
// HOW = malloc_crash: a thread that exists before the library is loaded (so none of the library's
// thread-locals exist on it yet) corrupts the heap once the library recorded its leak: glibc
// aborts inside free(), holding its arena lock, and cuaudit's handler runs on that thread.
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

sem_t g_go;

void* corrupt_heap_when_told(void*) {
  while (sem_wait(&g_go) != 0) {
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
  const bool malloc_crash = argc == 3 && std::strcmp(argv[2], "malloc_crash") == 0;
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
